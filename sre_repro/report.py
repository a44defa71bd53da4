"""Tables and verdicts for the book: our numbers beside the papers', mean +- std over seeds, 95% intervals."""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from .data.sts import STS_TASKS

COLUMNS = [*STS_TASKS, "avg"]
SHORT = {"STSBenchmark": "STS-B", "SICKRelatedness": "SICK-R", "avg": "Avg."}


def sts_row(scores: dict) -> list[float]:
    return [scores[c] for c in COLUMNS]


def sts_table(rows: dict[str, list[float]]) -> pd.DataFrame:
    """A table of STS rows (name -> 8 numbers in COLUMNS order), with the papers' short column names."""
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=COLUMNS).rename(columns=SHORT)
    return frame.round(2)


def beside_paper(ours: dict[str, list[float]], paper: dict[str, list[float]], pairs: dict[str, str]) -> pd.DataFrame:
    """Ours, the paper's row it corresponds to, and ours - paper, for each (our name -> paper name)."""
    rows = {}
    for our_name, paper_name in pairs.items():
        rows[f"{our_name} (ours)"] = ours[our_name]
        rows[f"{paper_name} (paper)"] = paper[paper_name]
        rows[f"difference ({our_name} - paper)"] = list(np.subtract(ours[our_name], paper[paper_name]))
    return sts_table(rows)


def transfer_table(results: dict[str, dict]) -> pd.DataFrame:
    """Transfer accuracies (name -> book.transfer record): one column per task the records share, then
    the mean over those tasks, as Table 10 of the BYOP paper lays them out."""
    tasks = [t for t in next(iter(results.values()))["metrics"] if t != "avg"]
    rows = {name: [r["metrics"][t]["acc"] for t in tasks] for name, r in results.items()}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=tasks)
    frame["Avg."] = frame.mean(axis=1)
    return frame.round(2)


def interval(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and the two ends of a t-interval for the mean (ends are nan with fewer than 2 values)."""
    values = np.asarray(values, dtype=float)
    mean = float(values.mean())
    if len(values) < 2:
        return mean, float("nan"), float("nan")
    half = stats.t.ppf((1 + confidence) / 2, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values))
    return mean, mean - half, mean + half


def seed_table(groups: dict[str, list[dict]]) -> pd.DataFrame:
    """Mean +- std over seeds of each STS column, for groups of run results (the value alone for one run)."""
    rows = {}
    for name, results in groups.items():
        values = np.array([sts_row(r["metrics"]["sts"]) for r in results])
        if len(values) > 1:
            rows[name] = [f"{m:.2f} ± {s:.2f}" for m, s in zip(values.mean(0), values.std(0, ddof=1))]
        else:  # one run: no spread to show
            rows[name] = [f"{m:.2f}" for m in values[0]]
        rows[name].append(", ".join(str(r["seed"]) for r in results))
    return pd.DataFrame.from_dict(rows, orient="index", columns=[*[SHORT.get(c, c) for c in COLUMNS], "seeds"])


def verdict(differences, claim: str, confidence: float = 0.95, negligible: float = 0.05) -> dict:
    """Holds when the interval of the mean difference lies above zero; reversed when below; no effect when it
    lies inside +-`negligible` points (below the tables' two decimals, where a consistent 0.001 would otherwise
    read as "reversed"); else undecided."""
    mean, low, high = interval(differences, confidence)
    if np.isnan(low):
        word = "not tested (one seed)"
    elif -negligible < low and high < negligible:
        word = f"no effect at this scale (interval inside ±{negligible})"
    elif low > 0:
        word = "holds at this scale"
    elif high < 0:
        word = "reversed at this scale"
    else:
        word = "not shown at this scale (interval includes 0)"
    return {"claim": claim, "mean difference": round(mean, 2),
            f"{int(confidence * 100)}% interval": f"[{low:.2f}, {high:.2f}]", "n seeds": len(differences),
            "verdict": word}


def variance_verdict(base, variant, claim: str, level: float = 0.05) -> dict:
    """One-sided F-test that `variant`'s seed variance is below `base`'s (the claim holds when p < level).
    With three seeds per side the test detects only very large ratios; the verdict says so when it fails."""
    base, variant = np.asarray(base, dtype=float), np.asarray(variant, dtype=float)
    if min(len(base), len(variant)) < 2:
        return {"claim": claim, "std (base)": float("nan"), "std (variant)": float("nan"), "p": float("nan"),
                "verdict": "not tested (one seed)"}
    ratio = variant.var(ddof=1) / base.var(ddof=1) if base.var(ddof=1) > 0 else float("inf")
    p = float(stats.f.cdf(ratio, len(variant) - 1, len(base) - 1))
    word = ("holds at this scale" if p < level else
            "reversed at this scale" if p > 1 - level else
            f"not shown at this scale (F-test p = {p:.2f}; {len(base)} vs {len(variant)} seeds)")
    return {"claim": claim, "std (base)": round(float(base.std(ddof=1)), 2),
            "std (variant)": round(float(variant.std(ddof=1)), 2), "p": round(p, 3), "verdict": word}


def scale_banner(scale: str, cfg: dict | None = None, seeds=None, extra: str = "") -> str:
    """The line printed above every table: what was run, at which scale."""
    parts = [f"Scale: {scale}"]
    if cfg:
        steps = cfg["max_steps"] or f"{cfg['epochs']} epoch(s)"
        parts.append(f"model {cfg['model_name']}, {cfg['train_data']}, {steps} steps x batch {cfg['batch_size']}, "
                     f"max_len {cfg['max_len']}, lr {cfg['lr']}, {cfg['precision']}")
    if seeds:
        parts.append("seeds " + ", ".join(map(str, seeds)))
    if extra:
        parts.append(extra)
    return " | ".join(parts)


def stale_warning(results: list[dict]) -> str:
    stale = [r["config_hash"] for r in results if r.get("stale")]
    if not stale:
        return f"All {len(results)} results shown were computed by the current library code."
    return (f"WARNING: {len(stale)} result(s) were computed by library code or from model weights that have changed since "
            f"({', '.join(stale)}); rerun with force=True to refresh them.")
