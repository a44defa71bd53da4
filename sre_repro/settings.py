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


# The cpu recipe of each method: its PLM's lr (and head_lr, the modules it adds), its budget and its stopping rule.
# "converged": what the appendix "The cpu recipe" chose on STS-B dev (its convergence study, seed 42): STS-B dev every
# eval_steps steps, a stop once patience evaluations (200 steps) bring no gain, a cap of 600 steps (1200 where the
# longer run gained); a method whose run kept its first evaluation (at the study's seed, or any of its runs on the
# same schedule at another seed of the protocol) is evaluated every 5 steps. "fixed-budget": the
# recipe before that study (100 steps, no stopping rule), in force only in the appendix's own first study
# (book.CHAPTER_RECIPES), whose records were computed with it. The recipe in force: config.use_cpu_recipe.
_CONVERGED = {"max_steps": 600, "eval_steps": 20, "patience": 10, "min_delta": 0.0}
_EVERY_5 = {"eval_steps": 5, "patience": 40}
_FIXED_BUDGET = {"lr": 1e-4, "max_steps": 100, "eval_steps": 20, "patience": 0, "min_delta": 0.0}
CPU_RECIPES = {
    "converged": {
        "simcse": {**_CONVERGED, **_EVERY_5, "lr": 1e-4}, "simcse_sup": {**_CONVERGED, "lr": 3e-4, "max_steps": 1200},
        "simcse_mlm": {**_CONVERGED, **_EVERY_5, "lr": 1e-4}, "ifm": {**_CONVERGED, **_EVERY_5, "lr": 3e-5},
        "byop": {**_CONVERGED, **_EVERY_5, "lr": 1e-4}, "consert": {**_CONVERGED, "lr": 3e-5}, "rankcse": {**_CONVERGED, "lr": 3e-5},
        "sarcse": {**_CONVERGED, **_EVERY_5, "lr": 3e-4, "head_lr": 1e-3},
        # the cap the study chose (runs still improving at 600)
        "pt_bert": {**_CONVERGED, **_EVERY_5, "lr": 3e-5, "head_lr": 1e-4, "max_steps": 1200},
        # the discriminators' warm-up keeps its share of the run (5 %, ConSERT's 0.5 of 10 epochs); the cap the study
        # chose (runs at other seeds still improving at 600)
        "slt_fai": {**_CONVERGED, "lr": 3e-5, "head_lr": 1e-3, "max_steps": 1200, "aux_warmup_steps": 60},
        "paser": {**_CONVERGED, "lr": 3e-4, "head_lr": 1e-3, "max_steps": 1200}},
    "fixed-budget": {
        **{m: dict(_FIXED_BUDGET) for m in ("simcse", "simcse_mlm", "ifm", "byop", "consert", "rankcse")},
        "simcse_sup": {**_FIXED_BUDGET, "lr": 5e-5}, "sarcse": {**_FIXED_BUDGET, "head_lr": 1e-3},
        "pt_bert": {**_FIXED_BUDGET, "head_lr": 1e-2}, "slt_fai": {**_FIXED_BUDGET, "head_lr": 1e-3, "aux_warmup_steps": 5},
        "paser": {**_FIXED_BUDGET, "head_lr": 1e-3}},
}

# Methods whose convergence study chose a longer cap than their chapters' committed runs were trained under (a run on
# the method's schedule at another protocol seed still improving at 600 steps: recipe.budget_chain): method -> the
# presets the longer cap sets (the cap, and the knobs counted in steps at their share of it: recipe.at_cap). Their
# chapters keep the converged recipe, and say which runs are still improving at its cap, until every run they read
# exists at the new cap. Those runs are computed under the "pending" recipe (scripts/fill_records.py): the converged one
# with these presets, for the runs that take the method's own recipe (SLT-FAI's SimCSE block takes SimCSE's). Then the
# method's entry moves into CPU_RECIPES["converged"]. A run that starts from another run (supervised PaSeR from the
# unsupervised one) keeps its key when its start's cap moves, so it cannot be computed beside its 600-step record:
# once the entry has moved, train.starts_outdated finds it stale and a second `fill_records plan` lists it.
CAPS_PENDING: dict[str, dict] = {}
CPU_RECIPES["pending"] = {m: {**knobs, **CAPS_PENDING.get(m, {})} for m, knobs in CPU_RECIPES["converged"].items()}

# Quick mode (a chapter's `quick` parameter, config.use_quick_mode): a class run of a chapter's headline rows at one
# seed, every run capped at max_steps and evaluated every eval_steps (the recipe's lr and stopping rule kept). The
# cpu cap keeps each chapter under 15 minutes on 2 cores from an empty run cache (stated on each chapter's page).
QUICK_BUDGETS = {"smoke": {}, "cpu": {"max_steps": 60, "eval_steps": 20}, "paper": {"max_steps": 250, "eval_steps": 125}}


def recipe_of(cfg: dict) -> str | None:
    """The cpu recipe a resolved config was made under, read from its stopping rule (None at another scale): a run
    that another depends on (a teacher, an unsupervised start) is resolved under its dependent's recipe."""
    if cfg.get("scale") != "cpu":
        return None
    return "converged" if cfg.get("patience") else "fixed-budget"


def recipe_presets(method: str, scale: str, recipe: str) -> dict:
    """The presets of `method`'s cpu recipe `recipe`; {} at another scale."""
    return CPU_RECIPES[recipe].get(method, {}) if scale == "cpu" else {}
