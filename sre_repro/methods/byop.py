"""BYOP, bootstrap your own PLM (BYOP paper, section 4.1): IFM's margin perturbation of SimCSE's cosine
matrix in the opposite direction, to boost the features the PLM already has: a margin added to the positive
(`p+`) and/or subtracted from the negatives (`n-`); the paper's grid also has `p-`, `p-n-`, `p+n-`.

- Margin: constant m (BYOPC) or dynamic (BYOPD), m_i = sim(z_i, z_i') / (N - 1) for anchor i (paper).
  The official code (myngsooo/BYOP, src/loss.py) computes diag(cos)/(N-1), detached, and subtracts the
  vector from the matrix, so it broadcasts along columns: entry (i, j) gets m_j.
  `dynamic_margin_axis=anchor` is the paper's reading, `column` the code's; both detach the margin.
- Loss: `single` (the perturbed loss only; BYOPC, BYOPD) or `multi-task` ((l + l_BYOP) / 2; BYOPC-M, BYOPD-M).
- Recipes: the defaults are the README's released recipe, which is also Table 6's BERT-base BYOPC row
  (single, `n-`, constant m = 0.01; bs 64, lr 3e-5, tau 0.05, [CLS]+MLP in training only). The code's
  argparse defaults differ (multi-task, `p-n+`, margin 10, i.e. IFM's direction with a huge margin);
  configs/byop_code_defaults.yaml spells them out. The book uses the paper's settings.
Softmax is shift-invariant per row, so `n-` with m equals `p+` with m exactly (tested); and `p-n+` is IFM.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import SreError
from .common import (PERTURBATIONS, DropoutViews, dynamic_margin, margin_info_nce, multitask_weights, require_choice,
                     require_positive)


@dataclass
class Params:
    temperature: float = 0.05
    pooler: str = "cls"                 # SimCSE's pooler_type
    perturbation: str = "n-"            # see common.PERTURBATIONS
    margin_type: str = "constant"       # constant (BYOPC) | dynamic (BYOPD)
    margin: float = 0.01                # m for constant margins (Appendix B grid: 0.01..0.1)
    dynamic_margin_axis: str = "anchor"  # anchor (paper: m_i for row i) | column (official code: m_j)
    loss_mode: str = "single"           # single | multi-task (the -M variants)
    multitask_alpha: float = 1.0        # (l + alpha * l_BYOP) / (1 + alpha); the paper's 1/2 is alpha = 1


class BYOP(DropoutViews):
    Params = Params

    @classmethod
    def validate(cls, cfg):
        super().validate(cfg)
        require_positive(cfg, "multitask_alpha")
        require_choice(cfg, "perturbation", PERTURBATIONS)
        require_choice(cfg, "margin_type", ["constant", "dynamic"])
        require_choice(cfg, "dynamic_margin_axis", ["anchor", "column"])
        require_choice(cfg, "loss_mode", ["single", "multi-task"])
        if cfg["margin_type"] == "constant" and cfg["margin"] < 0:
            raise SreError(f"margin must be >= 0 (the sign is in the perturbation), got {cfg['margin']}")

    def margin(self):
        if self.cfg["margin_type"] == "constant":
            return self.cfg["margin"]
        return lambda cos: dynamic_margin(cos, self.cfg["dynamic_margin_axis"])

    def term_weights(self):
        return multitask_weights(self.cfg["loss_mode"], self.cfg["multitask_alpha"])

    def loss(self, batch):
        z1, z2 = self.views(batch)
        return margin_info_nce(z1, z2, self.cfg["temperature"], self.cfg["perturbation"], self.margin(),
                               self.cfg["loss_mode"], self.cfg["multitask_alpha"])


METHOD = BYOP
