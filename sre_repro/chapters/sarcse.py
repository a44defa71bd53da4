"""The SARCSE chapter's plan: its grids, the batch-size budget, and the rows its figures derive from runs."""
from __future__ import annotations

import numpy as np

from .. import book
from ..errors import SreError

# The cpu edition runs a subset of the appendix grids so that the chapter stays within its time: the ends of
# each range and the preset (batch 64, theta 0.1); the list parameters (`-p batch_sizes`, `-p thetas`) run the rest.
GRIDS = {
    "sarcse_batch_sizes": {"smoke": [4, 8], "cpu": [32, 64, 512], "default": [32, 64, 128, 192, 256, 512]},
    "sarcse_thetas": {"smoke": [0.1, 0.5], "cpu": [0.0, 0.1, 0.6], "default": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6]},
}


def grid(name: str, scale: str, chosen=None) -> list:
    return book.grid(GRIDS, name, scale, chosen)


def same_budget(scale: str, method: str, batch_size: int) -> dict:
    """Overrides that train with `batch_size` on as many sentences as the scale's preset does (SARCSE's
    batch-size table keeps the data fixed): steps = preset steps x preset batch / batch_size. Under a stopping
    rule its patience is held fixed in sentences too (batch 512 waits 25 steps where batch 64 waits 200), so a
    larger batch can converge within its smaller number of steps, and is flagged when it cannot."""
    from ..config import resolve

    preset = resolve(overrides={"method": method, "scale": scale})
    if not preset["max_steps"]:
        return {"batch_size": batch_size}  # epoch-based presets: the data budget is the corpus already
    scale_by = preset["batch_size"] / batch_size
    steps = max(1, round(preset["max_steps"] * scale_by))
    eval_steps = max(1, min(preset["eval_steps"], steps // 5 or 1))
    out = {"batch_size": batch_size, "max_steps": steps, "eval_steps": eval_steps}
    if preset.get("patience"):
        out["patience"] = max(1, round(preset["patience"] * preset["eval_steps"] * scale_by / eval_steps))
    return out


def stsb_test_gold(data_dir=None, run: dict | None = None):
    """STS-B test gold scores, of the pairs `run` was scored on (smoke runs score an evenly spaced subset)."""
    from ..data.sts import load_split
    from ..evaluate.sts import evenly_spaced

    max_pairs = (run or {}).get("config", {}).get("eval_max_pairs", 0)
    return evenly_spaced(load_split("STSBenchmark", "test", data_dir), max_pairs).gold


def importance_rows(run: dict, key: str, label: str, invert: bool = False) -> dict[str, list]:
    """Token-importance lines of a run's probe pairs, scaled to [0, 1] per sentence (for plots.token_importance).
    `invert`: lower values are more important (reconstruction error: lower = better preserved)."""
    rows = {}
    for i, tokens in enumerate(run["metrics"]["token_importance"][key]):
        values = [v for _, v in tokens]
        low, high = min(values), max(values)
        scaled = [(v - low) / (high - low) if high > low else 0.0 for v in values]
        rows[f"{label} #{i + 1}"] = [(t, 1 - x if invert else x) for (t, _), x in zip(tokens, scaled)]
    return rows


def batch_gain(larger: list[dict], preset: list[dict]):
    """Per seed, average STS at a larger batch minus at the preset batch (runs matched by seed)."""
    by_seed = {r["seed"]: r["metrics"]["sts"]["avg"] for r in preset}
    missing = [r["seed"] for r in larger if r["seed"] not in by_seed]
    if missing:
        raise SreError(f"no preset-batch run for seed(s) {missing}: train both batch sizes with the same seeds")
    return np.array([r["metrics"]["sts"]["avg"] - by_seed[r["seed"]] for r in larger])


def paper_gains(largest_batch: int, preset_batch: int) -> dict[str, float | None]:
    """The paper's own effect for each verdict of the chapter, from its Tables 1 and 2 (average STS,
    RoBERTa-base): SARCSE over SimCSE, SAL over plain MSE, the decoder, SimCSE over the TextCNN head alone, and
    how much more SimCSE gains than SARCSE from `largest_batch` over `preset_batch` (None: a batch the paper
    did not run)."""
    from ..papers.sarcse import TABLE1_BASE, TABLE2_BATCH

    avg = {name: row[-1] for name, row in TABLE1_BASE.items()}
    batch = None
    if largest_batch in TABLE2_BATCH and preset_batch in TABLE2_BATCH:
        gain = {m: TABLE2_BATCH[largest_batch][m][-1] - TABLE2_BATCH[preset_batch][m][-1] for m in ("SimCSE", "SARCSE")}
        batch = gain["SimCSE"] - gain["SARCSE"]
    return {"sarcse": avg["SARCSE-RoBERTa-base"] - avg["SimCSE-RoBERTa-base"],
            "sal": avg["SARCSE-RoBERTa-base"] - avg["SARCSE w/o SAL"],
            "decoder": avg["SARCSE w/o SAL"] - avg["SARCSE w/o SAL & decoder"],
            "head": avg["SimCSE-RoBERTa-base"] - avg["SARCSE w/o SAL & decoder"],
            "batch": batch}
