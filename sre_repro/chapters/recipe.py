"""The cpu recipe study (appendix "The cpu recipe"): which learning rate and how many steps let SimCSE learn
from sre-bert, and which learning rate lets the modules a method adds train, chosen on STS-B dev only.

Step 1: SimCSE at seed 42 over lr x steps (linear decay to 0 over each run's own length, dev every 20 steps).
Step 2: for each method with added modules, `head_lr` over a grid at the chosen lr and steps, seed 42.
The chosen values are the `cpu` presets (sre_repro/config.py and the methods' SCALE_PRESETS point here).
"""
from __future__ import annotations

import pandas as pd

from .. import book
from ..errors import SreError
from ..train import train

SEED = 42
GRIDS = {
    "lrs": {"smoke": [1e-4, 1e-3], "cpu": [3e-5, 1e-4, 3e-4], "paper": [3e-5]},
    "steps": {"smoke": [6], "cpu": [100, 300], "paper": [0]},  # paper: one epoch
    "head_lrs": {"smoke": [1e-3, 1e-2], "cpu": [1e-4, 1e-3, 1e-2], "paper": [3e-5]},
}
# methods of the book with modules added to the PLM at this scale (SimCSE's MLP exists only with [CLS])
ADDED_MODULE_METHODS = ["sarcse", "pt_bert", "slt_fai", "paser"]


def grid(name: str, scale: str) -> list:
    book.seeds(scale)  # checks the scale
    return list(GRIDS[name][scale])


def plm_settings(scale: str, model_name: str = "") -> dict[tuple[float, int], dict]:
    """(lr, steps) -> the overrides of SimCSE's study run."""
    extra = {"model_name": model_name} if model_name else {}
    return {(lr, steps): {"method": "simcse", "scale": scale, "seed": SEED, "lr": lr, "max_steps": steps, **extra}
            for lr in grid("lrs", scale) for steps in grid("steps", scale)}


def plm_runs(scale: str, model_name: str = "", data_dir=None, force: bool = False,
             allow_stale: bool = True) -> dict[tuple[float, int], dict]:
    """(lr, steps) -> SimCSE's run at seed 42."""
    return {key: train(overrides, data_dir=data_dir, force=force, allow_stale=allow_stale)
            for key, overrides in plm_settings(scale, model_name).items()}


# The longest run each edition can afford: every chapter must fit 90 minutes on 2 cores with its seeds, and a
# run of 300 steps costs about 2.4 times one of 100 (measured in this appendix), which would put the SARCSE and
# BYOP chapters near three hours. Longer settings are still run and shown, never chosen.
STEP_BUDGET = {"smoke": 6, "cpu": 100, "paper": 0}


def chosen_plm(runs: dict[tuple[float, int], dict], max_steps: int = 0) -> tuple[float, int]:
    """The (lr, steps) whose run scored best on STS-B dev (its kept checkpoint), among the settings of at most
    `max_steps` steps (0: any); ties keep the cheaper."""
    affordable = [key for key in runs if not max_steps or key[1] <= max_steps]
    return max(affordable, key=lambda key: (runs[key]["metrics"]["stsb_dev_best"], -key[1], -key[0]))


def head_settings(method: str, scale: str, lr: float, steps: int, model_name: str = "") -> dict[float, dict]:
    """head_lr -> the overrides of the method's study run at the chosen PLM lr and steps."""
    if method not in ADDED_MODULE_METHODS:
        raise SreError(f"{method} adds no modules to the PLM at this scale: choose from {', '.join(ADDED_MODULE_METHODS)}")
    extra = {"model_name": model_name} if model_name else {}
    return {head_lr: {"method": method, "scale": scale, "seed": SEED, "lr": lr, "max_steps": steps, "head_lr": head_lr,
                      **extra} for head_lr in grid("head_lrs", scale)}


def head_runs(method: str, scale: str, lr: float, steps: int, model_name: str = "", data_dir=None,
              force: bool = False, allow_stale: bool = True) -> dict[float, dict]:
    """head_lr -> the method's run at seed 42 with the chosen PLM lr and steps."""
    return {head_lr: train(overrides, data_dir=data_dir, force=force, allow_stale=allow_stale)
            for head_lr, overrides in head_settings(method, scale, lr, steps, model_name).items()}


def chosen_head_lr(runs: dict[float, dict]) -> float:
    """The head_lr whose run scored best on STS-B dev; ties keep the smaller."""
    return max(runs, key=lambda h: (runs[h]["metrics"]["stsb_dev_best"], -h))


def study_table(runs: dict[str, dict]) -> pd.DataFrame:
    """One row per setting: STS-B dev of the kept checkpoint (what chooses), the kept step, the loss at the
    first step and at the kept step, how far the PLM and each added module moved, and the average STS on the
    test sets (shown, never used to choose)."""
    rows = {}
    for label, r in runs.items():
        t = r.get("training") or {}
        row = {"STS-B dev (kept)": round(r["metrics"]["stsb_dev_best"], 2), "kept step": r["metrics"]["best_step"],
               "of steps": r["steps"], "loss first → kept": (f"{t['loss_first']:.3g} → {t['loss_kept']:.3g}" if t else "–")}
        row.update({f"moved: {m}": f"{100 * v:.2f}%" for m, v in (t.get("moved") or {}).items() if v is not None})
        row["anisotropy (STS-B test)"] = round(r["metrics"]["geometry"]["anisotropy"], 3)
        row["avg STS test (not used to choose)"] = round(r["metrics"]["sts"]["avg"], 2)
        rows[label] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def preset_check(scale: str, lr: float, steps: int, head_lrs: dict[str, float]) -> pd.DataFrame:
    """The scale's presets beside what the study chose (method -> chosen head_lr)."""
    from ..config import resolve

    rows = {"PLM lr (every method)": (resolve(overrides={"method": "simcse", "scale": scale})["lr"], lr),
            "steps (every method)": (resolve(overrides={"method": "simcse", "scale": scale})["max_steps"], steps)}
    for method, head_lr in head_lrs.items():
        cfg = resolve(overrides={"method": method, "scale": scale})
        rows[f"head_lr ({method})"] = (cfg["head_lr"], head_lr)
    frame = pd.DataFrame.from_dict({name: {"preset": f"{preset:g}", "chosen by the study": f"{chosen:g}",
                                           "equal": preset == chosen} for name, (preset, chosen) in rows.items()},
                                   orient="index")
    return frame
