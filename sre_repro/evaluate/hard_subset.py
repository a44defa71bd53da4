"""PT-BERT's hard-length subset of STS12-16 (Sec. 3.1, Table 1, Table 5c): "positive pairs with a length
difference of more than five words and negative pairs of less than two words". The paper defines neither a
positive pair nor a word, so both are parameters: by default a pair is positive when its gold score is at
least `positive_min` (2.5, the middle of the 0-5 scale) and negative when below `negative_max` (2.5), and a
word is a whitespace token. The book's sensitivity check: positives at least 4, negatives at most 1
(`negative_inclusive`). Scored as the STS tasks are ("all": Spearman over each year's kept pairs concatenated);
the average is over the five years.
"""
from __future__ import annotations

import numpy as np

from ..data.sts import StsPairs, load_task
from ..errors import SreError
from .sts import cosine, encode_pairs, evenly_spaced, spearman100

YEARS = ["STS12", "STS13", "STS14", "STS15", "STS16"]


def length_gap(a: str, b: str) -> int:
    return abs(len(a.split()) - len(b.split()))


def hard_pairs(pairs: StsPairs, positive_min: float = 2.5, negative_max: float = 2.5, negative_inclusive: bool = False,
               positive_gap: int = 5, negative_gap: int = 2) -> tuple[StsPairs, int, int]:
    """The pairs whose lengths disagree with their similarity: positives (gold >= positive_min) whose lengths
    differ by more than `positive_gap` words, negatives (gold < negative_max, or <= with `negative_inclusive`)
    by fewer than `negative_gap`. Returns them with the number of positives and of negatives kept."""
    if negative_max > positive_min:
        raise SreError(f"negative_max {negative_max} is above positive_min {positive_min}: a pair would be both; "
                       "set negative_max <= positive_min")
    gaps = np.array([length_gap(a, b) for a, b in zip(pairs.sent1, pairs.sent2)])
    positive = (pairs.gold >= positive_min) & (gaps > positive_gap)
    below = pairs.gold <= negative_max if negative_inclusive else pairs.gold < negative_max
    negative = below & (gaps < negative_gap)
    keep = np.flatnonzero(positive | negative)
    chosen = StsPairs([pairs.sent1[i] for i in keep], [pairs.sent2[i] for i in keep], pairs.gold[keep])
    return chosen, int(positive.sum()), int(negative.sum())


def hard_subsets(data_dir=None, **thresholds) -> dict[str, tuple[StsPairs, int, int]]:
    """Per year, its subsets concatenated, then filtered (`hard_pairs`)."""
    return {year: hard_pairs(StsPairs.concat(list(load_task(year, data_dir).values())), **thresholds) for year in YEARS}


def evaluate_hard_subset(encode, data_dir=None, max_pairs: int = 0, **thresholds) -> dict:
    """{"scores": {year: Spearman x 100 on its hard pairs, "avg": mean}, "n_positive": {...}, "n_negative": {...}}
    (`max_pairs`: score at most that many evenly spaced hard pairs per year, as the smoke scale does)."""
    subsets = hard_subsets(data_dir, **thresholds)
    scored = [evenly_spaced(pairs, max_pairs) for pairs, _, _ in subsets.values()]
    embedded = encode_pairs(encode, scored)
    scores = {year: spearman100(cosine(e1, e2), pairs.gold) for year, pairs, (e1, e2) in zip(subsets, scored, embedded)}
    scores["avg"] = float(np.mean([scores[y] for y in YEARS]))
    return {"scores": scores, "n_positive": {y: p for y, (_, p, _) in subsets.items()},
            "n_negative": {y: n for y, (_, _, n) in subsets.items()}}
