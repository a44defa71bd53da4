"""The contract every method implements, and the pieces several methods share.

A method is an nn.Module holding the encoder and its own extra modules. The trainer calls, per step:
  batch = method.collate(examples)      # batch preparation / augmentation (tokenised tensors)
  terms = method.loss(batch)            # dict of named loss terms; terms["loss"] is optimised
and evaluates `method.encoder` with the run's `eval_pooler`. Methods never import each other: what they
share lives here or in the trainer.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..data import corpora
from ..errors import SreError


@dataclass
class NoParams:
    pass


class Method(nn.Module):
    Params = NoParams          # the method's own knobs (a dataclass with defaults)
    SCALE_PRESETS: dict = {}   # scale -> overrides of common or own knobs
    contrastive = True         # needs in-batch negatives (batch_size >= 2)

    def __init__(self, cfg: dict, encoder):
        super().__init__()
        self.cfg, self.encoder = cfg, encoder

    @classmethod
    def validate(cls, cfg: dict) -> None:
        """Check the method's own knobs (raise SreError naming the key)."""

    def corpus(self, data_dir=None) -> list:
        """The training examples (sentences by default), read from the data dir."""
        return training_sentences(self.cfg, data_dir)

    def collate(self, examples: list) -> dict:
        raise NotImplementedError

    def loss(self, batch: dict) -> dict[str, torch.Tensor]:
        raise NotImplementedError


def attach_mlp(method: Method) -> None:
    """SimCSE's freshly initialised MLP on [CLS], owned by the encoder so that pooler `cls_mlp` can use it."""
    from ..encoder import MLP

    method.encoder.mlp = method.mlp = MLP(method.encoder.hidden_size)


def require_positive(cfg: dict, *keys: str) -> None:
    for key in keys:
        if cfg[key] <= 0:
            raise SreError(f"{key} must be positive, got {cfg[key]}")


def training_sentences(cfg: dict, data_dir=None) -> list[str]:
    source = cfg["train_data"]
    if source == "wiki1m":
        sents = corpora.wiki1m(data_dir)
    elif source == "wiki1m_full":
        sents = corpora.wiki1m(data_dir, full=True)
    elif source == "sts_unlabeled":
        sents = corpora.unlabeled_sts(data_dir, deduplicate=False)  # the papers' 89,192 sentences
    else:
        raise SreError(f"train_data {source!r} has no sentences for method {cfg['method']}: "
                       "use wiki1m, wiki1m_full or sts_unlabeled")
    return sents


def cosine_matrix(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """cos(a_i, b_j) for all i, j."""
    return F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).T


def info_nce(z1: torch.Tensor, z2: torch.Tensor, temperature: float, extra_negatives=None) -> torch.Tensor:
    """SimCSE's loss: CE over cos(z1_i, z2_j)/tau with the diagonal as target; one direction, no
    intra-view negatives. `extra_negatives` (bs x d, e.g. hard negatives) add columns cos(z1_i, n_j)/tau."""
    logits = cosine_matrix(z1, z2)
    if extra_negatives is not None:
        logits = torch.cat([logits, cosine_matrix(z1, extra_negatives)], dim=1)
    return F.cross_entropy(logits / temperature, torch.arange(len(z1), device=z1.device))
