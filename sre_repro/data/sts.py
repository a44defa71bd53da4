"""STS loaders that read exactly what SentEval (as modified by SimCSE) reads.

STS12-16: every subset, pairs with an empty gold score dropped, STS13 without SMT (licence).
STS-B and SICK-R: train/dev/test splits, scored by cosine without any training (SimCSE's rewrite).
Sentences are whitespace-split and re-joined with single spaces, as SentEval's batcher does.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass

import numpy as np

from ..errors import SreError
from .paths import data_file

STS_ROOT = "senteval/downstream/STS"
STS_SUBSETS = {
    "STS12": ["MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"],
    "STS13": ["FNWN", "headlines", "OnWN"],
    "STS14": ["deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"],
    "STS15": ["answers-forums", "answers-students", "belief", "headlines", "images"],
    "STS16": ["answer-answer", "headlines", "plagiarism", "postediting", "question-question"],
}
STS_TASKS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness"]
SPLIT_FILES = {
    "STSBenchmark": {"train": f"{STS_ROOT}/STSBenchmark/sts-train.csv",
                     "dev": f"{STS_ROOT}/STSBenchmark/sts-dev.csv",
                     "test": f"{STS_ROOT}/STSBenchmark/sts-test.csv"},
    "SICKRelatedness": {"train": "senteval/downstream/SICK/SICK_train.txt",
                        "dev": "senteval/downstream/SICK/SICK_trial.txt",
                        "test": "senteval/downstream/SICK/SICK_test_annotated.txt"},
}


@dataclass
class StsPairs:
    """Sentence pairs with gold similarity scores."""
    sent1: list[str]
    sent2: list[str]
    gold: np.ndarray

    def __len__(self) -> int:
        return len(self.gold)

    def __post_init__(self):
        if not (len(self.sent1) == len(self.sent2) == len(self.gold)):
            raise SreError("StsPairs: sent1, sent2 and gold must have the same length")

    @staticmethod
    def concat(parts: list["StsPairs"]) -> "StsPairs":
        return StsPairs([s for p in parts for s in p.sent1], [s for p in parts for s in p.sent2],
                        np.concatenate([p.gold for p in parts]))


def _norm(text: str) -> str:
    return " ".join(text.split())


def load_sts_year(task: str, data_dir=None, keep_unscored: bool = False) -> dict[str, StsPairs]:
    """Subset name -> pairs for STS12..STS16 (SentEval's STSEval.loadFile)."""
    if task not in STS_SUBSETS:
        raise SreError(f"unknown STS year {task!r}: choose one of {', '.join(STS_SUBSETS)}")
    subsets = {}
    for name in STS_SUBSETS[task]:
        folder = f"{STS_ROOT}/{task}-en-test"
        lines = data_file(f"{folder}/STS.input.{name}.txt", data_dir).read_text(encoding="utf8").splitlines()
        gold_raw = data_file(f"{folder}/STS.gs.{name}.txt", data_dir).read_text(encoding="utf8").splitlines()
        if len(lines) != len(gold_raw):
            raise SreError(f"{folder}/STS.input.{name}.txt has {len(lines)} lines but its gold file "
                           f"{len(gold_raw)}: replace both files")
        s1, s2, gold = [], [], []
        for line, g in zip(lines, gold_raw):
            if g.strip() == "" and not keep_unscored:
                continue
            a, b = line.split("\t")[:2]
            s1.append(_norm(a))
            s2.append(_norm(b))
            gold.append(float(g) if g.strip() else np.nan)
        subsets[name] = StsPairs(s1, s2, np.asarray(gold, dtype=np.float64))
    return subsets


def load_split(task: str, split: str, data_dir=None) -> StsPairs:
    """STS-B or SICK-R pairs of one split (train/dev/test)."""
    if task not in SPLIT_FILES:
        raise SreError(f"unknown split task {task!r}: choose STSBenchmark or SICKRelatedness")
    if split not in SPLIT_FILES[task]:
        raise SreError(f"unknown split {split!r} for {task}: choose train, dev or test")
    path = data_file(SPLIT_FILES[task][split], data_dir)
    s1, s2, gold = [], [], []
    with open(path, encoding="utf8") as f:
        if task == "STSBenchmark":
            for line in f:  # genre, file, year, id, score, s1, s2 (some lines carry extra source columns)
                cols = line.rstrip("\n").split("\t")
                s1.append(_norm(cols[5])); s2.append(_norm(cols[6])); gold.append(float(cols[4]))
        else:
            reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
            next(reader)  # header
            for cols in reader:
                s1.append(_norm(cols[1])); s2.append(_norm(cols[2])); gold.append(float(cols[3]))
    return StsPairs(s1, s2, np.asarray(gold, dtype=np.float64))


def load_task(task: str, data_dir=None) -> dict[str, StsPairs]:
    """What the evaluation scores for a task: STS12-16 all subsets; STS-B/SICK-R their test split."""
    if task in STS_SUBSETS:
        return load_sts_year(task, data_dir)
    if task in SPLIT_FILES:
        return {"test": load_split(task, "test", data_dir)}
    raise SreError(f"unknown task {task!r}: choose from {', '.join(STS_TASKS)} or 'sts' for all seven")
