"""The final evaluation every run and every "without training" row shares (evaluate/cached.py caches them).

Geometry is measured on the STS-B test split. Whitening (Su et al. 2021) is fitted on the unlabeled STS sentences (every sentence of STS12-16, STS-B and
SICK, de-duplicated); those contain every evaluated sentence, so one encoding pass serves fit and test.
"""
from __future__ import annotations

import numpy as np

from ..data.sts import load_split
from ..errors import SreError
from ..settings import POOLERS, PRECISIONS, coerce
from .geometry import geometry
from .sts import encode_pairs, evaluate_stsb_dev, evaluate_sts, evenly_spaced, stsb_test

EVAL_DEFAULTS = {"model_name": "minilm", "pooler": "avg", "whiten": False, "whiten_dim": 0,
                 "precision": "fp32", "tasks": "sts", "max_pairs": 0}  # max_pairs: per STS subset (smoke), 0: all


def eval_config(**overrides) -> dict:
    unknown = set(overrides) - set(EVAL_DEFAULTS)
    if unknown:
        raise SreError(f"unknown evaluation parameter {sorted(unknown)[0]!r}: known are {', '.join(EVAL_DEFAULTS)}")
    cfg = {**EVAL_DEFAULTS, **{k: coerce(k, v, type(EVAL_DEFAULTS[k])) for k, v in overrides.items()}}
    if cfg["pooler"] not in POOLERS:
        raise SreError(f"unknown pooler {cfg['pooler']!r}: choose from {', '.join(POOLERS)}")
    if cfg["precision"] not in PRECISIONS:
        raise SreError(f"unknown precision {cfg['precision']!r}: choose from {', '.join(PRECISIONS)}")
    if cfg["model_name"] == "glove":
        if cfg["pooler"] != "avg":
            raise SreError(f"glove averages word vectors: pooler {cfg['pooler']!r} does not apply (leave it out)")
        if cfg["precision"] != "fp32":
            raise SreError(f"glove averages word vectors in fp32: precision {cfg['precision']} does not apply (leave it out)")
    return cfg


def stsb_dev_score(encode, data_dir=None, max_pairs: int = 0) -> float:
    """STS-B dev Spearman x 100 (its evenly spaced `max_pairs`, 0: all), as training scores its checkpoints."""
    return evaluate_stsb_dev(encode, data_dir, evenly_spaced(load_split("STSBenchmark", "dev", data_dir), max_pairs))[0]


def evaluate_final(encode, data_dir=None, tasks="sts", max_pairs: int = 0) -> dict:
    """Test scores on the STS tasks and the geometry of the STS-B test split, in one encoding pass
    (the STS-B test sentences are among the evaluated ones, so the geometry costs no extra encoding).
    `max_pairs`: evenly spaced pairs per STS subset (smoke runs), 0: all."""
    table: dict = {}

    def remembering(sentences):
        missing = [s for s in dict.fromkeys(sentences) if s not in table]
        if missing:
            table.update(zip(missing, encode(missing)))
        return np.stack([table[s] for s in sentences])

    sts = evaluate_sts(remembering, tasks, data_dir, max_pairs=max_pairs)
    test = stsb_test(data_dir, max_pairs)
    (e1, e2), = encode_pairs(remembering, [test])
    return {"sts": sts["scores"], "sts_details": sts["details"], "geometry": geometry(e1, e2, test)}
