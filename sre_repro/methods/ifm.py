"""IFM, implicit feature modification (Robinson et al., 2021), applied to SimCSE as in BYOP's pilot study
(BYOP paper, Eq. 3): an adversarial margin m is subtracted from the positive cosine and added to every
in-batch negative cosine before /tau, making each instance harder to discriminate, and the loss is the
multi-task 1/2 (l + l_IFM).

Official IFM code (joshr17/IFM, adv_builder.py): the same perturbation of the L2-normalised logits before
/T, loss (CE + alpha * CE_adv) / (1 + alpha) with alpha = 1 and eps = 0.1 by default (`ifm_alpha`, `margin`);
`--method ifm_only` is `loss_mode=single`. Everything else is SimCSE's (simcse.py): both dropout views in one
forward, [CLS] + MLP in training at paper scale, the average pooler at cpu scale.
"""
from __future__ import annotations

from dataclasses import dataclass

from .common import DropoutViews, margin_info_nce, require_choice, require_positive


@dataclass
class Params:
    temperature: float = 0.05
    pooler: str = "cls"             # SimCSE's pooler_type
    margin: float = 0.1             # IFM's epsilon; the BYOP paper grid-searches 0.01..0.10
    loss_mode: str = "multi-task"   # multi-task (IFM's `ifm`) | single (IFM's `ifm_only`)
    ifm_alpha: float = 1.0          # weight of the perturbed loss in the multi-task loss


class IFM(DropoutViews):
    Params = Params

    @classmethod
    def validate(cls, cfg):
        super().validate(cfg)
        require_positive(cfg, "margin", "ifm_alpha")
        require_choice(cfg, "loss_mode", ["single", "multi-task"])

    def loss(self, batch):
        z1, z2 = self.views(batch)
        return margin_info_nce(z1, z2, self.cfg["temperature"], "p-n+", self.cfg["margin"],
                               self.cfg["loss_mode"], self.cfg["ifm_alpha"])


METHOD = IFM
