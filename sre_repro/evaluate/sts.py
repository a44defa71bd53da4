"""STS evaluation exactly as SimCSE runs SentEval: cosine vs gold, Spearman x 100.

STS12-16 report the "all" setting (one Spearman over the concatenated subsets; SimCSE's
`results[task]['all']['spearman']['all']`); "mean" and "wmean" and the per-subset numbers are kept too.
STS-B and SICK-R are scored on their test split without training. STS-B dev is for model selection.
"""
from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

from ..data.sts import STS_TASKS, StsPairs, load_split, load_task
from ..errors import SreError

AGGREGATIONS = ["all", "mean", "wmean"]


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine exactly as SentEval's STSEval scores a pair: nan_to_num(dot(u, v) / (|u| |v|)),
    pair by pair in the embeddings' own precision, so a zero vector scores 0. (A vectorised formula rounds
    near-tied cosines differently, which moves a Spearman by up to ~0.02 on tie-heavy subsets.)"""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.array([np.nan_to_num(np.dot(u, v) / (np.linalg.norm(u) * np.linalg.norm(v)))
                         for u, v in zip(a, b)], dtype=np.float64)


def spearman100(pred: np.ndarray, gold: np.ndarray) -> float:
    return float(spearmanr(pred, gold).statistic * 100)


def resolve_tasks(tasks) -> list[str]:
    if tasks in ("sts", None):
        return list(STS_TASKS)
    names = [tasks] if isinstance(tasks, str) else list(tasks)
    for name in names:
        if name not in STS_TASKS:
            raise SreError(f"unknown task {name!r}: choose 'sts' or from {', '.join(STS_TASKS)}")
    return names


def encode_pairs(encode, pairs_list: list[StsPairs]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Encode every distinct sentence of several pair sets in one call, then split back."""
    sentences = list(dict.fromkeys(s for p in pairs_list for s in (*p.sent1, *p.sent2)))
    emb = encode(sentences)
    row = {s: i for i, s in enumerate(sentences)}
    return [(emb[[row[s] for s in p.sent1]], emb[[row[s] for s in p.sent2]]) for p in pairs_list]


def score_pairs(emb1, emb2, pairs: StsPairs) -> float:
    return spearman100(cosine(emb1, emb2), pairs.gold)


def evenly_spaced(pairs: StsPairs, max_pairs: int = 0) -> StsPairs:
    """At most `max_pairs` pairs, evenly spaced through the set (first and last included; 0: all). A fixed
    subset for quick smoke runs: the files are ordered by source or score, so the first N would be biased."""
    if not max_pairs or len(pairs) <= max_pairs:
        return pairs
    keep = np.linspace(0, len(pairs) - 1, max_pairs).round().astype(int)
    return StsPairs([pairs.sent1[i] for i in keep], [pairs.sent2[i] for i in keep], pairs.gold[keep])


def evaluate_sts(encode, tasks="sts", data_dir=None, aggregation: str = "all", max_pairs: int = 0) -> dict:
    """Scores of `encode` (list[str] -> array) on the STS tasks (`max_pairs`: evenly spaced pairs per subset).

    Returns {"scores": {task: Spearman x 100, ..., "avg": mean}, "details": {task: {subset scores,
    all, mean, wmean}}, "aggregation": ...}.
    """
    if aggregation not in AGGREGATIONS:
        raise SreError(f"unknown aggregation {aggregation!r}: choose from {', '.join(AGGREGATIONS)}")
    names = resolve_tasks(tasks)
    loaded = {t: {sub: evenly_spaced(pairs, max_pairs) for sub, pairs in load_task(t, data_dir).items()} for t in names}
    flat = [(t, sub, pairs) for t, subsets in loaded.items() for sub, pairs in subsets.items()]
    embedded = encode_pairs(encode, [p for _, _, p in flat])
    details: dict = {t: {"subsets": {}} for t in names}
    preds: dict = {t: [] for t in names}
    for (task, sub, pairs), (e1, e2) in zip(flat, embedded):
        pred = cosine(e1, e2)
        details[task]["subsets"][sub] = {"spearman": spearman100(pred, pairs.gold), "n": len(pairs)}
        preds[task].append((pred, pairs.gold))
    scores = {}
    for task in names:
        subs = details[task]["subsets"]
        sizes = np.array([v["n"] for v in subs.values()])
        vals = np.array([v["spearman"] for v in subs.values()])
        pred = np.concatenate([p for p, _ in preds[task]])
        gold = np.concatenate([g for _, g in preds[task]])
        details[task].update({"all": spearman100(pred, gold), "mean": float(vals.mean()),
                              "wmean": float((vals * sizes).sum() / sizes.sum()), "n": int(sizes.sum())})
        scores[task] = details[task][aggregation]
    scores["avg"] = float(np.mean([scores[t] for t in names]))
    return {"scores": scores, "details": details, "aggregation": aggregation}


def stsb_test(data_dir=None, max_pairs: int = 0) -> StsPairs:
    """The STS-B test pairs a run scores (`max_pairs` evenly spaced: a smoke run's; 0: all)."""
    return evenly_spaced(load_split("STSBenchmark", "test", data_dir), max_pairs)


def stsb_test_cosines(encode, data_dir=None, max_pairs: int = 0) -> np.ndarray:
    """The cosine of each of those pairs under `encode` (per-gold-level spreads and curves read them)."""
    (e1, e2), = encode_pairs(encode, [stsb_test(data_dir, max_pairs)])
    return cosine(e1, e2)


def evaluate_stsb_dev(encode, data_dir=None, pairs: StsPairs | None = None) -> tuple[float, tuple]:
    """STS-B dev Spearman x 100 (model selection) and the embeddings, reused for geometry."""
    pairs = pairs or load_split("STSBenchmark", "dev", data_dir)
    (e1, e2), = encode_pairs(encode, [pairs])
    return score_pairs(e1, e2, pairs), (e1, e2)
