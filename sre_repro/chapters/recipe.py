"""The cpu recipe study (appendix "The cpu recipe"): which learning rate and how many steps let SimCSE learn
from sre-bert, and which learning rate lets the modules a method adds train, chosen on STS-B dev only.

The fixed-budget study: SimCSE at seed 42 over lr x steps (linear decay to 0 over each run's own length, dev every
20 steps), then each added-module method's `head_lr` at the chosen lr and steps; its choices are the fixed-budget
recipe (settings.CPU_RECIPES["fixed-budget"]), which only this study's own runs still train under. The convergence study (STUDY onwards): every
method's lr, head_lr, cap and evaluation interval under a stopping rule it also chooses; its choices are the
converged recipe (settings.CPU_RECIPES["converged"]).
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pandas as pd

from .. import book, claims, protocol, runs
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
    """A study grid; in quick mode the step grid is the quick cap alone (settings.QUICK_BUDGETS)."""
    from ..config import quick_cap

    book.seeds(scale)  # checks the scale
    cap = quick_cap(scale)
    return [cap] if name == "steps" and cap else list(GRIDS[name][scale])


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


def chosen_setting(runs: dict[float, dict]) -> float:
    """The setting (lr or head_lr) whose run scored best on STS-B dev; ties keep the smaller."""
    return max(runs, key=lambda key: (runs[key]["metrics"]["stsb_dev_best"], -key))


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

    # supervised SimCSE keeps its paper's own rate (5e-5), which this fixed-budget study did not choose
    rows = {"PLM lr (every unsupervised method)": (resolve(overrides={"method": "simcse", "scale": scale})["lr"], lr),
            "steps (every method)": (resolve(overrides={"method": "simcse", "scale": scale})["max_steps"], steps)}
    for method, head_lr in head_lrs.items():
        cfg = resolve(overrides={"method": method, "scale": scale})
        rows[f"head_lr ({method})"] = (cfg["head_lr"], head_lr)
    frame = pd.DataFrame.from_dict({name: {"preset": f"{preset:g}", "chosen by the study": f"{chosen:g}",
                                           "equal": preset == chosen} for name, (preset, chosen) in rows.items()},
                                   orient="index")
    return frame


# ----- the convergence study (the protocol's budget: every method to convergence on STS-B dev) -----------------
# Every run evaluates STS-B dev every `eval_steps` and stops once its best has not improved for `patience`
# evaluations, or at the cap `max_steps`; the schedule decays linearly to 0 over the cap, so a run stopped by a
# shorter patience is exactly the first part of the study's run (the book's rule is chosen on these curves, below).
# The cap is 600 steps at cpu: 3.2 passes over the offline wiki1m sample (11,913 sentences) at batch 64.
STUDY = {"smoke": dict(max_steps=12, eval_steps=2, patience=3, min_delta=0.0),
         "cpu": dict(max_steps=600, eval_steps=20, patience=10, min_delta=0.0)}
# every method the book trains, each at each learning rate of the grid (listed in the order the study computes)
# (RankCSE last: its teachers are SimCSE runs at the scale's presets, which this study decides)
STUDY_METHODS = ["simcse", "simcse_sup", "simcse_mlm", "ifm", "byop", "consert", "sarcse", "pt_bert", "slt_fai",
                 "paser", "rankcse"]
STUDY_GRIDS = {"lrs": {"smoke": [1e-4, 1e-3], "cpu": [1e-4, 3e-5, 3e-4]},
               "head_lrs": {"smoke": [1e-3, 1e-2], "cpu": [1e-3, 1e-2, 1e-4]}}
# the added modules' rate while the PLM's lr is chosen: the presets of the fixed-budget recipe before this study
PRIOR_HEAD_LR = {"smoke": {}, "cpu": {"sarcse": 1e-3, "pt_bert": 1e-2, "slt_fai": 1e-3, "paser": 1e-3}}
# the book's stopping rule is the cheapest of these whose kept checkpoint, on every study curve, scores within
# protocol.DEV_TOLERANCE points of STS-B dev of the study run's best
RULE_CANDIDATES = {"patience": [3, 5, 8, 10], "min_delta": [0.0, 0.1, 0.25]}
# The cap is chosen per method on dev as well: a method whose chosen setting is still improving at the study's cap
# is run again at the next cap of STUDY_CAPS (the schedule decays over each run's own cap), and its cap is the first
# that is not still improving at it, or whose best the next cap's run beats by less than protocol.DEV_TOLERANCE
STUDY_CAPS = {"smoke": [12, 24], "cpu": [600, 1200]}
# ... and a chosen setting that kept its first evaluation (it may have peaked before it was first measured) is run
# again evaluating every STUDY_FINE_EVAL steps (its patience scaled to wait as many steps); the method then evaluates
# that often
STUDY_FINE_EVAL = {"smoke": 1, "cpu": 5}
# knobs counted in steps that the fixed 100-step presets set as a share of the run: the same share of the cap
# (SLT-FAI's auxiliary losses start after 5 % of the run, ConSERT's share of its 10 epochs)
STUDY_STEP_SHARES = {"smoke": {}, "cpu": {"slt_fai": {"aux_warmup_steps": 0.05}}}


def study_overrides(method: str, scale: str, lr: float, head_lr: float | None = None, model_name: str = "") -> dict:
    """The overrides of one study run (seed 42, the study's budget and stopping rule, `lr`, and for a method with
    added modules `head_lr`, else the prior one)."""
    if scale not in STUDY:
        raise SreError(f"the convergence study runs at {' or '.join(STUDY)}, not {scale!r}")
    overrides = at_cap({"method": method, "scale": scale, "seed": SEED, "lr": lr, **STUDY[scale]},
                       STUDY[scale]["max_steps"])
    head_lr = head_lr or PRIOR_HEAD_LR[scale].get(method)
    if head_lr and method in ADDED_MODULE_METHODS:
        overrides["head_lr"] = head_lr
    return {**overrides, **({"model_name": model_name} if model_name else {})}


def at_cap(overrides: dict, cap: int) -> dict:
    """The run's overrides with the cap `cap` and its method's knobs counted in steps at their share of it."""
    shares = STUDY_STEP_SHARES[overrides["scale"]].get(overrides["method"], {})
    return {**overrides, "max_steps": cap, **{knob: round(share * cap) for knob, share in shares.items()}}


def study_lr_runs(method: str, scale: str, model_name: str = "", data_dir=None, force: bool = False,
                  allow_stale: bool = True) -> dict[float, dict]:
    """lr -> the method's study run at seed 42."""
    return {lr: train(study_overrides(method, scale, lr, model_name=model_name), data_dir=data_dir, force=force,
                      allow_stale=allow_stale) for lr in STUDY_GRIDS["lrs"][scale]}


def study_head_runs(method: str, scale: str, lr: float, model_name: str = "", data_dir=None, force: bool = False,
                    allow_stale: bool = True) -> dict[float, dict]:
    """head_lr -> the method's study run at its chosen lr, seed 42."""
    if method not in ADDED_MODULE_METHODS:
        raise SreError(f"{method} adds no modules to the PLM at this scale: choose from {', '.join(ADDED_MODULE_METHODS)}")
    return {h: train(study_overrides(method, scale, lr, h, model_name), data_dir=data_dir, force=force,
                     allow_stale=allow_stale) for h in STUDY_GRIDS["head_lrs"][scale]}


def rule_outcome(curve: list[dict], patience: int, min_delta: float, metric: str = "stsb_dev") -> tuple[int, float]:
    """(the step where a run with this dev curve would stop under the rule, the best dev it would keep): the
    rule applied to the curve's first evaluations, as the trainer applies it while training."""
    values = [point[metric] for point in curve]
    for end in range(1, len(values) + 1):
        if protocol.stop_now(values[:end], patience, min_delta):
            break
    return curve[end - 1]["step"], max(values[:end])


def rule_table(curves: dict[str, dict]) -> pd.DataFrame:
    """One row per candidate rule (patience, min_delta): the mean steps its runs would train, and the largest
    shortfall of the dev score it keeps against each study run's best (name -> study record)."""
    unique = {}  # a run named twice (an lr run at the prior head_lr is also a head_lr run) counts once
    for name, r in curves.items():
        unique.setdefault(r["config_hash"], (name, r))
    # patience counts study evaluations: a finer-evaluated budget check's run is left out
    curves = {name: r for name, r in unique.values() if not evaluated_finer(r)}
    rows = []
    for patience in RULE_CANDIDATES["patience"]:
        for min_delta in RULE_CANDIDATES["min_delta"]:
            outcomes = {name: rule_outcome(r["dev_curve"], patience, min_delta) for name, r in curves.items()}
            shortfall = {name: r["metrics"]["stsb_dev_best"] - outcomes[name][1] for name, r in curves.items()}
            worst = max(shortfall, key=shortfall.get)
            rows.append({"patience": patience, "min_delta": min_delta,
                         "mean steps": float(np.mean([step for step, _ in outcomes.values()])),
                         "largest shortfall": round(shortfall[worst], 2), "where": worst,
                         "within tolerance": shortfall[worst] <= protocol.DEV_TOLERANCE})
    return pd.DataFrame(rows)


def evaluated_finer(record: dict) -> bool:
    """Whether a study record is a budget check's finer-evaluated run (its evaluations are not the study's)."""
    cfg = record.get("config") or {}
    return "scale" in cfg and cfg["eval_steps"] != STUDY[cfg["scale"]]["eval_steps"]


def chosen_rule(table: pd.DataFrame) -> tuple[int, float]:
    """The cheapest rule within tolerance on every curve (ties: the larger patience, then the smaller min_delta)."""
    ok = table[table["within tolerance"]].sort_values(["mean steps", "patience", "min_delta"], ascending=[True, False, True])
    if ok.empty:
        raise SreError(f"no candidate rule keeps every run within {protocol.DEV_TOLERANCE} points of its best: widen "
                       "RULE_CANDIDATES")
    return int(ok.iloc[0]["patience"]), float(ok.iloc[0]["min_delta"])


def study_records(scale: str, compute: bool = False, data_dir=None) -> dict[str, dict]:
    """"method, lr x[, head_lr y][, cap z][, eval every n]" -> the study's record, for every run of its first step,
    of the head_lr grids (at each method's chosen lr, once its lr grid is complete) and of the budget check (each
    method's chosen setting at the longer caps or finer evaluation it needs): computed where missing when
    `compute`, else only those in the store (the study is long: scripts/run_cpu_edition.py convergence fills it
    in the background)."""
    from ..config import resolve

    get = ((lambda o: train(o, data_dir=data_dir, allow_stale=True)) if compute else
           (lambda o: runs.lookup(o["method"], resolve(overrides=o), allow_stale=True)))
    found = {}
    for overrides in study_plan(scale):
        if (record := get(overrides)) is not None:
            found[study_name(overrides)] = record
    for method in ADDED_MODULE_METHODS:
        lr_runs = {lr: found.get(f"{method}, lr {lr:g}") for lr in STUDY_GRIDS["lrs"][scale]}
        if not all(lr_runs.values()):
            continue
        for head_lr in STUDY_GRIDS["head_lrs"][scale]:
            overrides = study_overrides(method, scale, chosen_setting(lr_runs), head_lr)
            if (record := get(overrides)) is not None:
                found[study_name(overrides, head=True)] = record
    for method in STUDY_METHODS:
        if (chosen := study_choice(found, method, scale)) is not None:
            found.update({study_name(o, head=True): r for o, r in budget_chain(chosen, get)[1:] if r is not None})
    return found


def study_name(overrides: dict, head: bool = False) -> str:
    """How the study's tables name a run: "method, lr x[, head_lr y][, cap z]" (head_lr for a run of a head_lr grid
    or after it, the cap past the study's own)."""
    name = f"{overrides['method']}, lr {overrides['lr']:g}"
    if head and overrides["method"] in ADDED_MODULE_METHODS:
        name += f", head_lr {overrides['head_lr']:g}"
    if overrides["max_steps"] != STUDY[overrides["scale"]]["max_steps"]:
        name += f", cap {overrides['max_steps']}"
    if overrides["eval_steps"] != STUDY[overrides["scale"]]["eval_steps"]:
        name += f", eval every {overrides['eval_steps']}"
    return name


def chosen_lr(records: dict[str, dict], method: str, scale: str) -> float | None:
    """The method's lr best on STS-B dev once its lr grid is complete in `records` (study_records' names), else None."""
    lr_runs = {lr: records.get(f"{method}, lr {lr:g}") for lr in STUDY_GRIDS["lrs"][scale]}
    return chosen_setting(lr_runs) if all(lr_runs.values()) else None


def study_choice(records: dict[str, dict], method: str, scale: str) -> dict | None:
    """The overrides of the method's chosen setting (its lr, then for a method with added modules its head_lr, each
    best on STS-B dev) once its grids are complete in `records` (study_records' names), else None."""
    if (lr := chosen_lr(records, method, scale)) is None:
        return None
    if method not in ADDED_MODULE_METHODS:
        return study_overrides(method, scale, lr)
    heads = {h: records.get(f"{method}, lr {lr:g}, head_lr {h:g}") for h in STUDY_GRIDS["head_lrs"][scale]}
    return study_overrides(method, scale, lr, chosen_setting(heads)) if all(heads.values()) else None


def finer_evaluation(overrides: dict) -> dict:
    """The run evaluated every STUDY_FINE_EVAL steps, its patience scaled to wait as many steps as before."""
    fine = STUDY_FINE_EVAL[overrides["scale"]]
    return {**overrides, "eval_steps": fine, "patience": overrides["patience"] * overrides["eval_steps"] // fine}


# what a method's evaluation schedule is made of: runs alike in these were trained on the same schedule, whatever
# their method's own knobs
SCHEDULE = ("scale", "model_name", "lr", "head_lr", "max_steps", "eval_steps", "patience", "min_delta")


def flagged_at_other_seeds(overrides: dict, flag: str) -> list[int]:
    """The seeds of the edition's protocol (book.seeds under the converged recipe) at which a run of this method on
    this very schedule (SCHEDULE: its lr, cap, evaluation and stopping rule) carries `flag`
    ("kept_first_evaluation" or "still_improving_at_cap" of claims.convergence_of), in the store: the study's
    setting at another seed, or a chapter's variant of the method (BYOPD beside the study's default BYOPC). One
    seed's curve can rise past an early peak that the others show (SimCSE peaks by step 20 at most seeds), or
    still climb at a cap where the study's seed had settled, and a method trains on one schedule for all its
    variants."""
    from ..config import cpu_recipe, resolve

    with cpu_recipe("converged"):
        seeds = [s for s in book.seeds(overrides["scale"]) if s != overrides["seed"]]
    schedule = {k: v for k, v in resolve(overrides=overrides).items() if k in SCHEDULE}
    found = set()
    for path in sorted((runs.results_dir() / overrides["method"]).glob("*.json")):
        cfg, flags = _config_and_flags(str(path), path.stat().st_mtime_ns)
        if cfg.get("seed") in seeds and all(cfg.get(k) == v for k, v in schedule.items()):
            runs.note_read(path)  # read by the store's folder, not by key: logged here for unread_results.py
            if flags[flag]:
                found.add(cfg["seed"])
    return sorted(found)


@functools.lru_cache(maxsize=8192)
def _config_and_flags(path: str, mtime_ns: int) -> tuple[dict, dict]:
    """A record's config and claims.convergence_of flags, read once per version of its file: the appendix asks
    flagged_at_other_seeds about every method's records at each step of each budget chain, in both of its tables."""
    record = json.loads(Path(path).read_text())
    return record.get("config", {}), claims.convergence_of(record)


def flagged(overrides: dict, record: dict, flag: str) -> bool:
    """Whether the study's run or a run on its schedule at another seed carries `flag` (flagged_at_other_seeds)."""
    return claims.convergence_of(record)[flag] or bool(flagged_at_other_seeds(overrides, flag))


def budget_chain(overrides: dict, get) -> list[tuple[dict, dict]]:
    """(overrides, record) of a chosen setting under each budget it needs, from the study's own run: the finer
    evaluation once a run on its schedule kept its first evaluation, then the next cap of STUDY_CAPS while a run on
    its schedule was still improving at its cap (`flagged`: the study's run, or a run at another seed of the
    protocol). It ends at a run `get` does not have (None): a capped run is left out, the finer run ends the chain
    as (overrides, None) (chosen_budget then waits for it)."""
    chain, fine = [], False
    for cap in STUDY_CAPS[overrides["scale"]]:
        capped = at_cap(overrides, cap)
        if (record := get(capped)) is None:
            break
        chain.append((capped, record))
        if not fine and flagged(capped, record, "kept_first_evaluation"):
            overrides, capped, fine = finer_evaluation(overrides), finer_evaluation(capped), True
            chain.append((capped, record := get(capped)))
            if record is None:
                break
        if not flagged(capped, record, "still_improving_at_cap"):
            break
    return chain


def chosen_budget(chain: list[tuple[dict, dict]]) -> tuple[int, int] | None:
    """The method's (cap, eval_steps): the last evaluation interval of the chain (the finer one once a run kept its
    first evaluation); the first cap whose runs are not still improving at it, or, where only the study's own run
    was, whose best the next cap's run beats by less than protocol.DEV_TOLERANCE (another seed's flag is not
    answered by the study seed's gain); the longest when every cap was still improving. None while the chain
    waits for a run."""
    if chain[-1][1] is None:
        return None  # waits for the finer-evaluated run budget_chain asked for
    # one run per cap: a run followed by its finer-evaluated twin at the same cap gives way to it
    capped = [(o, r) for (o, r), after in zip(chain, [*chain[1:], (None, None)])
              if after[0] is None or after[0]["max_steps"] != o["max_steps"]]
    for (overrides, record), (_, longer) in zip(capped, capped[1:]):
        gain = longer["metrics"]["stsb_dev_best"] - record["metrics"]["stsb_dev_best"]
        own = claims.convergence_of(record)["still_improving_at_cap"]
        if not flagged_at_other_seeds(overrides, "still_improving_at_cap") and (not own or gain < protocol.DEV_TOLERANCE):
            return overrides["max_steps"], overrides["eval_steps"]
    last_overrides, last = capped[-1]
    done = (not flagged(last_overrides, last, "still_improving_at_cap")
            or last_overrides["max_steps"] == STUDY_CAPS[last_overrides["scale"]][-1])
    return (last_overrides["max_steps"], last_overrides["eval_steps"]) if done else None


def budget_reasons(chain: list[tuple[dict, dict]]) -> str:
    """What other seeds' runs asked of the budget ("seed 44 still improving at cap 600, eval every 20"), "–" if
    nothing: the flags of flagged_at_other_seeds along the chain, which the study's own curves do not show."""
    words = {"kept_first_evaluation": ("kept its first evaluation", "kept their first evaluation"),
             "still_improving_at_cap": ("still improving", "still improving")}
    reasons = []
    for overrides, _ in chain:
        for flag, (one, several) in words.items():
            if seeds := flagged_at_other_seeds(overrides, flag):
                reasons.append(f"seed{'s' * (len(seeds) > 1)} {', '.join(map(str, seeds))} "
                               f"{several if len(seeds) > 1 else one} at cap {overrides['max_steps']}, "
                               f"eval every {overrides['eval_steps']}")
    return "; ".join(dict.fromkeys(reasons)) or "–"


def recorded_chain(records: dict[str, dict], chosen: dict | None) -> list[tuple[dict, dict]]:
    """budget_chain of a chosen setting (study_choice) over the runs in `records` alone; [] while it is pending."""
    return budget_chain(chosen, lambda o: records.get(study_name(o, head=True))) if chosen else []


def budget_labels(chain: list[tuple[dict, dict]]) -> tuple[str, str]:
    """The chosen cap and evaluation interval as the appendix shows them, with the flag the chosen run still has."""
    budget = chosen_budget(chain) if chain else None
    if budget is None:
        return "pending", "pending"
    flag = claims.convergence_of(chain[-1][1])["flag"] if chain[-1][0]["max_steps"] == budget[0] else None
    return (f"{budget[0]}{' (still improving)' if flag == 'still improving at the cap' else ''}",
            f"{budget[1]}{' (kept its first evaluation)' if flag == 'kept its first evaluation' else ''}")


def study_budget_runs(method: str, scale: str, model_name: str = "", data_dir=None, force: bool = False,
                      allow_stale: bool = True) -> dict[str, dict]:
    """study_name -> the method's chosen setting at seed 42 under each budget it needs (budget_chain; its lr and
    head_lr grids computed first)."""
    lr = chosen_setting(study_lr_runs(method, scale, model_name, data_dir, force, allow_stale))
    head_lr = (chosen_setting(study_head_runs(method, scale, lr, model_name, data_dir, force, allow_stale))
               if method in ADDED_MODULE_METHODS else None)
    chain = budget_chain(study_overrides(method, scale, lr, head_lr, model_name),
                         lambda o: train(o, data_dir=data_dir, force=force, allow_stale=allow_stale))
    return {study_name(overrides, head=True): record for overrides, record in chain}


def convergence_table(records: dict[str, dict]) -> pd.DataFrame:
    """One row per convergence-study run: its best STS-B dev, the step it was kept at, the steps it trained and
    its flag (still improving at the cap, or kept its first evaluation), if any."""
    rows = {name: {"STS-B dev (best)": round(r["metrics"]["stsb_dev_best"], 2), "kept step": r["metrics"]["best_step"],
                   "steps trained": r["steps"], "flag": claims.convergence_of(r)["flag"] or "–"}
            for name, r in records.items()}
    return pd.DataFrame.from_dict(rows, orient="index")


def study_panels(records: dict[str, dict]) -> dict[str, dict[str, dict]]:
    """method -> {its setting ("lr x[, head_lr y][, cap z]") -> record}: the study's runs grouped for one panel each."""
    panels: dict[str, dict[str, dict]] = {}
    for name, record in records.items():
        method, setting = name.split(", ", 1)
        panels.setdefault(method, {})[setting] = record
    return panels


def study_choices(records: dict[str, dict], scale: str) -> pd.DataFrame:
    """Per method, the lr (and head_lr) its complete grid chooses on STS-B dev and its budget (chosen_budget);
    "pending" while a grid or the budget check is incomplete."""
    rows = {}
    for method in STUDY_METHODS:
        done = sum(f"{method}, lr {lr:g}" in records for lr in STUDY_GRIDS["lrs"][scale])
        lr, chosen = chosen_lr(records, method, scale), study_choice(records, method, scale)
        row = {"lr runs": f"{done} of {len(STUDY_GRIDS['lrs'][scale])}", "chosen lr": f"{lr:g}" if lr else "pending"}
        if method in ADDED_MODULE_METHODS:
            row["chosen head_lr"] = f"{chosen['head_lr']:g}" if chosen else "pending"
        chain = recorded_chain(records, chosen)
        row["chosen cap"], row["evaluate every"] = budget_labels(chain)
        row["other seeds' runs"] = budget_reasons(chain) if chain else "–"
        rows[method] = row
    frame = pd.DataFrame.from_dict(rows, orient="index").fillna("–")
    return frame[[c for c in ("lr runs", "chosen lr", "chosen head_lr", "chosen cap", "evaluate every",
                              "other seeds' runs") if c in frame]]


def presets_beside_study(records: dict[str, dict], scale: str) -> pd.DataFrame:
    """Per method, each preset the study chooses (lr, head_lr, cap, eval_steps, and the rule: patience, min_delta) as
    "the converged recipe's / chosen" (settings.CPU_RECIPES), "pending" where the study has not chosen it yet,
    whether all of them follow it, and whether the method's chapter is being recomputed at the cap the study chose
    (settings.CAPS_PENDING: every other preset follows it)."""
    from ..config import resolve
    from ..settings import CAPS_PENDING

    complete = all(study_choice(records, m, scale) for m in STUDY_METHODS)
    rule = chosen_rule(rule_table(records)) if complete else None
    rows = {}
    for method in STUDY_METHODS:
        cfg = resolve(overrides={"method": method, "scale": scale}, recipe="converged")
        chosen = study_choice(records, method, scale)
        chain = recorded_chain(records, chosen)
        budget = chosen_budget(chain) if chain else None
        pairs = {"lr": (cfg["lr"], chosen and chosen["lr"]), "cap": (cfg["max_steps"], budget and budget[0]),
                 "eval_steps": (cfg["eval_steps"], budget and budget[1]),
                 "patience": (cfg["patience"], rule and budget and rule[0] * STUDY[scale]["eval_steps"] // budget[1]),
                 "min_delta": (cfg["min_delta"], rule and rule[1])}
        if method in ADDED_MODULE_METHODS:
            pairs["head_lr"] = (cfg["head_lr"], chosen and chosen["head_lr"])
        rows[method] = {name: f"{have:g} / {'pending' if want is None else f'{want:g}'}"
                        for name, (have, want) in pairs.items()}
        rows[method]["follows the study"] = all(have == want for have, want in pairs.values())
        pending = CAPS_PENDING.get(method, {}).get("max_steps")
        rows[method]["recompute at the chosen cap"] = (
            "pending" if pending and pending == pairs["cap"][1] and all(
                have == want for name, (have, want) in pairs.items() if name != "cap") else "–")
    frame = pd.DataFrame.from_dict(rows, orient="index").fillna("–")
    return frame[["lr", "head_lr", "cap", "eval_steps", "patience", "min_delta", "follows the study",
                  "recompute at the chosen cap"]]


def study_plan(scale: str) -> list[dict]:
    """The study's first step in the order it is computed: SimCSE's and supervised SimCSE's learning rates (the
    chapter 01 recipe), then every other method at the grid's first lr, then at the next; the background filler
    (scripts/run_cpu_edition.py convergence) splits it into lanes."""
    lrs, first = STUDY_GRIDS["lrs"][scale], ["simcse", "simcse_sup"]
    return ([study_overrides(method, scale, lr) for method in first for lr in lrs] +
            [study_overrides(method, scale, lr) for lr in lrs for method in STUDY_METHODS if method not in first])
