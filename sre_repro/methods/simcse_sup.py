"""Supervised SimCSE (Gao et al., 2021): NLI (premise, entailment, contradiction) triplets; the entailment
is the positive, the contradiction a hard negative, other in-batch sentences are negatives; tau = 0.05;
[CLS] with the MLP in training and at test (SimCSE's `--pooler_type cls` without mlp_only_train).

Offline stand-in: SimCSE trains on SNLI+MNLI train (nli_for_simcse.csv, 275k triplets), which is not
available here; only the 5,864 SNLI dev/test triplets are. Results on them are a small-scale stand-in.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..data import corpora
from ..errors import SreError
from .common import Method, info_nce, require_positive, simcse_pooler, validate_simcse_pooler


@dataclass
class Params:
    temperature: float = 0.05
    pooler: str = "cls"             # SimCSE's pooler_type (see simcse.py); the cpu edition uses avg


class SupervisedSimCSE(Method):
    Params = Params
    SCALE_PRESETS = {
        "smoke": dict(train_data="snli", eval_pooler="cls_mlp"),
        "cpu": dict(train_data="snli", pooler="avg", eval_pooler="avg"),  # lr: settings.CPU_RECIPES
        "paper": dict(train_data="snli", eval_pooler="cls_mlp", lr=5e-5, batch_size=512, epochs=3),
    }

    def __init__(self, cfg, encoder):
        super().__init__(cfg, encoder)
        self.train_pooler = simcse_pooler(self)

    @classmethod
    def validate(cls, cfg):
        if cfg["train_data"] != "snli":
            raise SreError(f"simcse_sup trains on NLI triplets: set train_data=snli, not {cfg['train_data']!r}")
        require_positive(cfg, "temperature")
        validate_simcse_pooler(cfg)

    def corpus(self, data_dir=None):
        return corpora.snli_triplets(data_dir)

    def collate(self, triplets):
        anchors, positives, negatives = zip(*triplets)
        return self.encoder.tokenize([*anchors, *positives, *negatives], self.cfg["max_len"])

    def loss(self, batch):
        z1, z2, z3 = self.encoder.embed(batch, pooler=self.train_pooler).chunk(3)
        return {"loss": info_nce(z1, z2, self.cfg["temperature"], extra_negatives=z3)}


METHOD = SupervisedSimCSE
