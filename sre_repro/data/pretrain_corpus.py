"""The corpus for pretraining the book's own small raw BERT (the offline stand-in for bert-base-uncased).

Sources: the NLTK prose corpora (detokenised) without `movie_reviews` (it shares MR/SST's domain), the
wiki1m sample, and optionally WordNet glosses and example sentences. Every sentence that occurs in an
STS/SICK test or dev file is removed (compared after lower-casing and dropping everything but letters and
digits, so tokenisation differences cannot smuggle one in), the rest is de-duplicated the same way,
shuffled with a fixed seed, and 1% is held out for MLM accuracy. Deterministic.
"""
from __future__ import annotations

import random
import re

from ..errors import SreError
from .corpora import NLTK_PROSE_CORPORA, nltk_data, nltk_sentences, wiki1m
from .sts import STS_SUBSETS, load_split, load_sts_year

PRETRAIN_NLTK = [c for c in NLTK_PROSE_CORPORA if c != "movie_reviews"]
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def sentence_key(text: str) -> str:
    return _NON_ALNUM.sub("", text.lower())


def evaluation_sentences(data_dir=None) -> set[str]:
    """Keys of every sentence in an STS12-16 (all test), STS-B dev/test or SICK trial/test file."""
    keys = set()
    for year in STS_SUBSETS:
        for pairs in load_sts_year(year, data_dir, keep_unscored=True).values():
            keys.update(map(sentence_key, pairs.sent1 + pairs.sent2))
    for task in ("STSBenchmark", "SICKRelatedness"):
        for split in ("dev", "test"):
            pairs = load_split(task, split, data_dir)
            keys.update(map(sentence_key, pairs.sent1 + pairs.sent2))
    return keys


def wordnet_sentences(data_dir=None) -> list[str]:
    from nltk.corpus import wordnet

    with nltk_data(data_dir):
        out = []
        for synset in wordnet.all_synsets():
            out.append(synset.definition())
            out.extend(synset.examples())
        return out


SOURCES = ["nltk", "wiki1m", "wordnet"]


def build(data_dir=None, sources: tuple[str, ...] = tuple(SOURCES), heldout_fraction: float = 0.01,
          seed: int = 0, min_chars: int = 12) -> dict:
    """{"train": [...], "heldout": [...], "counts": {...}}: the filtered, de-duplicated pretraining text
    from `sources` (a subset of SOURCES)."""
    unknown = set(sources) - set(SOURCES)
    if unknown:
        raise SreError(f"unknown pretraining source {sorted(unknown)[0]!r}: choose from {', '.join(SOURCES)}")
    texts = {}
    if "nltk" in sources:
        texts.update({name: nltk_sentences(name, data_dir) for name in PRETRAIN_NLTK})
    if "wiki1m" in sources:
        texts["wiki1m_sample"] = wiki1m(data_dir)
    if "wordnet" in sources:
        texts["wordnet"] = wordnet_sentences(data_dir)
    sources = texts
    banned = evaluation_sentences(data_dir)
    seen, kept, removed = set(), [], 0
    for name in sorted(sources):
        for text in sources[name]:
            text = " ".join(text.split())
            key = sentence_key(text)
            if len(text) < min_chars or key in seen:
                continue
            seen.add(key)
            if key in banned:
                removed += 1
                continue
            kept.append(text)
    random.Random(seed).shuffle(kept)
    n_heldout = max(1, int(len(kept) * heldout_fraction))
    counts = {"raw_" + name: len(s) for name, s in sources.items()}
    counts.update({"removed_as_sts_dev_test": removed, "train": len(kept) - n_heldout, "heldout": n_heldout})
    return {"train": kept[n_heldout:], "heldout": kept[:n_heldout], "counts": counts}
