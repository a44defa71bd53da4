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


# ----- the length control: gold held fixed, the length gap varied -------------------------------------------------
# The hard subset mixes length with difficulty: its positives are long, lopsided pairs and its negatives short ones.
# The control pairs, inside each source subset of a year, every pair whose sentences differ by more than LONG_GAP
# words with an unused pair differing by fewer than SHORT_GAP words and of (nearly) the same gold score. An encoder
# that reads length gives the long-gap member the lower cosine; one that reads meaning does not care. It holds gold
# and source fixed, not the sentences' own lengths (a long-gap pair tends to have one long sentence).
LONG_GAP, SHORT_GAP, GOLD_TOLERANCE = 5, 2, 0.25


def matched_on_gold(pairs: StsPairs, long_gap: int = LONG_GAP, short_gap: int = SHORT_GAP,
                    tolerance: float = GOLD_TOLERANCE) -> list[tuple[int, int]]:
    """(long, short) indices into `pairs`: each pair whose lengths differ by more than `long_gap` words (in order
    of gold, then position) takes the unused pair differing by fewer than `short_gap` words whose gold lies
    nearest, if within `tolerance` (ties: the earlier pair). Each short pair serves once."""
    gaps = np.array([length_gap(a, b) for a, b in zip(pairs.sent1, pairs.sent2)])
    longs = np.flatnonzero(gaps > long_gap)
    shorts = list(np.flatnonzero(gaps < short_gap))
    matched = []
    for i in longs[np.argsort(pairs.gold[longs], kind="stable")]:
        if not shorts:
            break
        distance = np.abs(pairs.gold[shorts] - pairs.gold[i])
        nearest = int(np.argmin(distance))  # the first of equally near ones
        if distance[nearest] <= tolerance:
            matched.append((int(i), int(shorts.pop(nearest))))
    return matched


def length_control_pairs(data_dir=None, max_pairs: int = 0) -> dict[str, tuple[StsPairs, StsPairs]]:
    """Per year, (long-gap pairs, their gold-matched short-gap partners), matched within each source subset and
    concatenated (`max_pairs`: at most that many evenly spaced matches per year)."""
    out = {}
    for year in YEARS:
        longs, shorts = [], []
        for subset in load_task(year, data_dir).values():
            for i, j in matched_on_gold(subset):
                longs.append((subset.sent1[i], subset.sent2[i], subset.gold[i]))
                shorts.append((subset.sent1[j], subset.sent2[j], subset.gold[j]))
        out[year] = tuple(evenly_spaced(StsPairs([p[0] for p in side], [p[1] for p in side],
                                                 np.array([p[2] for p in side], dtype=float)), max_pairs)
                          for side in (longs, shorts))
    return out


def evaluate_length_control(encode, data_dir=None, max_pairs: int = 0) -> dict:
    """Per year and averaged: the Spearman (x 100) of the long-gap pairs and of their short-gap partners, the mean
    cosine of short minus long ("gap", > 0 when the longer gap scores lower at equal gold), and the "lift": the
    gap over the standard deviation of all those cosines (what share of the encoder's own spread length moves)."""
    control = length_control_pairs(data_dir, max_pairs)
    embedded = encode_pairs(encode, [side for sides in control.values() for side in sides])
    years = {}
    for n, (year, (longs, shorts)) in enumerate(control.items()):
        (l1, l2), (s1, s2) = embedded[2 * n], embedded[2 * n + 1]
        cos_long, cos_short = cosine(l1, l2), cosine(s1, s2)
        spread = float(np.concatenate([cos_long, cos_short]).std())
        gap = float(np.mean(cos_short - cos_long))
        years[year] = {"n": len(longs), "long": spearman100(cos_long, longs.gold), "short": spearman100(cos_short, shorts.gold),
                       "gap": gap, "lift": gap / spread if spread > 0 else 0.0}
    average = {key: float(np.mean([y[key] for y in years.values()])) for key in ("long", "short", "gap", "lift")}
    return {"years": years, "avg": average}
