"""The results store and run cache.

A run is identified by the hash of its resolved config (the file name) and records the hash of the library
source that can change its numbers (`code_hash`) and, for a local model, a hash of its weights. A lookup hits
when all match; a result computed by code or from weights that have since changed is "stale": the book may show it (flagged) instead of retraining, `--force`
recomputes. Writes are atomic (temp file + rename), so an interrupted write never leaves a half file, and a
file that does not parse is treated as missing and recomputed.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

from .encoder import REPO_ROOT
from .errors import SreError

PACKAGE = Path(__file__).resolve().parent
# Source that can change a run's numbers (not prose, plots or the CLI). Evaluation-only runs ("eval") use
# neither the trainer nor the methods, so their results survive changes there.
EVAL_CODE = ["encoder.py", "data/paths.py", "data/sts.py", "data/corpora.py", "evaluate/sts.py",
             "evaluate/geometry.py", "evaluate/whitening.py", "evaluate/model.py"]
TRAIN_CODE = EVAL_CODE + ["train.py", "distributed.py", "methods/__init__.py", "methods/common.py"]
# Transfer-task evaluations ("transfer"): of a model as it is, or of a run's kept weights (whose method code
# is part of their config, so a changed method is a new evaluation).
TRANSFER_CODE = EVAL_CODE + ["evaluate/transfer.py", "trained.py"]
# PT-BERT's hard-length subset of a run's kept weights ("hard_subset"; the run's own code is in its config)
HARD_SUBSET_CODE = EVAL_CODE + ["evaluate/hard_subset.py", "trained.py"]
# SLT-FAI's frequency analyses of a model as it is ("frequency", the untrained PLM's panel of Figs. 5-7)
FREQUENCY_CODE = EVAL_CODE + ["evaluate/frequency.py"]
# Semantic retrieval (QQP) of a model as it is or of a run's kept weights ("retrieval"), and the STS scores of
# a run's kept weights under other poolers ("poolers"; PaSeR's Table 9)
RETRIEVAL_CODE = EVAL_CODE + ["evaluate/retrieval.py", "trained.py"]
POOLERS_CODE = EVAL_CODE + ["trained.py"]
# The kinds of record that evaluate a model rather than train one, and the code each depends on
EVALUATION_CODE = {"eval": EVAL_CODE, "transfer": TRANSFER_CODE, "hard_subset": HARD_SUBSET_CODE,
                   "frequency": FREQUENCY_CODE, "retrieval": RETRIEVAL_CODE, "poolers": POOLERS_CODE}
# Files besides methods/<name>.py that a method's runs depend on (code shared by two methods outside common.py)
METHOD_EXTRA_CODE = {"consert": ["views.py", "evaluate/frequency.py"], "slt_fai": ["views.py", "evaluate/frequency.py"],
                     "paser": ["masked_lm.py"], "simcse_mlm": ["masked_lm.py"]}


def results_dir(path=None) -> Path:
    return Path(path or os.environ.get("SRE_REPRO_RESULTS") or REPO_ROOT / "results")


def work_dir(path=None) -> Path:
    """Checkpoints (not committed)."""
    return Path(path or os.environ.get("SRE_REPRO_WORK") or REPO_ROOT / "work")


# Knobs added after records were made, at the value that computes exactly what the code did before them: a
# config that leaves them there is the same run as before, so they stay out of its identity (hash and cache).
NEUTRAL_LATER_KNOBS = {"head_lr": 0.0, "head_warmup_ratio": -1.0, "eval_max_pairs": 0, "max_pairs": 0,
                       "listmle_reduction": "sum", "world_size": 1}


def identity(cfg: dict) -> dict:
    """The config that names a run: `cfg` (and any config nested in it) less the later knobs at their neutral values."""
    return {k: identity(v) if isinstance(v, dict) else v for k, v in cfg.items()
            if not (k in NEUTRAL_LATER_KNOBS and v == NEUTRAL_LATER_KNOBS[k]
                    and type(v) is type(NEUTRAL_LATER_KNOBS[k]))}


def config_hash(cfg: dict) -> str:
    return hashlib.sha256(json.dumps(identity(cfg), sort_keys=True).encode()).hexdigest()[:16]


# Code edits proven not to change a single-process run's numbers: the hash of the edited files -> the hash the
# records were made under. Issue 21 (data parallelism: all-gather of negatives, per-rank seeds, rank-0 writes)
# changed train.py, common.py, views.py and PT-BERT; tests/test_distributed.py checks that one process still
# computes every method's pre-change smoke numbers. Any later edit of those files changes the hash and the
# records go stale as usual.
CODE_LINEAGE = {
    "1873225b2375f163": "ab1d7887f6761ef9",  # byop
    "67e261c414fed8e2": "f155144dfe8cca94",  # consert
    "93d5b63cf12edeb6": "ba9190ad85613e6e",  # ifm
    "646fb0b4733f63df": "4d96b30c62d7623f",  # mlm
    "5a80c5345fcc1a6d": "760047764fef01d8",  # pt_bert
    "4545c7532c90aaa3": "aec6865c6bcd8ffd",  # rankcse
    "893f705f776e9941": "2985b5bdb2fd27a0",  # sarcse
    "e4a146975346031f": "5966f62aa4d01c5d",  # simcse
    "a7075a5d86adbe3a": "0447b4d35a8defb0",  # simcse_sup
    "68dcdcd004058ff2": "d444c9c1afd34d58",  # slt_fai
}


def code_hash(kind: str) -> str:
    """Hash of the files that can change the numbers of runs of `kind` (a method name or 'eval')."""
    return CODE_LINEAGE.get(raw := _files_hash(kind), raw)


def _files_hash(kind: str) -> str:
    files = EVALUATION_CODE.get(kind) or [*TRAIN_CODE, f"methods/{kind}.py", *METHOD_EXTRA_CODE.get(kind, [])]
    h = hashlib.sha256()
    for rel in files:
        h.update(rel.encode() + b"\0" + (PACKAGE / rel).read_bytes())
    return h.hexdigest()[:16]


def run_path(kind: str, cfg: dict, root=None) -> Path:
    return results_dir(root) / kind / f"{config_hash(cfg)}.json"


def write_json_atomic(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@functools.lru_cache(maxsize=16)
def _weights_hash(files: tuple[tuple[str, int, int], ...]) -> str:
    h = hashlib.sha256()
    for name, _, _ in files:
        with open(name, "rb") as f:
            while chunk := f.read(1 << 22):
                h.update(chunk)
    return h.hexdigest()[:16]


def model_fingerprint(model_name: str | None) -> str | None:
    """Hash of the weight files of a local model (an alias such as sre-bert, or a folder), so a run from
    a model whose weights were since replaced (a re-pretrained sre-bert) counts as stale. None for hub
    names and built-in models, whose weights do not change under one name."""
    from .encoder import resolve_model_path

    if not model_name or model_name in ("glove", "tiny-random"):
        return None
    try:
        folder = Path(resolve_model_path(model_name))
    except SreError:
        return None
    files = sorted([*folder.glob("*.safetensors"), *folder.glob("*.bin")]) if folder.is_dir() else []
    if not files:
        return None
    return _weights_hash(tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files))


def is_stale(kind: str, record: dict) -> bool:
    """Computed by library code that has since changed, or from model weights that have since changed. A
    record of a local model that carries no fingerprint (made before fingerprints were kept) cannot prove
    which weights it saw, so it is stale too."""
    if record.get("code_hash") != code_hash(kind):
        return True
    return record.get("model_fingerprint") != model_fingerprint(record.get("config", {}).get("model_name"))


def read(kind: str, cfg: dict, root=None) -> dict | None:
    """The stored result for this config, or None if absent or unreadable. Sets result['stale']."""
    path = run_path(kind, cfg, root)
    if log := os.environ.get("SRE_REPRO_READ_LOG"):  # which records the book reads (scripts/unread_results.py)
        with open(log, "a") as f:
            f.write(f"{path.resolve()}\n")
    try:
        result = json.loads(path.read_text())
        if identity(result.get("config") or {}) != identity(cfg):
            return None
    except (OSError, ValueError):
        return None
    result["stale"] = is_stale(kind, result)
    return result


def check_named_data_dir(data_dir=None) -> None:
    """Before serving from the cache: a data dir that was named (an argument or $SRE_REPRO_DATA) must exist,
    or a typo goes unnoticed until the first run that is not cached. The default ./data may be absent: a
    reader with the committed results needs no data."""
    from .data.paths import resolve_data_dir

    if data_dir is not None or os.environ.get("SRE_REPRO_DATA"):
        resolve_data_dir(data_dir)


def lookup(kind: str, cfg: dict, root=None, force: bool = False, allow_stale: bool = False) -> dict | None:
    """A cached result to serve, or None when the run must be computed."""
    if force:
        return None
    result = read(kind, cfg, root)
    if result is None or (result["stale"] and not allow_stale):
        return None
    return result


def provenance() -> dict:
    import torch
    import transformers

    try:
        commit = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return {"versions": {"python": platform.python_version(), "torch": torch.__version__,
                         "transformers": transformers.__version__},
            "hardware": {"machine": platform.machine(), "processor": platform.processor(),
                         "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                         "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None},
            "git_commit": commit, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def save(kind: str, cfg: dict, result: dict, root=None) -> dict:
    record = {**result, "kind": kind, "config": cfg, "config_hash": config_hash(cfg),
              "code_hash": code_hash(kind), "model_fingerprint": model_fingerprint(cfg.get("model_name")),
              **provenance()}
    record.pop("stale", None)
    write_json_atomic(run_path(kind, cfg, root), record)
    # hand back what a later read returns (tuples become lists), so a fresh run equals its cached self
    return {**json.loads(json.dumps(record)), "stale": False}

