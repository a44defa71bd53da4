"""Chapter 01 (SimCSE): its claims, and the positive controls that show which effects this setup can detect.

The positive controls are SimCSE's own ablations with large known effects (Gao et al. 2021, Table 3, BERT-base,
STS-B dev): dropout p = 0 (no noise: both views are the same vector) and "fixed 0.1" (both views under one
dropout mask) against the default p = 0.1. An edition that cannot see an 11- or 39-point effect on STS-B dev
cannot see anything; one that sees them tells the reader the size of effect its seeds resolve.
"""
from __future__ import annotations

from .. import book
from ..claims import Claim, matched  # noqa: F401 (the notebook's chapter.matched)
from ..papers import simcse as paper

# Table 3 of SimCSE (BERT-base, STS-B dev, Spearman x 100): the rows the controls rerun
TABLE3_DEV = {"p = 0.1": 82.5, "p = 0": 71.1, "fixed 0.1": 43.6}
CONTROLS = {"p = 0": {"dropout": 0.0}, "fixed 0.1": {"fixed_mask": True}}

_UNSUP = paper.UNSUP_SIMCSE["SimCSE-BERT-base (Gao et al.)"][-1]
CLAIMS = {c.id: c for c in [
    Claim("simcse_beats_raw_cls", "unsup SimCSE beats the PLM's raw [CLS]", "superiority",
          "SimCSE - the untrained PLM's [CLS], average STS", _UNSUP - paper.WITHOUT_TRAINING["BERT-base [CLS]"][-1],
          headline=True),
    Claim("simcse_beats_best_pooling", "unsup SimCSE beats the PLM's best training-free pooling", "superiority",
          "SimCSE - the untrained PLM's best pooling, average STS",
          _UNSUP - max(paper.WITHOUT_TRAINING[row][-1] for row in paper.POOLER_ROWS.values())),
    Claim("supervised_beats_unsup", "supervised SimCSE beats unsupervised", "superiority",
          "supervised - unsupervised SimCSE, average STS, seed-matched",
          paper.SUP_SIMCSE["SimCSE-BERT-base supervised (SNLI+MNLI)"][-1] - _UNSUP),
    Claim("dropout_beats_no_dropout", "dropout noise p = 0.1 beats p = 0 (positive control)", "superiority",
          "p = 0.1 - p = 0, STS-B dev, seed-matched", TABLE3_DEV["p = 0.1"] - TABLE3_DEV["p = 0"],
          components=("dropout noise",)),
    Claim("two_masks_beat_one", "two dropout masks beat one shared mask, fixed 0.1 (positive control)", "superiority",
          "p = 0.1 - fixed 0.1, STS-B dev, seed-matched", TABLE3_DEV["p = 0.1"] - TABLE3_DEV["fixed 0.1"],
          components=("dropout noise",)),
]}


def control_runs(scale: str, seed_list: list[int], model_name: str = "", data_dir=None, force: bool = False,
                 precision: str = "") -> dict[str, list[dict]]:
    """Table 3's rows at this scale: name -> SimCSE's runs, one per seed (p = 0.1 is the chapter's own SimCSE)."""
    return {name: book.train_seeds("simcse", scale, seed_list, model_name, data_dir, force, precision=precision, **knobs)
            for name, knobs in CONTROLS.items()}


def dev_scores(group: list[dict]) -> dict[int, float]:
    """seed -> the kept checkpoint's STS-B dev score."""
    return {r["seed"]: r["metrics"]["stsb_dev_best"] for r in group}
