"""IFM, implicit feature modification (Robinson et al., 2021), applied to SimCSE as in BYOP's pilot study
(BYOP paper, Eq. 3): an adversarial margin m is subtracted from the positive cosine and added to every
in-batch negative cosine before /tau, making each instance harder to discriminate, and the loss is the
multi-task 1/2 (l + l_IFM).

Official IFM code (joshr17/IFM, adv_builder.py): the same perturbation of the L2-normalised logits before
/T, loss (CE + alpha * CE_adv) / (1 + alpha) with alpha = 1 and eps = 0.1 by default (`ifm_alpha`, `margin`);
`--method ifm_only` is `loss_mode=single`. Everything else is SimCSE's (simcse.py): both dropout views in one
forward, [CLS] + MLP in training at paper scale, the average pooler at cpu scale.

BYOP's Figure 2 follows alignment and uniformity "on the training data" during training: every dev
evaluation here also measures them on two dropout views of a fixed sample of training sentences (the same
sample for every margin and seed; dropout drawn from its own generator, so training is not disturbed),
with the training pooler. Figure 3's STS-B dev geometry is every method's dev metric already.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from ..evaluate.geometry import alignment, uniformity
from .common import DropoutViews, margin_info_nce, multitask_weights, require_choice, require_positive


@dataclass
class Params:
    temperature: float = 0.05
    pooler: str = "cls"             # SimCSE's pooler_type
    margin: float = 0.1             # IFM's epsilon; the BYOP paper grid-searches 0.01..0.10
    loss_mode: str = "multi-task"   # multi-task (IFM's `ifm`) | single (IFM's `ifm_only`)
    ifm_alpha: float = 1.0          # weight of the perturbed loss in the multi-task loss
    train_geometry_sentences: int = 512  # training sentences whose dropout-view geometry is tracked (0: none)


class IFM(DropoutViews):
    Params = Params
    PROBE_OVERRIDES = {"train_geometry_sentences": 16}

    @classmethod
    def validate(cls, cfg):
        super().validate(cfg)
        require_positive(cfg, "margin", "ifm_alpha")
        require_choice(cfg, "loss_mode", ["single", "multi-task"])

    def loss(self, batch):
        z1, z2 = self.views(batch)
        return margin_info_nce(z1, z2, self.cfg["temperature"], "p-n+", self.cfg["margin"],
                               self.cfg["loss_mode"], self.cfg["ifm_alpha"])

    def term_weights(self):
        return multitask_weights(self.cfg["loss_mode"], self.cfg["ifm_alpha"])

    def dev_metrics(self):
        metrics = super().dev_metrics()
        if self.cfg["train_geometry_sentences"]:
            metrics.update(self.training_geometry())
        return metrics

    @torch.no_grad()
    def training_geometry(self) -> dict:
        """Alignment of the two dropout views and uniformity of the first, on the fixed training sample."""
        if not hasattr(self, "_geometry_sample"):
            corpus = self.corpus(self.data_dir)
            picked = random.Random(0).sample(range(len(corpus)), min(len(corpus), self.cfg["train_geometry_sentences"]))
            self._geometry_sample = [corpus[i] for i in picked]
        was_training = self.training
        self.train()  # dropout on: the positives are the training views
        views = []
        with torch.random.fork_rng():  # CPU and every visible GPU
            torch.manual_seed(0)
            for start in range(0, len(self._geometry_sample), 128):
                batch = self.collate(self._geometry_sample[start:start + 128])
                views.append(torch.stack(self.views(batch)).float().cpu())
        self.train(was_training)
        z1, z2 = torch.cat(views, dim=1)
        return {"train_alignment": alignment(z1, z2), "train_uniformity": uniformity(z1)}


METHOD = IFM
