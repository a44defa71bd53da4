"""A cached evaluation of a model without training: the "without training" rows of the papers' tables.

Geometry is measured on the STS-B test split. Whitening (Su et al. 2021) is fitted on the unlabeled STS sentences (every sentence of STS12-16, STS-B and
SICK, de-duplicated); those contain every evaluated sentence, so one encoding pass serves fit and test.
"""
from __future__ import annotations

import time

import numpy as np

from .. import runs
from ..config import PRECISIONS, _coerce
from ..data.corpora import unlabeled_sts
from ..data.sts import load_split
from ..encoder import POOLERS, load_encoder
from ..errors import SreError
from .geometry import geometry
from .sts import encode_pairs, evaluate_sts, evenly_spaced
from .whitening import Whitening

EVAL_DEFAULTS = {"model_name": "minilm", "pooler": "avg", "whiten": False, "whiten_dim": 0,
                 "precision": "fp32", "tasks": "sts", "max_pairs": 0}  # max_pairs: per STS subset (smoke), 0: all


def eval_config(**overrides) -> dict:
    unknown = set(overrides) - set(EVAL_DEFAULTS)
    if unknown:
        raise SreError(f"unknown evaluation parameter {sorted(unknown)[0]!r}: known are {', '.join(EVAL_DEFAULTS)}")
    cfg = {**EVAL_DEFAULTS, **{k: _coerce(k, v, type(EVAL_DEFAULTS[k])) for k, v in overrides.items()}}
    if cfg["pooler"] not in POOLERS:
        raise SreError(f"unknown pooler {cfg['pooler']!r}: choose from {', '.join(POOLERS)}")
    if cfg["precision"] not in PRECISIONS:
        raise SreError(f"unknown precision {cfg['precision']!r}: choose from {', '.join(PRECISIONS)}")
    if cfg["model_name"] == "glove":
        cfg["pooler"] = "avg"  # word-vector average: the pooler does not apply
    return cfg

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
    stsb_test = evenly_spaced(load_split("STSBenchmark", "test", data_dir), max_pairs)
    (e1, e2), = encode_pairs(remembering, [stsb_test])
    return {"sts": sts["scores"], "sts_details": sts["details"], "geometry": geometry(e1, e2, stsb_test)}


def evaluate_model(data_dir=None, force: bool = False, results_root=None, allow_stale: bool = False,
                   **overrides) -> dict:
    """STS scores and STS-B geometry of a model as it is (cached like a training run)."""
    cfg = eval_config(**overrides)
    cached = runs.lookup("eval", cfg, results_root, force=force, allow_stale=allow_stale)
    if cached is not None:
        return cached
    started = time.time()
    encoder = load_encoder(cfg["model_name"], cfg["pooler"])
    encode = raw = lambda s: encoder.encode(s, pooler=cfg["pooler"], precision=cfg["precision"])
    if cfg["whiten"]:
        corpus = unlabeled_sts(data_dir)
        table = dict(zip(corpus, raw(corpus)))  # holds every evaluated sentence: one encoding pass in all
        whitening = Whitening(cfg["whiten_dim"] or None).fit(np.stack(list(table.values())))
        encode = lambda s: whitening.transform(np.stack([table[x] if x in table else raw([x])[0] for x in s]))
    result = {"metrics": evaluate_final(encode, data_dir, cfg["tasks"], cfg["max_pairs"]),
              "wall_seconds": time.time() - started}
    return runs.save("eval", cfg, result, results_root)
