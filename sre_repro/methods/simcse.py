"""Unsupervised SimCSE (Gao et al., 2021): the same sentence twice through the encoder, dropout as the
only noise, in-batch negatives, InfoNCE with tau = 0.05.

As in princeton-nlp/SimCSE (run_unsup_example.sh, models.py): both views in ONE forward of 2*bs rows;
[CLS] through a freshly initialised Linear+Tanh MLP in training only (`mlp_only_train`), raw [CLS] at test;
one-directional loss over the bs x bs cosine matrix. Related: simcse_sup (NLI triplets).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..encoder import MLP
from .common import Method, info_nce


@dataclass
class Params:
    temperature: float = 0.05       # tau
    mlp_only_train: bool = True     # MLP on [CLS] in training only (unsup recipe); False: keep it at test too


class SimCSE(Method):
    Params = Params
    SCALE_PRESETS = {"paper": dict(eval_pooler="cls")}

    def __init__(self, cfg, encoder):
        super().__init__(cfg, encoder)
        encoder.mlp = MLP(encoder.hidden_size)
        self.mlp = encoder.mlp

    @classmethod
    def validate(cls, cfg):
        from ..errors import SreError
        if cfg["temperature"] <= 0:
            raise SreError(f"temperature must be positive, got {cfg['temperature']}")

    def collate(self, sentences):
        return self.encoder.tokenize(list(sentences) * 2, self.cfg["max_len"])

    def loss(self, batch):
        z = self.encoder.embed(batch, pooler="cls_mlp")
        z1, z2 = z.chunk(2)
        return {"loss": info_nce(z1, z2, self.cfg["temperature"])}


METHOD = SimCSE
