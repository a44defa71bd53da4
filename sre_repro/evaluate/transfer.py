"""SentEval's seven transfer tasks with SentEval's protocol, on scikit-learn (SentEval's `usepytorch=False`
path: LogisticRegression, C in 2^-2 .. 2^3, chosen on validation data; seed 1111).

SentEval built `LogisticRegression(C=reg, random_state=seed)` with the scikit-learn defaults of its day (before
0.22): the liblinear solver, one-vs-rest for TREC's six classes. That is `solver="liblinear"` here, the default.
Today's default, lbfgs (`solver="lbfgs"`), needs 200-300 iterations on unscaled embeddings and was 5-9x slower
per fit on MPQA; the accuracies agree to within a few tenths.

- MR, CR, SUBJ, MPQA: no split given. Outer stratified k-fold (k = 10); inside each outer training part an
  inner stratified k-fold picks C; refit on the outer training part; mean outer test accuracy
  (SentEval's InnerKFoldClassifier).
- SST-2: C picked on the dev split, test accuracy of that fit (SplitClassifier); the six fits run on both cores.
  `sst2_train=n` trains on a stratified sample of n of the 67,349 training phrases (seed 1111; the book's
  `cpu` edition), where SentEval uses them all (0, the default).
- TREC (6 coarse classes), MRPC: C picked by stratified k-fold on train, refit on train, test accuracy
  (KFoldClassifier). MRPC's features are SentEval's [|u - v|, u * v]; `mrpc_features="full"` gives
  [u, v, |u - v|, u * v] instead.
Files are read as SentEval reads them (latin-1 where it does; whitespace-split, re-joined; the empty lines
of CR and MPQA kept as "." so the counts are SentEval's 3,775 and 10,606).
"""
from __future__ import annotations

import numpy as np

from ..data.paths import data_file
from ..errors import SreError

ROOT = "senteval/downstream"
TRANSFER_TASKS = ["MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC"]
BINARY_FILES = {"MR": ("MR/rt-polarity.pos", "MR/rt-polarity.neg"), "CR": ("CR/custrev.pos", "CR/custrev.neg"),
                "SUBJ": ("SUBJ/subj.objective", "SUBJ/subj.subjective"), "MPQA": ("MPQA/mpqa.pos", "MPQA/mpqa.neg")}
REGULARISATION = [2.0 ** t for t in range(-2, 4)]  # SentEval's grid of C for scikit-learn
SEED = 1111


def _lines(rel: str, data_dir=None, encoding: str = "latin-1", keep_empty: bool = False) -> list[str]:
    with open(data_file(f"{ROOT}/{rel}", data_dir), encoding=encoding) as f:
        return [line for line in f.read().splitlines() if keep_empty or line.strip()]


def _join(text: str) -> str:
    return " ".join(text.split()) or "."  # SentEval's batcher encodes an empty sentence as "."


def load_task(task: str, data_dir=None) -> dict:
    """{split: (sentences or (sentences_a, sentences_b), labels)}; split "all" for the k-fold tasks."""
    if task in BINARY_FILES:
        first, second = (_lines(rel, data_dir, keep_empty=True) for rel in BINARY_FILES[task])  # as SentEval
        return {"all": ([_join(s) for s in first + second], np.array([1] * len(first) + [0] * len(second)))}
    if task == "SST2":
        out = {}
        for split, name in (("train", "train"), ("dev", "dev"), ("test", "test")):
            rows = [line.rsplit("\t", 1) for line in _lines(f"SST/binary/sentiment-{name}", data_dir, "utf-8")]
            out[split] = ([_join(s) for s, _ in rows], np.array([int(y) for _, y in rows]))
        return out
    if task == "TREC":
        out = {}
        for split, name in (("train", "train_5500.label"), ("test", "TREC_10.label")):
            rows = [line.split(" ", 1) for line in _lines(f"TREC/{name}", data_dir)]
            out[split] = ([_join(s) for _, s in rows], [label.split(":")[0] for label, _ in rows])
        classes = sorted(set(out["train"][1]))
        return {split: (s, np.array([classes.index(y) for y in labels])) for split, (s, labels) in out.items()}
    if task == "MRPC":
        out = {}
        for split in ("train", "test"):
            rows = [line.split("\t") for line in _lines(f"MRPC/msr_paraphrase_{split}.txt", data_dir, "utf-8-sig")[1:]]
            out[split] = (([_join(r[3]) for r in rows], [_join(r[4]) for r in rows]), np.array([int(r[0]) for r in rows]))
        return out
    raise SreError(f"unknown transfer task {task!r}: choose from {', '.join(TRANSFER_TASKS)}")


SOLVERS = ("liblinear", "lbfgs")


def check_solver(solver: str) -> None:
    if solver not in SOLVERS:
        raise SreError(f"unknown solver {solver!r}: choose from {', '.join(SOLVERS)}")


def logistic(c: float = 1.0, solver: str = "liblinear"):
    """SentEval's classifier; liblinear is binary, so it is one-vs-rest (as SentEval's old default was)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier

    check_solver(solver)
    if solver == "lbfgs":
        return LogisticRegression(C=c, random_state=SEED, max_iter=1000)
    return OneVsRestClassifier(LogisticRegression(C=c, solver="liblinear", random_state=SEED, max_iter=1000))


def _search(kfold: int, solver: str):
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    estimator = logistic(solver=solver)
    key = "estimator__C" if "estimator__C" in estimator.get_params() else "C"  # one-vs-rest wraps liblinear
    # n_jobs=2: the candidate fits are independent; on 2 cores this halves the wall time
    return GridSearchCV(estimator, {key: REGULARISATION},
                        cv=StratifiedKFold(kfold, shuffle=True, random_state=SEED), n_jobs=2)


def classify(task_data: dict, features, kfold: int = 10, solver: str = "liblinear") -> dict:
    """Accuracy x 100 of SentEval's protocol for one task, given `features(sentences) -> array`."""
    from joblib import Parallel, delayed
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    if "all" in task_data:
        sentences, y = task_data["all"]
        scores = cross_val_score(_search(kfold, solver), features(sentences), y,
                                 cv=StratifiedKFold(kfold, shuffle=True, random_state=SEED))
        return {"acc": 100 * float(np.mean(scores)), "n": len(y)}
    (train_s, train_y), (test_s, test_y) = task_data["train"], task_data["test"]
    x_train, x_test = features(train_s), features(test_s)
    if "dev" in task_data:  # SST-2: choose C on dev
        dev_s, dev_y = task_data["dev"]
        x_dev = features(dev_s)
        # one fit per C on both cores; the fit that wins on dev is the model tested (a refit would be the same)
        models = Parallel(n_jobs=2)(delayed(logistic(c, solver).fit)(x_train, train_y) for c in REGULARISATION)
        dev_acc = [model.score(x_dev, dev_y) for model in models]
        best = int(np.argmax(dev_acc))
        return {"acc": 100 * models[best].score(x_test, test_y), "dev_acc": 100 * dev_acc[best],
                "C": REGULARISATION[best], "n": len(test_y)}
    search = _search(kfold, solver).fit(x_train, train_y)
    best = next(iter(search.best_params_.values()))
    return {"acc": 100 * search.score(x_test, test_y), "C": best, "n": len(test_y)}


def sample_train(task_data: dict, n: int) -> dict:
    """The task with a stratified sample of n training examples (all of them when n is 0 or not smaller)."""
    from sklearn.model_selection import train_test_split

    sentences, labels = task_data["train"]
    if not n or n >= len(labels):
        return task_data
    keep, _ = train_test_split(np.arange(len(labels)), train_size=n, stratify=labels, random_state=SEED)
    keep.sort()
    return {**task_data, "train": ([sentences[i] for i in keep], labels[keep])}


def shrink(task_data: dict, n: int) -> dict:
    """Every split of a task cut to n evenly spaced examples (a fingerprint's probe; 0: as it is)."""
    def cut(split):
        sentences, labels = split
        if not n or n >= len(labels):
            return split
        keep = np.linspace(0, len(labels) - 1, n).round().astype(int)
        pick = (lambda s: [s[i] for i in keep])
        return ((tuple(map(pick, sentences)) if isinstance(sentences, tuple) else pick(sentences)), labels[keep])
    return {name: cut(split) for name, split in task_data.items()}


def evaluate_transfer(encode, tasks=None, data_dir=None, kfold: int = 10, mrpc_features: str = "senteval",
                      solver: str = "liblinear", sst2_train: int = 0, max_examples: int = 0) -> dict:
    """{task: {"acc", ...}, "avg": mean accuracy} for `encode(list[str]) -> np.ndarray` embeddings
    (`max_examples`: each split cut to that many evenly spaced examples; 0: all)."""
    if mrpc_features not in ("senteval", "full"):
        raise SreError(f"unknown mrpc_features {mrpc_features!r}: choose senteval or full")
    if sst2_train < 0:
        raise SreError(f"sst2_train must be >= 0 (0: every training phrase), got {sst2_train}")
    check_solver(solver)  # here, not when the first classifier is built after encoding
    out = {}
    for task in tasks or TRANSFER_TASKS:
        data = load_task(task, data_dir)
        if task == "SST2":
            data = sample_train(data, sst2_train)
        data = shrink(data, max_examples)
        if task == "MRPC":
            def features(pair):
                u, v = encode(pair[0]), encode(pair[1])
                parts = [np.abs(u - v), u * v] if mrpc_features == "senteval" else [u, v, np.abs(u - v), u * v]
                return np.concatenate(parts, axis=1)
        else:
            features = encode
        out[task] = classify(data, features, kfold, solver)
    out["avg"] = float(np.mean([out[t]["acc"] for t in tasks or TRANSFER_TASKS]))
    return out
