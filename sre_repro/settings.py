"""The bottom layer: where things live, the choices a knob may take, and how a value is checked against a
knob's type. Imports nothing from the package but errors.py, so every layer above may use it."""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from .errors import SreError

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGE = REPO_ROOT / "sre_repro"
SCALES = ["smoke", "cpu", "paper"]
PRECISIONS = ["fp32", "bf16", "fp16"]
TRAIN_DATA = ["wiki1m", "wiki1m_full", "sts_unlabeled", "snli"]
DEVICES = ["auto", "cpu", "cuda"]
POOLERS = ["cls", "cls_mlp", "avg", "avg_first_last", "avg_first_last_emb", "avg_top2"]


def results_dir(path=None) -> Path:
    """Run records (committed): an argument, else $SRE_REPRO_RESULTS, else results/."""
    return Path(path or os.environ.get("SRE_REPRO_RESULTS") or REPO_ROOT / "results")


def work_dir(path=None) -> Path:
    """Checkpoints and caches (not committed): an argument, else $SRE_REPRO_WORK, else work/."""
    return Path(path or os.environ.get("SRE_REPRO_WORK") or REPO_ROOT / "work")


# how a value of each knob type is written (the fix a type error names)
EXAMPLES = {int: "write a whole number, e.g. 3", float: "write a number, e.g. 3e-5", bool: "write true or false",
            str: "write text"}


def coerce(key: str, value, typ):
    """Convert a --set string, or check a YAML value, against a field's type."""
    typ = {"int": int, "float": float, "str": str, "bool": bool}.get(typ, typ) if isinstance(typ, str) else typ
    if isinstance(value, str) and typ is not str:
        text = value.strip()
        try:
            if typ is bool:
                if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError
                return text.lower() in ("true", "1", "yes")
            return typ(text)
        except ValueError:
            raise SreError(f"parameter {key} expects {typ.__name__}, got {value!r}: "
                           f"{EXAMPLES.get(typ, 'fix its value')}") from None
    if typ is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, typ) or (typ is int and isinstance(value, bool)):
        raise SreError(f"parameter {key} expects {typ.__name__}, got {value!r} ({type(value).__name__}): "
                       f"{EXAMPLES.get(typ, 'fix its value')}")
    return value


def require_choice(cfg: dict, key: str, allowed) -> None:
    if cfg[key] not in allowed:
        raise SreError(f"unknown {key} {cfg[key]!r}: choose from {', '.join(map(str, allowed))}")


def require_positive(cfg: dict, *keys: str) -> None:
    for key in keys:
        if cfg[key] <= 0:
            raise SreError(f"{key} must be positive, got {cfg[key]}: give a value above 0")


@lru_cache(maxsize=1)
def readable_mode() -> int:
    """The mode a newly created file gets here (0644 under the usual umask 022): for files written through
    mkstemp (0600), so records and downloads are as readable as any other file. Read once (reading the umask
    sets it for an instant)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask
