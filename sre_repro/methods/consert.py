"""ConSERT (Yan et al., 2021), the backbone of SLT-FAI's first block: two views of each sentence made on the
embedding layer's output (feature cutoff 0.2 and token shuffle, the released unsupervised scripts'), mean
pooling, NT-Xent in both directions with intra-view negatives, tau = 0.1, the sum scaled by cl_rate = 0.15
(SLT-FAI's scripts), every dropout of the PLM at 0, trained on the unlabelled STS corpus (89,192 sentences).

As yym6472/ConSERT and its fork wangbing1416/SLT-FAI do it (shared/notes/official_code.md Sec. 2.5); the
augmentations and the loss live in sre_repro/views.py, shared with slt_fai. Both views go through ONE
forward of 2 x batch rows: with dropout off, rows do not interact, so this equals ConSERT's two forwards.
Every run also records the frequency analyses of SLT-FAI's Figures 5-7 (evaluate/frequency.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..encoder import pool
from ..views import (CONSERT_PAPER, CONSERT_RECIPE, augmented_forward, consert_views, disable_dropout,
                     nt_xent, validate_views)
from .common import FrequencyAnalysed


@dataclass
class Params:
    temperature: float = 0.1
    cl_rate: float = 0.15             # weight of the NT-Xent sum (SLT-FAI's --cl_rate; Adam ignores it alone)
    pooler: str = "avg"               # avg | avg_first_last | avg_top2
    view1: str = "feature_cutoff"     # none | shuffle | token_cutoff | feature_cutoff | dropout
    view1_rate: float = 0.2
    view2: str = "shuffle"
    view2_rate: float = 0.0           # unused by shuffle and none
    analysis_sentences: int = 10000   # sentences of the STS corpus in the frequency analyses (Figs. 5-7: 10,000)


class ConSERT(FrequencyAnalysed):
    Params = Params
    PROBE_OVERRIDES = {"analysis_sentences": 16}
    SCALE_PRESETS = {"smoke": dict(train_data="sts_unlabeled", eval_pooler="avg", analysis_sentences=24),
                     "cpu": dict(CONSERT_RECIPE, analysis_sentences=2000), "paper": CONSERT_PAPER}

    def __init__(self, cfg, encoder):
        super().__init__(cfg, encoder)
        disable_dropout(encoder.model)

    @classmethod
    def validate(cls, cfg):
        validate_views(cfg)
        super().validate(cfg)

    def loss(self, batch):
        views = consert_views(self.cfg, batch["input_ids"])
        hidden = augmented_forward(self.encoder.model, batch["attention_mask"], views, self.encoder.hidden_size,
                                   self.encoder.packs)
        z1, z2 = pool(self.cfg["pooler"], hidden, batch["attention_mask"].repeat(2, 1)).float().chunk(2)
        return {"loss": self.cfg["cl_rate"] * nt_xent(z1, z2, self.cfg["temperature"])}


METHOD = ConSERT
