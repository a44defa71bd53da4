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
"""
from __future__ import annotations

from dataclasses import dataclass

from .common import DropoutViews, info_nce


@dataclass
class Params:
    temperature: float = 0.05       # tau
    pooler: str = "cls"             # SimCSE's pooler_type: cls (+MLP in training) | avg | avg_first_last | avg_top2


class SimCSE(DropoutViews):
    Params = Params

    def loss(self, batch):
        z1, z2 = self.views(batch)
        return {"loss": info_nce(z1, z2, self.cfg["temperature"])}


METHOD = SimCSE
