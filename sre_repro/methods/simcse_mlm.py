"""SimCSE + MLM (PaSeR's Table 1 row "SimCSE-BERT-base + MLM"; SimCSE's own Appendix ablation): unsupervised
SimCSE plus the masked-language-model loss on the first dropout view, L = L_InfoNCE + mlm_weight * L_MLM.

The MLM head is the PLM's pretrained one as an untied copy (masked_lm.py, shared with PaSeR); view 1's tokens
go through a separate forward with 15% of them masked (80/10/10), as PaSeR's MLM term. `mlm_weight` is 1.0,
PaSeR's weight for its own MLM term (SimCSE's paper used 0.1; PaSeR does not say which it ran).
Everything else is SimCSE (simcse.py): pooler, temperature, the one forward of 2*bs rows.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import SreError
from ..masked_lm import mlm_loss, pretrained_mlm_head
from .common import DropoutViews, info_nce


@dataclass
class Params:
    temperature: float = 0.05
    pooler: str = "cls"              # SimCSE's pooler_type (see simcse.py)
    mlm_weight: float = 1.0          # lambda of the MLM term
    mlm_probability: float = 0.15


class SimCSEMLM(DropoutViews):
    Params = Params

    def __init__(self, cfg, encoder):
        super().__init__(cfg, encoder)
        self.lm_head, self.lm_head_pretrained = pretrained_mlm_head(encoder)

    def added_modules(self):
        """SimCSE's MLP where it has one; the MLM head is the PLM's own (it trains at `lr`)."""
        return {"mlp": self.mlp} if getattr(self, "mlp", None) is not None else {}

    @classmethod
    def validate(cls, cfg):
        super().validate(cfg)
        if cfg["mlm_weight"] < 0 or not 0 < cfg["mlm_probability"] < 1:
            raise SreError(f"mlm_weight must be >= 0 and mlm_probability in (0, 1), got {cfg['mlm_weight']} and "
                           f"{cfg['mlm_probability']}")

    def term_weights(self):
        return {"loss_contrastive": 1.0, "loss_mlm": self.cfg["mlm_weight"]}

    def loss(self, batch):
        z1, z2 = self.views(batch)
        contrastive = info_nce(z1, z2, self.cfg["temperature"])
        half = len(batch["input_ids"]) // 2
        mlm = mlm_loss(self.encoder, self.lm_head, {k: v[:half] for k, v in batch.items()}, self.cfg["mlm_probability"])
        return {"loss": contrastive + self.cfg["mlm_weight"] * mlm, "loss_contrastive": contrastive, "loss_mlm": mlm}


METHOD = SimCSEMLM
