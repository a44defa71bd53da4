"""Training corpora and the other datasets the five papers use (all read from the data dir)."""
from __future__ import annotations

import json
import os
from contextlib import contextmanager

from ..errors import SreError
from .paths import data_file, resolve_data_dir
from .sts import SPLIT_FILES, STS_SUBSETS, load_split, load_sts_year

WIKI_FULL = "wiki/wiki1m_for_simcse.txt"      # SimCSE's 1M sentences (download with internet)
WIKI_SAMPLE = "wiki/wiki1m_first11913.txt"    # its first 11,913 lines, what exists offline
PAPER_UNLABELED_STS_COUNT = 89_192            # ConSERT / SLT-FAI / PaSeR report this many sentences


def dedup(sentences):
    """Order-preserving de-duplication."""
    return list(dict.fromkeys(sentences))


def unlabeled_sts(data_dir=None, deduplicate: bool = True) -> list[str]:
    """Every sentence of the STS12-16, STS-B and SICK files, without labels (ConSERT's training corpus).

    STS12-16 contribute every input line, scored or not (ConSERT reads the inputs, not the gold files).
    """
    sents = []
    for year in STS_SUBSETS:
        for pairs in load_sts_year(year, data_dir, keep_unscored=True).values():
            sents += pairs.sent1 + pairs.sent2
    for task in SPLIT_FILES:
        for split in ("train", "dev", "test"):
            pairs = load_split(task, split, data_dir)
            sents += pairs.sent1 + pairs.sent2
    return dedup(sents) if deduplicate else sents


def wiki1m(data_dir=None, full: bool = False) -> list[str]:
    """SimCSE's wiki1m sentences: the full file when asked (and present), else the offline sample."""
    path = data_file(WIKI_FULL if full else WIKI_SAMPLE, data_dir)
    return [line.strip() for line in path.read_text(encoding="utf8").splitlines() if line.strip()]


def snli_triplets(data_dir=None) -> list[tuple[str, str, str]]:
    """(premise, entailment hypothesis, contradiction hypothesis) from the SentEval SNLI dev+test files.

    Only dev/test exist offline (SimCSE trains on SNLI+MNLI train): a small stand-in for supervised SimCSE.
    For each premise the first entailment and the first contradiction are paired.
    """
    triplets = []
    for split in ("dev", "test"):
        read = lambda name: data_file(f"senteval/downstream/SNLI/{name}.{split}", data_dir).read_text(
            encoding="utf8").splitlines()
        s1, s2, labels = read("s1"), read("s2"), read("labels")
        by_premise: dict[str, dict[str, str]] = {}
        for p, h, lab in zip(s1, s2, labels):
            by_premise.setdefault(" ".join(p.split()), {}).setdefault(lab.strip(), " ".join(h.split()))
        triplets += [(p, d["entailment"], d["contradiction"]) for p, d in by_premise.items()
                     if "entailment" in d and "contradiction" in d]
    return triplets


def qqp(split: str, data_dir=None) -> list[tuple[str, str, int]]:
    """Quora Question Pairs (BiMPM split): (q1, q2, is_duplicate) for split dev or test."""
    if split not in ("dev", "test"):
        raise SreError(f"QQP split {split!r} does not exist offline: choose dev or test")
    rows = []
    for line in data_file(f"quora/{split}.txt", data_dir).read_text(encoding="utf8").splitlines():
        q1, q2, label = line.split("\t")
        rows.append((q1, q2, int(label)))
    return rows


def askubuntu_ids(split: str, data_dir=None) -> list[dict]:
    """AskUbuntu reranking ids (query, similar ids, candidate ids). The question text is NOT offline."""
    if split not in ("dev", "test"):
        raise SreError(f"AskUbuntu split {split!r}: choose dev or test")
    rows = []
    for line in data_file(f"askubuntu/{split}.txt", data_dir).read_text(encoding="utf8").splitlines():
        cols = line.split("\t")
        rows.append({"query": cols[0], "similar": cols[1].split(), "candidates": cols[2].split()})
    return rows


def bookcorpus_token_counts(data_dir=None) -> dict[str, int]:
    """Count over BookCorpus of each bert-base-uncased wordpiece (SLT-FAI's frequency labels)."""
    return json.loads(data_file("bookcorpus_token_counts/labels.json", data_dir).read_text())


@contextmanager
def nltk_data(data_dir=None):
    """Point NLTK at the data dir's nltk_data for the duration of the block."""
    import nltk

    path = str(resolve_data_dir(data_dir) / "nltk_data")
    if not os.path.isdir(path):
        raise SreError(f"{path} is missing: run `sre-repro download` or link ../shared/data")
    old = list(nltk.data.path)
    nltk.data.path[:] = [path]
    try:
        yield path
    finally:
        nltk.data.path[:] = old


NLTK_PROSE_CORPORA = ["brown", "abc", "webtext", "state_union", "inaugural", "conll2000", "treebank",
                      "movie_reviews"]


def nltk_sentences(corpus: str, data_dir=None) -> list[str]:
    """Sentences of an NLTK corpus, detokenised (TreebankWordDetokenizer)."""
    import nltk
    from nltk.tokenize.treebank import TreebankWordDetokenizer

    if corpus not in NLTK_PROSE_CORPORA:
        raise SreError(f"unknown NLTK corpus {corpus!r}: choose from {', '.join(NLTK_PROSE_CORPORA)}")
    detok = TreebankWordDetokenizer()
    with nltk_data(data_dir):
        reader = getattr(nltk.corpus, corpus)
        return [detok.detokenize(s) for s in reader.sents()]
