"""RankCSE-ListMLE (Liu et al., 2023), the "SOTA" base of BYOP's Table 3, with BYOP on top (single loss).

L = InfoNCE + gamma * ListMLE. With `byop=constant|dynamic` the InfoNCE term is BYOP's perturbed one
(BYOPC / BYOPD, single loss, as BYOP's section 5 says); ListMLE always ranks the unperturbed logits.

- Student scores: SimCSE's logits cos(z_i, z'_j) / tau over the batch, diagonal included (community code,
  perceptiveshawty/RankCSE, models.py).
- Teacher ranking: frozen sentence encoders trained by this book, not the paper's DiffCSE-bert-base-sts and
  unsup-SimCSE-bert-large (not available offline, and of other PLMs than the edition's). `teachers` lists
  `method:seed` runs of the same PLM and scale (default: unsupervised SimCSE with seeds 1 and 2, seeds that
  no student uses); the trainer trains each once through the ordinary loop and passes its kept weights in
  (train.trained_method). Teachers run in eval mode (no
  dropout) with their test-time pooler; with two, the scores are mixed alpha*T1 + (1-alpha)*T2 (alpha 0.33,
  community default). Only the teachers' order matters to ListMLE, so their temperature is left out.
- A teacher's similarities for a batch are kept in memory (`TEACHER_CACHE_BYTES`, least recently used
  dropped first), keyed by the teacher's kept weights file and the batch's exact token ids, so runs of one
  seed that differ only in the student's loss (Table 3's three rows) encode each batch with a teacher
  once. A teacher in eval mode is deterministic and draws no random numbers, so the values and the
  student's random stream are those of encoding again.
- ListMLE per row: ties broken by a random permutation, columns ordered by the teacher's score, then
  sum_k [log sum_{l>=k} exp(s_l) - s_k] (Plackett-Luce negative log-likelihood), mean over rows.
  Loss balance: summed over the N list positions the term is ~log N! (130-141 at N = 64) against an
  InfoNCE of 0.003-0.03 once trained, so gamma * ListMLE is nearly all of the loss. The sum is the
  Plackett-Luce likelihood the paper writes and what the community code does now (its commit 338e00d took
  the mean over positions, 3f04480 "Fix ListMLE loss reduction" went back to the sum). The book keeps the
  sum (`listmle_reduction=sum`) and shows each term's share; `mean` divides the term by N.
- Left out: the community code's Jensen-Shannon self-distillation term, which clamps after the log and so
  computes minus the entropy instead (official_code.md, 3.3); Table 3 names the ListMLE variant.
A RankCSE probe trains its teachers too (shrunk alike), so a change of the teachers' code changes its fingerprint.
Data parallel (torchrun): the InfoNCE term sees every process's rows (common.info_nce), but ListMLE ranks
each process's own batch against its teachers' scores of that batch, so N processes with batch b are not one
process with batch N*b for this method: the ranking lists are b long.
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

import torch

from ..errors import SreError
from ..settings import recipe_of, recipe_presets
from .common import (PERTURBATIONS, DropoutViews, cosine_matrix, dynamic_margin, info_nce, margin_info_nce,
                     require_choice, require_positive)

TEACHER_METHODS = ["simcse", "simcse_sup"]
TEACHER_CACHE_BYTES = 256 * 2 ** 20  # cpu: about 7 MB for Table 3's two student seeds, 10 MB for three
_teacher_cosines: OrderedDict = OrderedDict()  # (teacher weights file, batch key) -> cosine matrix
_cached_bytes = 0


@dataclass
class Params:
    temperature: float = 0.05
    pooler: str = "cls"                 # SimCSE's pooler_type
    teachers: str = "simcse:1,simcse:2"  # comma-separated method:seed runs of this book (one or two)
    teacher_alpha: float = 0.33         # weight of the first teacher when there are two
    gamma: float = 1.0                  # weight of ListMLE
    byop: str = "none"                  # none | constant (BYOPC) | dynamic (BYOPD), single loss
    perturbation: str = "n-"            # BYOP's perturbation (common.PERTURBATIONS)
    margin: float = 0.01                # BYOPC's m
    dynamic_margin_axis: str = "anchor"  # BYOPD: anchor (paper) | column (official BYOP code)
    listmle_reduction: str = "sum"      # over list positions: sum (paper, community code) | mean (its commit 338e00d)


def parse_teachers(spec: str) -> list[tuple[str, int]]:
    out = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        method, _, seed = item.partition(":")
        if method not in TEACHER_METHODS or not seed.lstrip("-").isdigit():
            raise SreError(f"teacher {item!r} is not method:seed with method one of {', '.join(TEACHER_METHODS)}: "
                           "write e.g. teachers=simcse:1,simcse:2")
        out.append((method, int(seed)))
    if not 1 <= len(out) <= 2:
        raise SreError(f"teachers={spec!r} names {len(out)} teachers: give one or two")
    return out


def list_mle(scores: torch.Tensor, teacher: torch.Tensor, reduction: str = "sum") -> torch.Tensor:
    """Mean over rows of the Plackett-Luce negative log-likelihood of the teacher's order under `scores`
    (`reduction=mean`: divided by the list length)."""
    shuffle = torch.randperm(scores.shape[1], device=scores.device)  # random tie-breaking, as the community code
    order = teacher[:, shuffle].argsort(dim=1, descending=True, stable=True)
    ranked = scores[:, shuffle].gather(1, order)
    ranked = ranked - ranked.max(dim=1, keepdim=True).values
    tails = torch.logcumsumexp(ranked.flip(1), dim=1).flip(1)  # log sum_{l >= k} exp(s_l)
    per_row = (tails - ranked).sum(1)
    return (per_row / scores.shape[1] if reduction == "mean" else per_row).mean()


def teacher_cfg(cfg: dict, method: str, seed: int) -> dict:
    """A teacher's overrides: the student's scale, PLM, data and cpu recipe."""
    keep = ("scale", "model_name", "precision", "device", "train_data")
    return {"method": method, "seed": seed, **recipe_presets(method, cfg["scale"], recipe_of(cfg)), **{k: cfg[k] for k in keep}}


class RankCSE(DropoutViews):
    Params = Params

    @classmethod
    def validate(cls, cfg):
        super().validate(cfg)
        require_positive(cfg, "gamma")
        parse_teachers(cfg["teachers"])
        if not 0 <= cfg["teacher_alpha"] <= 1:
            raise SreError(f"teacher_alpha must lie in [0, 1], got {cfg['teacher_alpha']}")
        require_choice(cfg, "byop", ["none", "constant", "dynamic"])
        require_choice(cfg, "perturbation", PERTURBATIONS)
        require_choice(cfg, "dynamic_margin_axis", ["anchor", "column"])
        require_choice(cfg, "listmle_reduction", ["sum", "mean"])
        if cfg["margin"] < 0:
            raise SreError(f"margin must be >= 0 (the sign is in the perturbation), got {cfg['margin']}")

    @classmethod
    def dependencies(cls, cfg):
        return {f"teacher {i + 1}": teacher_cfg(cfg, m, s) for i, (m, s) in enumerate(parse_teachers(cfg["teachers"]))}

    @classmethod
    def build(cls, cfg, device, data_dir=None, dependencies=None):
        method = super().build(cfg, device, data_dir)
        teachers = list(dependencies.values())
        method._teachers = teachers  # a plain list: not parameters, not in the checkpoints
        # the weights file's name holds the teacher's config, computation and PLM; its time tells a rewritten file apart
        method._teacher_keys = [f"{t.kept_file.name}:{t.kept_file.stat().st_mtime_ns}" for t in teachers]
        return method

    @torch.no_grad()
    def teacher_scores(self, batch) -> torch.Tensor:
        first = {k: v[: len(v) // 2] for k, v in batch.items()}  # one copy of each sentence: no dropout anyway
        digest = hashlib.sha256()
        for name in sorted(first):
            digest.update(f"{name}{tuple(first[name].shape)}".encode() + first[name].cpu().numpy().tobytes())
        scores = [_teacher_cosine(key, digest.hexdigest(), teacher, first)
                  for key, teacher in zip(self._teacher_keys, self._teachers)]
        if len(scores) == 1:
            return scores[0]
        return self.cfg["teacher_alpha"] * scores[0] + (1 - self.cfg["teacher_alpha"]) * scores[1]

    def loss(self, batch):
        z1, z2 = self.views(batch)
        tau = self.cfg["temperature"]
        if self.cfg["byop"] == "none":
            contrastive = info_nce(z1, z2, tau)
        else:
            margin = (self.cfg["margin"] if self.cfg["byop"] == "constant"
                      else (lambda cos: dynamic_margin(cos, self.cfg["dynamic_margin_axis"])))
            contrastive = margin_info_nce(z1, z2, tau, self.cfg["perturbation"], margin, "single")["loss"]
        ranking = list_mle(cosine_matrix(z1, z2) / tau, self.teacher_scores(batch), self.cfg["listmle_reduction"])
        return {"loss": contrastive + self.cfg["gamma"] * ranking, "loss_contrastive": contrastive,
                "loss_listmle": ranking}


    def term_weights(self):
        return {"loss_contrastive": 1.0, "loss_listmle": self.cfg["gamma"]}


def _teacher_cosine(teacher_key: str, batch_key: str, teacher, batch) -> torch.Tensor:
    global _cached_bytes
    key = (teacher_key, batch_key)
    if key in _teacher_cosines:
        _teacher_cosines.move_to_end(key)
        return _teacher_cosines[key]
    embeddings = teacher.encoder.embed(batch, pooler=teacher.cfg["eval_pooler"])
    cosines = _teacher_cosines[key] = cosine_matrix(embeddings, embeddings)
    _cached_bytes += cosines.numel() * cosines.element_size()
    while _cached_bytes > TEACHER_CACHE_BYTES:
        _, dropped = _teacher_cosines.popitem(last=False)
        _cached_bytes -= dropped.numel() * dropped.element_size()
    return cosines


METHOD = RankCSE
