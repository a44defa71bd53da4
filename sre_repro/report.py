"""Tables and verdicts for the book: our numbers beside the papers', mean +- std over seeds, 95% intervals."""
from __future__ import annotations

from itertools import groupby

import numpy as np
import pandas as pd
from scipy import stats

from . import protocol, runs
from .data.sts import STS_TASKS
from .plots import GOLD_GROUPS, gold_level

COLUMNS = [*STS_TASKS, "avg"]
SHORT = {"STSBenchmark": "STS-B", "SICKRelatedness": "SICK-R", "avg": "Avg."}


def sts_row(scores: dict) -> list[float]:
    return [scores[c] for c in COLUMNS]


def sts_table(rows: dict[str, list[float]]) -> pd.DataFrame:
    """A table of STS rows (name -> 8 numbers in COLUMNS order), with the papers' short column names."""
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=COLUMNS).rename(columns=SHORT)
    return frame.round(2)


def beside_paper(ours: dict[str, list[float]], paper: dict[str, list[float]], pairs: dict[str, str]) -> pd.DataFrame:
    """Ours and the paper's row it corresponds to, for each (our name -> paper name). No "ours - paper" row: the
    PLMs differ, so absolute numbers do not compare; effects do (`paper_effect`)."""
    rows = {}
    for our_name, paper_name in pairs.items():
        rows[f"{our_name} (ours)"] = ours[our_name]
        rows[f"{paper_name} (paper)"] = paper[paper_name]
    return sts_table(rows)


def paper_effect(result: dict, paper_gain: float | None, seeds) -> dict:
    """A verdict row (`verdict` and its kin) with the paper's own effect for the same claim beside ours: the
    paper's method minus its baseline from the paper's table (None: the paper reports none), and the seeds
    our mean difference and interval rest on. Effects compare across PLMs where absolute numbers do not."""
    head = {"claim": result["claim"], "paper effect": None if paper_gain is None else round(float(paper_gain), 2)}
    rest = {k: v for k, v in result.items() if k != "claim"}
    # a "not shown" whose seeds could not have detected the paper's effect says so (protocol.power_word)
    if str(rest.get("verdict", "")).startswith("not shown") and protocol.power_word(
            paper_gain, rest.get("detectable") or float("nan")):
        rest["verdict"] = f"underpowered at this scale (the paper's effect is below the {rest['detectable']} points these seeds detect)"
    return {**head, **rest, "seeds": ", ".join(map(str, seeds))}


def save_verdicts(chapter: str, scale: str, *tables: list[dict], root=None) -> None:
    """A chapter's verdict rows (each table as its notebook displays it) where the verdict board reads them:
    results/verdicts/<chapter>.<scale>.json, written atomically on every run of the chapter; never in quick mode."""
    from .config import quick_mode

    if quick_mode():
        return
    rows = [{k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()} for table in tables for row in table]
    runs.write_json_atomic(runs.results_dir(root) / "verdicts" / f"{chapter}.{scale}.json", rows)


VERDICT_COLUMNS = ["claim", "type", "paper effect", "ours", "interval", "detectable", "seeds for the paper's effect",
                   "verdict", "seeds"]


def dashed(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame as the book shows it: "–" where a cell has no value (never NaN or None)."""
    return frame.astype(object).where(frame.notna(), "–")


def _number(value):
    """A verdict table's number as shown: two decimals, three significant digits below 1 (a geometry effect)."""
    if isinstance(value, (float, np.floating)) and np.isfinite(value):
        return f"{value:.3g}" if abs(value) < 1 else f"{value:.2f}"
    return value


def _seed_runs(value):
    """A verdict row's seeds as shown: runs of consecutive seeds as a range ("42, 43, 44, 46" -> "42–44, 46")."""
    try:
        seeds = [int(s) for s in str(value).split(", ")]
    except ValueError:
        return value
    blocks = [[s for _, s in block] for _, block in groupby(enumerate(seeds), key=lambda p: p[1] - p[0])]
    return ", ".join(f"{b[0]}–{b[-1]}" if len(b) > 2 else ", ".join(map(str, b)) for b in blocks)


class VerdictTable:
    """Verdict rows as a chapter shows them, readable without scrolling sideways: numbers rounded, consecutive seeds
    as a range, and the table marked `verdicts` so that _static/book.css wraps its headers, its claim id and its
    prose columns. `.frame` is the frame as the rows give it."""

    def __init__(self, frame: pd.DataFrame):
        self.frame = frame

    def shown(self) -> pd.DataFrame:
        shown = self.frame.map(_number)
        return shown.assign(seeds=shown["seeds"].map(_seed_runs))

    def _repr_html_(self) -> str:
        return self.shown().to_html(classes="verdicts")

    def __repr__(self) -> str:
        return self.shown().to_string()


def verdict_frame(rows: list[dict]) -> VerdictTable:
    """Verdict rows (claims.judge) as a chapter shows them: one row per claim id, "–" where a row has no value."""
    return VerdictTable(dashed(pd.DataFrame(rows).set_index("id").reindex(columns=VERDICT_COLUMNS)))


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


def curve_differences(run: dict, reference: dict, metric: str) -> np.ndarray:
    """`reference`'s `metric` minus `run`'s at each evaluation step both runs' dev curves have (in `run`'s order):
    how two runs' training differed step by step (e.g. a method against the same seed's baseline)."""
    reference_values = {p["step"]: p[metric] for p in reference["dev_curve"]}
    differences = [reference_values[p["step"]] - p[metric] for p in run["dev_curve"] if p["step"] in reference_values]
    if not differences:
        raise ValueError("the two runs share no evaluation step: compare runs with the same eval_steps")
    return np.array(differences)


def verdict(differences, claim: str, confidence: float = 0.95, negligible: float = 0.05) -> dict:
    """Holds when the interval of the mean difference lies above zero; reversed when below; no effect when it
    lies inside +-`negligible` points (below the tables' two decimals, where a consistent 0.001 would otherwise
    read as "reversed"); else undecided."""
    mean, low, high = interval(differences, confidence)
    if runs.SERVED_STALE:
        word = stale_word()
    elif np.isnan(low):
        word = "not tested (one seed)"
    elif -negligible < low and high < negligible:
        word = f"no effect at this scale (interval inside ±{negligible})"
    elif low > 0:
        word = "holds at this scale"
    elif high < 0:
        word = "reversed at this scale"
    else:
        word = "not shown at this scale (interval includes 0)"
    sd = float(np.std(differences, ddof=1)) if len(differences) > 1 else float("nan")
    detectable = protocol.detectable_effect(sd, len(differences))
    return {"claim": claim, "mean difference": round(mean, 2),
            f"{int(confidence * 100)}% interval": f"[{low:.2f}, {high:.2f}]", "n seeds": len(differences),
            "detectable": None if np.isnan(detectable) else round(detectable, 2), "verdict": word}


def poolers(cfg: dict) -> tuple[str, str]:
    """The sentence embedding a run trains with and the one it is tested with."""
    if cfg.get("method") == "sarcse" and cfg.get("embedding", "z") == "z":
        return "Z (SARCSE's CNN)", "Z (SARCSE's CNN)"
    train_pooler = cfg.get("pooler", cfg.get("eval_pooler"))
    if cfg.get("method") == "paser":  # PaSeR trains on the raw [CLS] (no MLP), as its code does
        return ("cls (raw, no MLP)" if train_pooler == "cls" else train_pooler), cfg.get("eval_pooler")
    return ("cls + MLP" if train_pooler == "cls" else train_pooler), cfg.get("eval_pooler")


def scale_banner(scale: str, cfg: dict | None = None, seeds=None, extra: str = "", also=()) -> str:
    """The line printed above every table: what was run, at which scale, pooled how in training and at test.
    `also`: the configs of the table's runs of other methods, whose poolers (and data and lr, where they differ)
    are named too."""
    from .config import quick_cap, quick_mode

    parts = [f"Scale: {scale}"]
    quick = quick_mode()
    if quick:
        cap = quick_cap(scale)
        parts.append(f"QUICK MODE, a class run: one seed{f', every run capped at {cap} steps' if cap else ''}, headline "
                     "rows only; not this edition's numbers, and no verdict")
    if cfg:
        head = f", added modules lr {cfg['head_lr']}" if cfg.get("head_lr") not in (None, 0.0, cfg["lr"]) else ""

        def each(key, read=lambda c, key: c[key]):  # one value, or each method's where the table's methods differ
            values = {c.get("method"): read(c, key) for c in (cfg, *also)}
            return (f"{read(cfg, key)}" if len(set(values.values())) == 1 else
                    ", ".join(f"{method} {value}" for method, value in values.items()))
        steps = each("max_steps", lambda c, key: f"{c[key]} steps" if c[key] else f"{c['epochs']} epoch(s)")
        parts.append(f"model {cfg['model_name']}, {each('train_data')}, {steps} x batch {cfg['batch_size']}, "
                     f"max_len {each('max_len')}, lr {each('lr')}{head}, {cfg['precision']}")
        if cfg.get("patience") and not quick:  # the cap is a cap: the rule stops the run (the cpu recipe's convergence study)
            rules = {c.get("method"): f"{c['patience']} evaluations (every {c['eval_steps']} steps)"
                     for c in (cfg, *also) if c.get("patience")}
            rule = (rules[cfg.get("method")] if len(set(rules.values())) == 1 else
                    "; ".join(f"{method} {value}" for method, value in rules.items()) + ",")
            parts.append(f"stops when {rule} gain no more than {cfg['min_delta']:g} on STS-B dev")
        elif scale == "cpu" and "patience" in cfg and not quick:
            parts.append("a fixed budget, no stopping rule (the recipe before the convergence study)")
        pooled = {}
        for c in (cfg, *also):
            pooled.setdefault(c.get("method"), poolers(c))
        if len(pooled) == 1:
            parts.append("pooler: {} in training, {} at test".format(*pooled[cfg.get("method")]))
        else:
            parts.append("pooler: " + "; ".join(f"{method} {train} in training, {test} at test"
                                                for method, (train, test) in pooled.items()))
    if seeds:
        parts.append("seeds " + ", ".join(map(str, seeds)))
    if extra:
        parts.append(extra)
    return " | ".join(parts)


def stale_word() -> str:
    """The verdict of a chapter that was served a stale record: no verdict until it is recomputed (the book
    still builds, and shows the stale numbers flagged)."""
    return (f"stale: recompute with force=True ({len(set(runs.SERVED_STALE))} stale record(s) read, e.g. "
            f"results/{runs.SERVED_STALE[0]}.json)")


def stale_warning(results: list[dict]) -> str:
    stale = [r["config_hash"] for r in results if r.get("stale")]
    if not stale:
        return f"All {len(results)} results shown were computed by the current library code."
    return (f"WARNING: {len(stale)} result(s) rest on a fingerprint or model weights that have changed since "
            f"({', '.join(stale)}); rerun with force=True to refresh them.")


# The older did-it-train reading of the fixed-budget records (appendix "The cpu recipe"; no verdict applies it now:
# the one rule is protocol.engaged): a loss term fell by at least TRAINED_LOSS_DROP (first step -> the evaluation
# interval ending at the kept step) or the added weights moved by at least TRAINED_MOVED (||W - W0|| / ||W0|| at
# the kept step). SARCSE's exercise answers quote it. A kept checkpoint whose STS-B test embeddings
# have anisotropy above COLLAPSE_ANISOTROPY is flagged as collapsed.
TRAINED_LOSS_DROP = 0.10
TRAINED_MOVED = 0.01
COLLAPSE_ANISOTROPY = 0.8


def collapsed(run: dict) -> bool:
    return run["metrics"]["geometry"]["anisotropy"] > COLLAPSE_ANISOTROPY


def flag_collapsed(result: dict, runs: list[dict]) -> dict:
    """A verdict that rests on a collapsed kept checkpoint says so (the claim's numbers include that run)."""
    bad = [r["seed"] for r in runs if collapsed(r)]
    if not bad:
        return result
    return {**result, "verdict": f"{result['verdict']}; rests on {len(bad)} COLLAPSED run(s) (seed {', '.join(map(str, bad))})"}


def loss_drop(run: dict, term: str) -> float | None:
    """Relative fall of a loss term from the first step to the kept step (None: not recorded)."""
    entry = (run.get("training") or {}).get("terms", {}).get(term)
    if not entry or not entry["first"]:
        return None
    return (entry["first"] - entry["kept"]) / abs(entry["first"])


def _pct(value) -> str:
    return "–" if value is None else f"{100 * value:.3g}%"


def _in_the_loss(term: dict) -> bool:
    """Whether a logged term counts in the loss: a statistic logged beside it (an accuracy, a rate) has weight 0."""
    return bool(term.get("weight", 1.0))


def _share(value) -> str:
    """A loss term's share of the loss, as the table shows it. A share above 100 % means the term was not yet in
    the loss over that interval (an auxiliary before its warm-up ends: logged, weighted 0), so it has none."""
    return "not in the loss then" if value is not None and value > 1 + 1e-6 else _pct(value)


def training_table(groups: dict[str, list[dict]], plm_dev: float | None = None) -> pd.DataFrame:
    """Did it train, one row per run: kept step, (with the untrained PLM's STS-B dev, same pooler) the kept
    checkpoint's dev gain over it, each weighted loss term first -> kept with its share of the loss at the kept
    step, how far each added module and the PLM moved, and the kept checkpoint's STS-B test anisotropy (flagged
    when collapsed)."""
    rows = {}
    for name, results in groups.items():
        for r in results:
            t = r.get("training")
            label = f"{name} (seed {r['seed']})"
            row = {"kept step": r["metrics"].get("best_step"),
                   "anisotropy": f"{r['metrics']['geometry']['anisotropy']:.3f}" + (" COLLAPSED" if collapsed(r) else "")}
            if plm_dev is not None:
                row["dev gain over the PLM"] = f"{r['metrics']['stsb_dev_best'] - plm_dev:+.2f}"
            if t is None:
                rows[label] = {**row, "loss first → kept": "not recorded (older record)"}
                continue
            row["loss first → kept"] = f"{t['loss_first']:.4g} → {t['loss_kept']:.4g}"
            # the loss terms first, then the statistics logged beside them (weight 0: no share of the loss)
            for term, e in sorted(t["terms"].items(), key=lambda item: not _in_the_loss(item[1])):
                values = f"{e['first']:.4g} → {e['kept']:.4g}"
                if _in_the_loss(e):
                    row[f"{term} first → kept (share)"] = f"{values} ({_share(e['share_kept'])})"
                else:
                    row[f"{term} first → kept"] = values
            for module, moved in t["moved"].items():
                row[f"moved: {module}"] = _pct(moved)
            rows[label] = row
    return pd.DataFrame.from_dict(rows, orient="index").fillna("")


class Split:
    """A wide table shown as several narrower ones, one under another (each keeps the run labels)."""

    def __init__(self, frames: list[pd.DataFrame]):
        self.frames = frames

    def _repr_html_(self) -> str:
        return "".join(frame.to_html(classes="dataframe") for frame in self.frames)

    def __repr__(self) -> str:
        return "\n\n".join(frame.to_string() for frame in self.frames)


def did_it_train(groups: dict[str, list[dict]], plm_dev: float | None = None, width: int = 5) -> Split:
    """`training_table` as it fits a page: the kept step, anisotropy, dev gain and loss, then the loss terms and
    the statistics logged beside them, then how far each module moved, each in tables of at most `width` columns."""
    frame = training_table(groups, plm_dev)
    head = [c for c in ("kept step", "anisotropy", "dev gain over the PLM", "loss first → kept") if c in frame]
    terms = [c for c in frame if c not in head and " first → kept" in c]
    moved = [c for c in frame if c not in head and c not in terms]
    parts = [head] + [cols[i:i + width] for cols in (terms, moved) for i in range(0, len(cols), width)]
    return Split([frame[cols] for cols in parts if cols])


def cosine_spread(groups: dict[str, list[dict]], gold) -> pd.DataFrame:
    """Variance of the predicted STS-B test cosine within each gold-score group (SARCSE's Appendix D), divided
    by the variance of all the run's cosines, one row per run (a model whose cosines all crowd together has
    small within-group variances for that reason alone; the ratio asks how much of its spread lies within
    groups). The last column is that total variance. A record without a seed (the untrained PLM) is named alone."""
    gold = np.asarray(gold)
    out = {}
    for name, group in groups.items():
        for run in group:
            cos = np.asarray(run["metrics"]["stsb_test_cosine"])
            total = float(cos.var())
            row = {f"{lo}-{hi}": float(cos[gold_level(gold, lo, hi)].var()) / total for lo, hi in GOLD_GROUPS}
            out[f"{name} (seed {run['seed']})" if "seed" in run else name] = {**row, "total variance": total}
    return pd.DataFrame(out).T
