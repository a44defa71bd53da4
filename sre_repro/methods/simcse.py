"""Unsupervised SimCSE (Gao et al., 2021): the same sentence twice through the encoder, dropout as the
only noise, in-batch negatives, InfoNCE with tau = 0.05.

As in princeton-nlp/SimCSE (run_unsup_example.sh, models.py): both views in ONE forward of 2*bs rows;
[CLS] through a freshly initialised Linear+Tanh MLP in training only (`mlp_only_train`), raw [CLS] at test;
one-directional loss over the bs x bs cosine matrix. SimCSE's `--mlp_only_train` is our default
`eval_pooler=cls`; `eval_pooler=cls_mlp` keeps the trained MLP at test. `pooler` is SimCSE's
`--pooler_type`: the average poolers train and test without the MLP. The `cpu` edition uses `avg`: its
stand-in PLM has no next-sentence objective, so its last-layer [CLS] state was never trained (measured:
SimCSE with [CLS] from it scores below its raw average pooling at this budget). The scaffolding is
common.DropoutViews, shared with IFM and BYOP. Related: simcse_sup.

SimCSE's Table 3 (STS-B dev, BERT-base) varies the noise: `dropout` sets every dropout of the PLM (hidden and
attention) to p (0: no noise, the two views are the same vector), and `fixed_mask` gives both views the same
dropout mask, so they are again the same vector ("fixed 0.1": one forward per sentence, used twice, which equals
two forwards under one mask). The book's positive controls (chapter 01) run both.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import SreError
from ..views import set_dropout
from .common import DropoutViews, info_nce


@dataclass
class Params:
    temperature: float = 0.05       # tau
    pooler: str = "cls"             # SimCSE's pooler_type: cls (+MLP in training) | avg | avg_first_last | avg_top2
    dropout: float | None = None    # every dropout of the PLM (Table 3's p); unset: the PLM's own (0.1)
    fixed_mask: bool = False        # the same dropout mask for both views (Table 3's "fixed 0.1")


class SimCSE(DropoutViews):
    Params = Params

    def __init__(self, cfg, encoder):
        super().__init__(cfg, encoder)
        if cfg["dropout"] is not None:
            set_dropout(encoder.model, cfg["dropout"])

    @classmethod
    def validate(cls, cfg):
        super().validate(cfg)
        if cfg["dropout"] is not None and not 0 <= cfg["dropout"] < 1:
            raise SreError(f"dropout must lie in [0, 1) (leave it unset for the PLM's own), got {cfg['dropout']}")

    def collate(self, sentences):
        return self.encoder.tokenize(list(sentences), self.cfg["max_len"]) if self.cfg["fixed_mask"] else super().collate(sentences)

    def views(self, batch):
        if self.cfg["fixed_mask"]:  # one mask per sentence, both views: the same vector twice
            z = self.encoder.embed(batch, pooler=self.train_pooler)
            return z, z
        return super().views(batch)

    def loss(self, batch):
        z1, z2 = self.views(batch)
        return {"loss": info_nce(z1, z2, self.cfg["temperature"])}


METHOD = SimCSE
