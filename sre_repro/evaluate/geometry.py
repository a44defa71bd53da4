"""Geometry of an embedding space: alignment and uniformity (Wang & Isola 2020), anisotropy.

Conventions (SimCSE §3 / Fig. 2; we use one STS-B split at a time: dev during training, test at the end): embeddings are L2-normalised; positives are STS-B pairs with gold > 4;
uniformity is over the distinct sentences of the same STS-B split, t = 2, one global average over every pair (not BYOP's
per-batch average). Anisotropy is the mean cosine over all pairs of distinct sentences, computed exactly
(the expectation that sampling random pairs estimates).
"""
from __future__ import annotations

import numpy as np
import torch

from ..data.sts import StsPairs

POSITIVE_THRESHOLD = 4.0


def _normalise(x) -> torch.Tensor:
    x = torch.as_tensor(np.asarray(x), dtype=torch.float64)
    return torch.nn.functional.normalize(x, dim=1)


def alignment(x, y, alpha: float = 2.0) -> float:
    """E ||f(x) - f(y)||^alpha over positive pairs, on normalised embeddings."""
    x, y = _normalise(x), _normalise(y)
    return float((x - y).norm(dim=1).pow(alpha).mean())


def uniformity(x, t: float = 2.0, chunk: int = 4096) -> float:
    """log E exp(-t ||f(x) - f(y)||^2) over all pairs i < j (= log of torch.pdist(...).pow(2).mul(-t).exp().mean())."""
    x = _normalise(x)
    n, total = len(x), 0.0
    for start in range(0, n, chunk):
        block = x[start:start + chunk]
        sq = (2 - 2 * block @ x.T).clamp_min(0)
        rows = torch.arange(start, start + len(block)).unsqueeze(1)
        upper = torch.arange(n).unsqueeze(0) > rows  # pairs i < j only
        total += float(torch.exp(-t * sq)[upper].sum())
    return float(np.log(total / (n * (n - 1) / 2)))


def anisotropy(x) -> float:
    """Mean cosine over all pairs of distinct rows: (||sum x_i||^2 - n) / (n (n - 1)) for unit x_i."""
    x = _normalise(x)
    n = len(x)
    s = x.sum(0)
    return float((s @ s - n) / (n * (n - 1)))


def geometry(emb1: np.ndarray, emb2: np.ndarray, pairs: StsPairs) -> dict:
    """Alignment (gold > 4 pairs), uniformity and anisotropy (distinct sentences) of embedded STS pairs."""
    positive = pairs.gold > POSITIVE_THRESHOLD
    rows = {}
    for s, e in zip(pairs.sent1 + pairs.sent2, np.concatenate([emb1, emb2])):
        rows.setdefault(s, e)
    distinct = np.stack(list(rows.values()))
    return {"alignment": alignment(emb1[positive], emb2[positive]), "uniformity": uniformity(distinct),
            "anisotropy": anisotropy(distinct), "n_positive": int(positive.sum()), "n_sentences": len(rows)}
