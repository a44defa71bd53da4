"""Semantic retrieval and reranking as PaSeR evaluates them (Sec. 4.1, Table 3): MAP and MRR@10 of cosine
rankings.

QQP retrieval: every q2 of the split is the question corpus (distinct strings), every q1 with at least one
duplicate q2 is a query, and its relevant questions are the q2s labelled duplicates of it. Offline this is the
BiMPM test split (10,000 pairs; 4,732 queries against 9,674 distinct q2s), not the paper's 400k pairs. A corpus
string equal to the query itself is left out of its ranking. `map_cutoff`: "full" (average precision over the
whole ranking) or a number (AP@n, normalised by min(n, #relevant)).

AskUbuntu reranking: each query reranks its 20 given candidates. The offline data has only the ids
(taolei87/askubuntu dev.txt/test.txt): the question text (`text_tokenized.txt.gz`) is not offline, so
`askubuntu_reranking` runs only where that file exists and otherwise says so.
"""
from __future__ import annotations

import gzip

import numpy as np

from ..data import corpora
from ..data.paths import resolve_data_dir
from ..errors import SreError


def average_precision(relevant: np.ndarray, n_relevant: int, cutoff: int | None = None) -> float:
    """AP of one ranking: `relevant` is 0/1 in rank order; the mean of precision@rank over the relevant
    ranks (within `cutoff`), divided by n_relevant (min(cutoff, n_relevant) with a cutoff)."""
    relevant = np.asarray(relevant, dtype=float)[:cutoff] if cutoff else np.asarray(relevant, dtype=float)
    if n_relevant == 0:
        return 0.0
    hits = np.cumsum(relevant)
    precision = hits / np.arange(1, len(relevant) + 1)
    return float((precision * relevant).sum() / (min(cutoff, n_relevant) if cutoff else n_relevant))


def reciprocal_rank(relevant: np.ndarray, cutoff: int = 10) -> float:
    """1 / rank of the first relevant item within the cutoff, else 0."""
    hits = np.flatnonzero(np.asarray(relevant)[:cutoff])
    return 1.0 / (hits[0] + 1) if len(hits) else 0.0


def qqp_task(split: str = "test", data_dir=None, max_pairs: int = 0) -> tuple[list[str], list[str], list[set[int]]]:
    """(queries, corpus, relevant corpus indices of each query); `max_pairs`: from that many evenly spaced pairs
    of the split only (the smoke scale's subset; 0: all)."""
    rows = corpora.qqp(split, data_dir)
    if max_pairs and max_pairs < len(rows):
        rows = [rows[i] for i in np.linspace(0, len(rows) - 1, max_pairs).astype(int)]
    corpus = list(dict.fromkeys(q2 for _, q2, _ in rows))
    index = {q: i for i, q in enumerate(corpus)}
    relevant: dict[str, set[int]] = {}
    for q1, q2, label in rows:
        if label == 1:
            relevant.setdefault(q1, set()).add(index[q2])
    queries = list(relevant)
    return queries, corpus, [relevant[q] for q in queries]


def rank_scores(query_emb: np.ndarray, corpus_emb: np.ndarray, relevant: list[set[int]], exclude: list[int | None],
                map_cutoff="full", top: int = 3, chunk: int = 512) -> dict:
    """MAP and MRR@10 (x 100) of cosine rankings, and each query's `top` corpus indices."""
    q = query_emb / np.linalg.norm(query_emb, axis=1, keepdims=True).clip(1e-12)
    c = corpus_emb / np.linalg.norm(corpus_emb, axis=1, keepdims=True).clip(1e-12)
    cutoff = None if map_cutoff == "full" else int(map_cutoff)
    aps, rrs, tops = [], [], []
    for start in range(0, len(q), chunk):
        sims = q[start:start + chunk] @ c.T
        for row, i in zip(sims, range(start, start + len(sims))):
            if exclude[i] is not None:
                row[exclude[i]] = -np.inf
            order = np.argsort(-row, kind="stable")
            if exclude[i] is not None:
                order = order[order != exclude[i]]
            hits = np.isin(order, list(relevant[i])).astype(float)
            aps.append(average_precision(hits, len(relevant[i]), cutoff))
            rrs.append(reciprocal_rank(hits, 10))
            tops.append(order[:top].tolist())
    return {"map": 100 * float(np.mean(aps)), "mrr@10": 100 * float(np.mean(rrs)), "top": tops}


def qqp_retrieval(encode, data_dir=None, split: str = "test", map_cutoff="full", top: int = 3, max_pairs: int = 0) -> dict:
    """{"map", "mrr@10", "n_queries", "n_corpus", "top": each query's top corpus indices} of `encode`
    (`max_pairs`: on that many evenly spaced pairs of the split; 0: all)."""
    if map_cutoff != "full" and (not str(map_cutoff).isdigit() or int(map_cutoff) <= 0):
        raise SreError(f"map_cutoff {map_cutoff!r}: use full or a positive number such as 100")
    queries, corpus, relevant = qqp_task(split, data_dir, max_pairs)
    embedded = encode(queries + corpus)
    position = {s: i for i, s in enumerate(corpus)}
    exclude = [position.get(q) for q in queries]
    scores = rank_scores(embedded[:len(queries)], embedded[len(queries):], relevant, exclude, map_cutoff, top)
    return {**scores, "n_queries": len(queries), "n_corpus": len(corpus), "split": split, "map_cutoff": str(map_cutoff),
            "max_pairs": max_pairs}


ASKUBUNTU_TEXT = "askubuntu/text_tokenized.txt.gz"


def askubuntu_available(data_dir=None) -> bool:
    return (resolve_data_dir(data_dir) / ASKUBUNTU_TEXT).is_file()


def askubuntu_reranking(encode, data_dir=None, split: str = "test") -> dict:
    """MAP and MRR@10 (x 100) of reranking each query's 20 candidates by cosine (queries with a similar
    question among their candidates), title and body joined as in the released file."""
    path = resolve_data_dir(data_dir) / ASKUBUNTU_TEXT
    if not path.is_file():
        raise SreError(f"AskUbuntu reranking needs the question text {path}, which is not available offline: "
                       "download text_tokenized.txt.gz from github.com/taolei87/askubuntu into that folder")
    text = {}
    with gzip.open(path, "rt", encoding="utf8") as f:
        for line in f:
            qid, title, *body = line.rstrip("\n").split("\t")
            text[qid] = " ".join([title, *body]).strip()
    items = [r for r in corpora.askubuntu_ids(split, data_dir) if set(r["similar"]) & set(r["candidates"])]
    aps, rrs = [], []
    for r in items:
        emb = encode([text[r["query"]]] + [text[c] for c in r["candidates"]])
        q, c = emb[0] / np.linalg.norm(emb[0]), emb[1:] / np.linalg.norm(emb[1:], axis=1, keepdims=True)
        order = np.argsort(-(c @ q), kind="stable")
        hits = np.array([r["candidates"][i] in r["similar"] for i in order], dtype=float)
        aps.append(average_precision(hits, int(hits.sum())))
        rrs.append(reciprocal_rank(hits, 10))
    return {"map": 100 * float(np.mean(aps)), "mrr@10": 100 * float(np.mean(rrs)), "n_queries": len(items)}
