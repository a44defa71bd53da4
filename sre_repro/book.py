"""What the chapters share: the editions (PLMs and seeds per scale), cached training and evaluation runs,
grids and the rows derived from runs. Each chapter's own plan is its module in sre_repro/chapters/.

`smoke` runs in seconds on a random tiny BERT (tests/CI); `cpu` is the edition this book shows (all runs on
2 CPU cores, committed to results/); `paper` is the papers' setting (bert-base, full data, needs a GPU and
internet for the weights).
"""
from __future__ import annotations

import ast
import json
import types
from functools import lru_cache

import numpy as np
import pandas as pd

from .errors import SreError
from .evaluate.cached import evaluate_model
from .report import sts_row
from .runs import check_named_data_dir, results_dir, write_json_atomic
from .settings import REPO_ROOT
from .train import describe_weights, train

# plms: the PLMs each method trains from; also_evaluated: models shown in the baselines chapter only.
EDITION = {
    "smoke": {"plms": ["tiny-random"], "seeds": [42, 43], "also_evaluated": []},
    # The cpu edition trains from the book's own small raw BERT (models/sre-bert, chapter 00b);
    # all-MiniLM-L6-v2 is already sentence-tuned, so it appears only as a no-training reference.
    "cpu": {"plms": ["sre-bert"], "seeds": [42, 43, 44], "also_evaluated": ["minilm"]},
    "paper": {"plms": ["bert-base-uncased"], "seeds": [42, 43, 44], "also_evaluated": []},
}
STAND_IN_CAVEAT = ("Caveat: the cpu edition's PLM, sre-bert, is a small BERT pretrained by this book on ~5M tokens; "
                   "it is far smaller and weaker than BERT-base, so absolute numbers are not comparable to the "
                   "papers'. Relative claims are what this edition tests.")
BASELINE_POOLERS = ["cls", "avg", "avg_first_last", "avg_first_last_emb", "avg_top2"]
WHITENING_POOLER = "avg_first_last"


def grid(grids: dict, name: str, scale: str, chosen=None) -> list:
    """A chapter grid (`grids`: the chapter module's GRIDS, name -> {scale or "default": values}): `chosen`
    when given, else the scale's."""
    _check_scale(scale)
    if name not in grids:
        raise SreError(f"unknown grid {name!r}: choose from {', '.join(grids)}")
    chosen = as_list(chosen, name)
    return chosen if chosen else list(grids[name].get(scale, grids[name]["default"]))


def as_list(value, name: str) -> list:
    """A list parameter; papermill's `-p seeds "[1, 2]"` passes the text, which is read as a Python list."""
    if isinstance(value, str):
        text = value
        try:
            value = ast.literal_eval(text) if text.strip() else []
        except (ValueError, SyntaxError):
            value = None
        if not isinstance(value, (list, tuple)):
            raise SreError(f"{name} must be a list such as \"[1, 2]\", got {text!r}: write the brackets")
    if value is not None and not isinstance(value, (list, tuple)):
        raise SreError(f"{name} must be a list such as [1, 2], got {value!r}: write -p {name} \"[{value}]\"")
    return list(value or [])


IPYTHON_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}


@lru_cache(maxsize=None)
def notebook_parameters(notebook: str) -> dict[str, str]:
    """The parameters a chapter's notebook declares (its cell tagged `parameters`, as papermill reads it): name ->
    the type its annotation states."""
    import papermill

    found = papermill.inspect_notebook(str(REPO_ROOT / "notebooks" / f"{notebook}.ipynb"))
    return {name: p["inferred_type_name"] for name, p in found.items()}


# a value papermill may hand a parameter of each declared type (a list also as its text: as_list reads it)
ACCEPTED = {"str": (str,), "bool": (bool,), "int": (int,), "float": (int, float), "list": (list, tuple, str)}


# The cpu recipe (settings.CPU_RECIPES) each chapter's records were computed with: "fixed-budget" until the chapter
# is recomputed under the convergence study's recipe; a chapter not listed (none trains) has "converged"
CHAPTER_RECIPES = {"cpu_recipe": "fixed-budget"}


def check_parameters(notebook: str, namespace: dict) -> None:
    """Stop a chapter given a parameter it does not declare (papermill only warns, and a typo such as
    `-p scal smoke` would run the whole chapter at its default scale), then put the chapter's cpu recipe in force
    (CHAPTER_RECIPES) and its `quick` parameter's mode (config.use_quick_mode; the cell magic %%not_in_quick_mode
    skips a cell in it). Call it first thing after the imports: any plain value in the namespace then is a declared
    parameter or one that papermill injected."""
    from .config import use_cpu_recipe, use_quick_mode

    known = notebook_parameters(notebook)
    unknown = sorted(name for name, value in namespace.items()
                     if not name.startswith("_") and name not in known and name not in IPYTHON_NAMES
                     and not isinstance(value, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)))
    if unknown:
        raise SreError(f"unknown parameter {unknown[0]!r} for notebooks/{notebook}.ipynb: the known ones are "
                       f"{', '.join(known)} (papermill --help-notebook notebooks/{notebook}.ipynb)")
    for name, kind in known.items():
        if name not in namespace:
            continue
        value = namespace[name]
        if not isinstance(value, ACCEPTED.get(kind, (object,))) or (kind in ("int", "float") and isinstance(value, bool)):
            takes, example = {"bool": ("True or False", "True"), "int": ("a whole number", "3"),
                              "float": ("a number", "0.1"), "list": ("a list", '"[1, 2]"')}.get(kind, ("text", "x"))
            raise SreError(f"parameter {name} of notebooks/{notebook}.ipynb takes {takes}, got {value!r}: write e.g. "
                           f"-p {name} {example}")
    use_cpu_recipe(CHAPTER_RECIPES.get(notebook, "converged"))
    use_quick_mode(namespace.get("quick", False))
    if (shell := _ipython()) is not None:
        shell.register_magic_function(_not_in_quick_mode, "cell", "not_in_quick_mode")


# The chapters that take `quick`, and where scripts/time_quick.py writes their measured wall time from nothing
QUICK_CHAPTERS = {
    "00_baselines": "the PLM's rows without training, and averaged GloVe",
    "00b_stand_in_plm": "SimCSE from the stand-in against its best pooling without training",
    "01_simcse": "unsupervised SimCSE against the raw PLM",
    "sarcse": "SimCSE and SARCSE", "byop": "SimCSE, IFM at one margin and the four BYOP variants",
    "pt_bert": "SimCSE and PT-BERT (the paper's and the code's reading)",
    "slt_fai": "ConSERT and SimCSE, each with and without SLT-FAI", "paser": "SimCSE, SimCSE + MLM and PaSeR",
    "cpu_recipe": "SimCSE at each learning rate of the recipe's grid"}
QUICK_TIMES = "quick_times.json"


def quick_times(root=None) -> dict:
    """scale -> chapter -> its quick-mode measurement (seconds, hardware, when), as scripts/time_quick.py wrote it."""
    path = results_dir(root) / QUICK_TIMES
    return json.loads(path.read_text()) if path.exists() else {}


def save_quick_time(chapter: str, scale: str, measurement: dict, root=None) -> None:
    times = quick_times(root)
    times.setdefault(scale, {})[chapter] = measurement
    write_json_atomic(results_dir(root) / QUICK_TIMES, times)


def quick_minutes(chapter: str, scale: str = "cpu", root=None) -> str:
    """A chapter's measured quick-mode time as its page states it ("about N minutes on 2 CPU cores"), or that it
    is not measured yet."""
    found = quick_times(root).get(scale, {}).get(chapter)
    if not found:
        return "not measured yet (scripts/time_quick.py)"
    cores = found["hardware"]["cpu_count"]
    return f"{found['seconds'] / 60:.0f} minutes from nothing on {cores} CPU core{'s' if cores != 1 else ''} (measured)"


QUICK_SKIPPED = "Not run in quick mode: this cell needs the chapter's full runs (rerun with -p quick False)."


def _ipython():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def _not_in_quick_mode(line: str, cell: str) -> None:
    """Cell magic %%not_in_quick_mode (registered by check_parameters): run the cell, unless quick mode is on."""
    from .config import quick_mode

    if quick_mode():
        print(QUICK_SKIPPED)
        return
    _ipython().run_cell(cell).raise_error()  # an error fails the chapter as in any other cell


def _check_scale(scale: str) -> None:
    if scale not in EDITION:
        raise SreError(f"unknown scale {scale!r}: choose from {', '.join(EDITION)}")


def plms(scale: str, model_name: str = "") -> list[str]:
    _check_scale(scale)
    return [model_name] if model_name else list(EDITION[scale]["plms"])


def baseline_models(scale: str, model_name: str = "") -> list[str]:
    """The PLMs of `plms` and the edition's no-training references."""
    return [model_name] if model_name else [*EDITION[scale]["plms"], *EDITION[scale]["also_evaluated"]]


# The stopping rule a fixed-budget record is judged by (claims.run_flag): the scale's preset when it stops by a
# rule, else this one (patience, min_delta), the appendix "The cpu recipe" candidate its convergence study checks
JUDGING_RULE = {"smoke": (3, 0.0), "cpu": (5, 0.1), "paper": (5, 0.1)}


def judging_rule(scale: str) -> tuple[int, float]:
    from .config import resolve

    preset = resolve(overrides={"method": "simcse", "scale": scale})
    return (preset["patience"], preset["min_delta"]) if preset["patience"] else JUDGING_RULE[scale]


def pending_cap(method: str, scale: str) -> str:
    """What a chapter says while the recipe study's longer cap for `method` waits for the chapter's runs at it
    (settings.CAPS_PENDING); "" when none waits, at another scale, or in another recipe."""
    from .config import cpu_recipe_in_force, resolve
    from .settings import CAPS_PENDING

    if scale != "cpu" or cpu_recipe_in_force() != "converged" or method not in CAPS_PENDING:
        return ""
    cap = CAPS_PENDING[method]["max_steps"]
    now = resolve(overrides={"method": method, "scale": scale})["max_steps"]
    return (f"The recipe study now chooses a cap of {cap} steps for this recipe, because runs of it at other seeds "
            f"than the study's were still improving at {now} (appendix \"The cpu recipe\"). Its runs at {cap} steps "
            f"are not all computed yet (`scripts/fill_records.py plan` lists those missing); until they are, this "
            f"page reads its {now}-step runs, and each verdict that rests on one still improving at its cap says so.")


# A chapter recomputed under the protocol (the converged cpu recipe) judges its claims on at least five seeds
PROTOCOL_SEEDS = {"cpu": [42, 43, 44, 45, 46]}


def seeds(scale: str, chosen=None, protocol: dict[str, list[int]] | None = None) -> list[int]:
    """The seeds a chapter trains: `chosen`, else the edition's (under the converged cpu recipe PROTOCOL_SEEDS, or
    the chapter's own `protocol` where its headline needs more to see the paper's effect); the first of them alone
    in quick mode."""
    from .config import cpu_recipe_in_force, quick_mode

    _check_scale(scale)
    chosen = as_list(chosen, "seeds")
    protocol_seeds = (protocol or PROTOCOL_SEEDS).get(scale) if cpu_recipe_in_force() == "converged" else None
    chosen = chosen or list(protocol_seeds or EDITION[scale]["seeds"])
    return chosen[:1] if quick_mode() else chosen


def baselines(models: list[str], precision: str = "fp32", data_dir=None, force: bool = False,
              allow_stale: bool = True, poolers: list[str] | None = None, scale: str = "") -> dict[str, dict]:
    """Row name -> eval result, for every pooler of every model, whitening, and averaged GloVe; with
    `poolers`, only those poolers of each model (a chapter that shows two rows evaluates two). `scale`: score
    the scale's evenly spaced subset of each STS set, as its training runs do (smoke), instead of all pairs."""
    from .config import SCALE_PRESETS

    check_named_data_dir(data_dir)
    max_pairs = SCALE_PRESETS.get(scale, {}).get("eval_max_pairs", 0)
    out = {}
    for model in models:
        for pooler in poolers or BASELINE_POOLERS:
            out[f"{model} {pooler}"] = evaluate_model(data_dir, force, model_name=model, pooler=pooler,
                                                      precision=precision, allow_stale=allow_stale, max_pairs=max_pairs)
        if not poolers:
            out[f"{model} {WHITENING_POOLER} + whitening"] = evaluate_model(
                data_dir, force, model_name=model, pooler=WHITENING_POOLER, whiten=True, precision=precision,
                allow_stale=allow_stale, max_pairs=max_pairs)
    if not poolers:
        out["glove avg (50d 6B)"] = evaluate_model(data_dir, force, model_name="glove", allow_stale=allow_stale,
                                                   max_pairs=max_pairs)
    return out


def plm_dev(plm: str, pooler: str, scale: str, data_dir=None, force: bool = False) -> float:
    """The untrained PLM's STS-B dev score with `pooler`, on the dev pairs the scale's runs score (cached)."""
    from .config import SCALE_PRESETS

    record = evaluate_model(data_dir, force, model_name=plm, pooler=pooler, tasks="stsb_dev", allow_stale=True,
                            max_pairs=SCALE_PRESETS[scale].get("eval_max_pairs", 0))
    return record["metrics"]["stsb_dev"]


def train_seeds(method: str, scale: str, seed_list: list[int], model_name: str = "", data_dir=None,
                force: bool = False, allow_stale: bool = True, per_seed: dict | None = None, **overrides) -> list[dict]:
    """One cached training run per seed (`per_seed`: {seed: overrides} for what differs between seeds)."""
    check_named_data_dir(data_dir)
    extra = {k: v for k, v in overrides.items() if v not in ("", None)}
    if model_name:
        extra["model_name"] = model_name
    return [train({"method": method, "scale": scale, "seed": s, **extra, **(per_seed or {}).get(s, {})},
                  data_dir=data_dir, force=force, allow_stale=allow_stale) for s in seed_list]


def validate_plan(groups: dict, scale: str, **common) -> int:
    """Resolve the config of every run of a chapter's plan (group name -> (method, seeds, overrides)); an SreError
    names a bad one before anything trains. Returns how many runs the plan holds."""
    from .config import resolve

    extra = {k: v for k, v in common.items() if v not in ("", None)}
    for method, seed_list, overrides in groups.values():
        for seed in seed_list:
            resolve(overrides={"method": method, "scale": scale, "seed": seed, **overrides, **extra})
    return sum(len(seed_list) for _, seed_list, _ in groups.values())


def run_plan(groups: dict, scale: str, data_dir=None, force: bool = False, **common) -> dict[str, list[dict]]:
    """A chapter's plan run: group name -> its run records (cached runs are read, the others trained)."""
    return {name: train_seeds(method, scale, seed_list, data_dir=data_dir, force=force, **overrides, **common)
            for name, (method, seed_list, overrides) in groups.items()}


def per_run(groups: dict[str, list[dict]], method: str, read, data_dir=None) -> dict[str, dict]:
    """A record of each run of `method` in a chapter's groups, read once (`read(run, data_dir)`: a cached
    evaluation of its kept weights): config hash -> the record."""
    found = {}
    for run in (r for group in groups.values() for r in group if r["config"]["method"] == method):
        if run["config_hash"] not in found:  # a run two groups share (a grid's preset row) is read once
            found[run["config_hash"]] = read(run, data_dir)
    return found


@lru_cache(maxsize=8)
def mlm_baseline(model_name: str, train_data: str, max_len: int, data_dir=None) -> float:
    """The MLM term's trivial baseline for runs of `model_name` on `train_data` (masked_lm.target_entropy of its
    training sentences): a reading of the data, computed in seconds, so no record holds it."""
    from .encoder import load_tokenizer
    from .masked_lm import target_entropy
    from .methods.common import training_sentences

    sentences = training_sentences({"train_data": train_data, "method": "the MLM term"}, data_dir)
    return target_entropy(load_tokenizer(model_name), sentences, max_len)


def best_row(results: dict[str, dict], prefix: str = "", poolings_only: bool = False) -> str:
    """The name of the result with the highest average STS (among names starting with `prefix`; with
    `poolings_only`, among the training-free poolings, leaving out whitening, which fits a transformation)."""
    names = [name for name in results if name.startswith(prefix) and not (poolings_only and "whitening" in name)]
    return max(names, key=lambda name: results[name]["metrics"]["sts"]["avg"])


def raw_counterpart(raw: dict[str, dict], plm: str, run: dict) -> dict:
    """The untrained PLM's evaluation with the pooler a trained run is tested with ([CLS] for cls_mlp)."""
    pooler = run["config"]["eval_pooler"]
    return raw[f"{plm} {pooler if pooler in BASELINE_POOLERS else 'cls'}"]


def rows(results: dict[str, dict]) -> dict[str, list[float]]:
    return {name: sts_row(r["metrics"]["sts"]) for name, r in results.items()}


def ranked_by_dev(groups: dict[str, list[dict]]) -> list[str]:
    """Names of run groups, best first by the mean STS-B dev score of their runs (the test sets stay unseen)."""
    return sorted(groups, key=lambda name: np.mean([r["metrics"]["stsb_dev_best"] for r in groups[name]]), reverse=True)


def best_by_dev(grid: dict, name: str):
    """The setting (key of `grid`: setting -> {run name -> result}) whose run `name` scored best on STS-B dev."""
    return ranked_by_dev({setting: [runs[name]] for setting, runs in grid.items()})[0]


def curves(runs: dict[str, dict], *keys: str) -> pd.DataFrame:
    """Long table of dev-curve values (one row per run, step and key) for the training-dynamics figures."""
    rows = [{"run": name, "step": point["step"], "metric": key, "value": point[key]}
            for name, run in runs.items() for point in run["dev_curve"] for key in keys if key in point]
    return pd.DataFrame(rows)


def on_gpu(record: dict) -> bool:
    """Whether a record was computed on a GPU (its `hardware` names a CUDA device)."""
    return bool((record.get("hardware") or {}).get("cuda"))


def weights_tested(evaluation: dict, run: dict) -> tuple[bool, str]:
    """Which weights an evaluation of a run's kept weights tested: (the run's own?, a phrase). The evaluation's record
    says where it names them (train.describe_weights); one that does not (older, or made from a copy that kept no
    provenance) is read from the two records' hardware (a GPU record evaluated on a CPU tested a retrain, a sibling)."""
    if (weights := evaluation.get("weights")) is not None:
        return weights["same"], describe_weights(weights)
    if on_gpu(run) and not on_gpu(evaluation):
        return False, "a CPU retrain of a record computed on a GPU, a sibling of its weights (the arithmetic differs)"
    return True, "the run's own kept weights, by its hardware (this evaluation does not record whether it retrained)"


def start_weights(records: list[dict], start: str) -> str:
    """Which weights each run started from (its record's starts_from[start]["weights"]), as a sentence's clause:
    the start's own kept weights, or a retrain, a sibling of them, named per seed."""
    said = {r["seed"]: (r.get("starts_from") or {}).get(start, {}).get("weights") for r in records}
    if any(w is None for w in said.values()):
        unknown = ", ".join(str(seed) for seed, w in said.items() if w is None)
        return f"not recorded for seed {unknown} (records computed before runs kept it)"
    siblings = {seed: w for seed, w in said.items() if not w["same"]}
    if not siblings:
        return "in every seed, the start run's own kept weights"
    return "; ".join(f"seed {seed}: {describe_weights(w)}" for seed, w in siblings.items()) + (
        "; every other seed, the start run's own kept weights" if len(siblings) < len(said) else "")


def hardware_line(groups: dict[str, list[dict]], method: str, label: str, list_up_to: int = 12) -> str:
    """A Needs line's clause from the records' hardware: how many of the distinct training runs shown ran on a CPU,
    with the median minutes of a `method` run there (named `label`), and how many on a GPU, with the device names
    the records give and the runs (when at most `list_up_to`)."""
    trained = list({r["config_hash"]: r for g in groups.values() for r in g}.values())
    gpus = sorted({r["hardware"]["cuda"] for r in trained if on_gpu(r)})
    on_a_gpu = sorted(f"{name} seed {r['seed']}" for name, g in groups.items() for r in g if on_gpu(r))
    cpu_minutes = [r["wall_seconds"] / 60 for r in trained if r["config"]["method"] == method and not on_gpu(r)]
    gpu_count = sum(on_gpu(r) for r in trained)
    line = f"{len(trained) - gpu_count} of its {len(trained)} training runs ran on a CPU"
    if cpu_minutes:
        line += f" ({label} run, one core beside a second run: {np.median(cpu_minutes):.0f} minutes, median)"
    if gpu_count:
        line += f", {gpu_count} on a GPU ({', '.join(gpus)}" + (f": {', '.join(on_a_gpu)})" if len(on_a_gpu) <= list_up_to else ")")
    return line


def total_minutes(*groups) -> float:
    """Measured minutes behind a chapter with nothing cached, on a CPU: the wall time of every distinct run and
    evaluation it shows (records nested in lists or dicts; each counted once). A run computed on a GPU (its record
    names one) counts its steps at the CPU seconds per step of the CPU runs of its kind among them, at its evaluation
    interval where there are such runs; its GPU time only where there are none."""
    seen: dict[str, dict] = {}

    def visit(item):
        if isinstance(item, dict) and "config_hash" in item:
            seen[f"{item.get('kind')}/{item['config_hash']}"] = item
        elif isinstance(item, dict):
            for value in item.values():
                visit(value)
        elif isinstance(item, (list, tuple)):
            for value in item:
                visit(value)

    for group in groups:
        visit(group)

    def keys(record):  # the finer key first: the same kind at the same evaluation interval
        return [(record.get("kind"), (record.get("config") or {}).get("eval_steps")), record.get("kind")]

    rates: dict = {}
    for record in seen.values():
        if not on_gpu(record) and record.get("steps"):
            for key in keys(record):
                rates.setdefault(key, []).append(record.get("wall_seconds", 0.0) / record["steps"])
    seconds = 0.0
    for record in seen.values():
        rate = next((rates[key] for key in keys(record) if key in rates), None) if on_gpu(record) else None
        seconds += float(np.mean(rate)) * record["steps"] if rate and record.get("steps") else record.get("wall_seconds", 0.0)
    return seconds / 60


