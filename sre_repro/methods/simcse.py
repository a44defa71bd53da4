"""Unsupervised SimCSE (Gao et al., 2021): the same sentence twice through the encoder, dropout as the
only noise, in-batch negatives, InfoNCE with tau = 0.05.

As in princeton-nlp/SimCSE (run_unsup_example.sh, models.py): both views in ONE forward of 2*bs rows;
[CLS] through a freshly initialised Linear+Tanh MLP in training only (`mlp_only_train`), raw [CLS] at test;
one-directional loss over the bs x bs cosine matrix. SimCSE's `--mlp_only_train` is our default
`eval_pooler=cls`; `eval_pooler=cls_mlp` keeps the trained MLP at test. Related: simcse_sup (NLI triplets).
"""
from __future__ import annotations

from dataclasses import dataclass

from .common import Method, attach_mlp, info_nce, require_positive


@dataclass
class Params:
    temperature: float = 0.05       # tau


class SimCSE(Method):
    Params = Params
    SCALE_PRESETS = {"paper": dict(eval_pooler="cls")}

    def __init__(self, cfg, encoder):
        super().__init__(cfg, encoder)
        attach_mlp(self)

    @classmethod
    def validate(cls, cfg):
        require_positive(cfg, "temperature")

    def collate(self, sentences):
        return self.encoder.tokenize(list(sentences) * 2, self.cfg["max_len"])

    def loss(self, batch):
        z = self.encoder.embed(batch, pooler="cls_mlp")
        z1, z2 = z.chunk(2)
        return {"loss": info_nce(z1, z2, self.cfg["temperature"])}


METHOD = SimCSE
