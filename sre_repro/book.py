"""What each chapter runs at each scale, so that the notebooks stay thin (calls, tables, figures, prose).

`smoke` runs in seconds on a random tiny BERT (tests/CI); `cpu` is the edition this book shows (all runs on
2 CPU cores, committed to results/); `paper` is the papers' setting (bert-base, full data, needs a GPU and
internet for the weights).
"""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import SreError
from .evaluate.model import evaluate_model
from .report import sts_row
from .train import train

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


# The chapters' grids; smoke keeps one or two points so that CI stays fast (a notebook parameter of []
# means "the scale's grid").
# The cpu edition runs a subset of the SARCSE and BYOP appendix grids so that a chapter stays near an hour on
# 2 cores (the full grids cost ~30 more minutes each); the chapters say so, and their list parameters
# (`-p batch_sizes`, `-p thetas`, `-p byopc_margins`, `-p perturbations`) run the rest.
GRIDS = {
    "sarcse_batch_sizes": {"smoke": [4, 8], "cpu": [32, 64, 128, 512], "default": [32, 64, 128, 192, 256, 512]},
    "sarcse_thetas": {"smoke": [0.1, 0.5], "cpu": [0.0, 0.1, 0.3, 0.6], "default": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6]},
    "ifm_margins": {"smoke": [0.1], "default": [0.01, 0.05, 0.1]},
    # paper: Appendix B's m in [0.01, 0.10] by 0.01
    # cpu: the range's two ends (0.01 is Table 6's BYOPC margin, so only 0.1 is an extra run)
    "byopc_margins": {"smoke": [0.01], "cpu": [0.01, 0.1], "paper": [round(0.01 * k, 2) for k in range(1, 11)],
                      "default": [0.01, 0.03, 0.05, 0.07, 0.1]},
    # cpu: Table 6's two BYOPD perturbations for BERT-base (n- single, p+n- multi-task), each tried with the other loss
    "byopd_perturbations": {"smoke": ["n-"], "cpu": ["n-", "p+n-"], "default": ["p-n-", "p+n-", "p+", "p-", "n-"]},
}


def grid(name: str, scale: str, chosen=None) -> list:
    """A chapter grid: `chosen` when given, else the scale's."""
    _check_scale(scale)
    if name not in GRIDS:
        raise SreError(f"unknown grid {name!r}: choose from {', '.join(GRIDS)}")
    chosen = as_list(chosen, name)
    return chosen if chosen else list(GRIDS[name].get(scale, GRIDS[name]["default"]))


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
    return list(value or [])


def _check_scale(scale: str) -> None:
    if scale not in EDITION:
        raise SreError(f"unknown scale {scale!r}: choose from {', '.join(EDITION)}")


def plms(scale: str, model_name: str = "") -> list[str]:
    _check_scale(scale)
    return [model_name] if model_name else list(EDITION[scale]["plms"])


def baseline_models(scale: str, model_name: str = "") -> list[str]:
    """The PLMs of `plms` and the edition's no-training references."""
    return [model_name] if model_name else [*EDITION[scale]["plms"], *EDITION[scale]["also_evaluated"]]


def seeds(scale: str, chosen=None) -> list[int]:
    _check_scale(scale)
    chosen = as_list(chosen, "seeds")
    return chosen if chosen else list(EDITION[scale]["seeds"])


def baselines(models: list[str], precision: str = "fp32", data_dir=None, force: bool = False,
              allow_stale: bool = True, poolers: list[str] | None = None) -> dict[str, dict]:
    """Row name -> eval result, for every pooler of every model, whitening, and averaged GloVe; with
    `poolers`, only those poolers of each model (a chapter that shows two rows evaluates two)."""
    out = {}
    for model in models:
        for pooler in poolers or BASELINE_POOLERS:
            out[f"{model} {pooler}"] = evaluate_model(data_dir, force, model_name=model, pooler=pooler,
                                                      precision=precision, allow_stale=allow_stale)
        if not poolers:
            out[f"{model} {WHITENING_POOLER} + whitening"] = evaluate_model(
                data_dir, force, model_name=model, pooler=WHITENING_POOLER, whiten=True, precision=precision,
                allow_stale=allow_stale)
    if not poolers:
        out["glove avg (50d 6B)"] = evaluate_model(data_dir, force, model_name="glove", allow_stale=allow_stale)
    return out


def train_seeds(method: str, scale: str, seed_list: list[int], model_name: str = "", data_dir=None,
                force: bool = False, allow_stale: bool = True, per_seed: dict | None = None, **overrides) -> list[dict]:
    """One cached training run per seed (`per_seed`: {seed: overrides} for what differs between seeds)."""
    extra = {k: v for k, v in overrides.items() if v not in ("", None)}
    if model_name:
        extra["model_name"] = model_name
    return [train({"method": method, "scale": scale, "seed": s, **extra, **(per_seed or {}).get(s, {})},
                  data_dir=data_dir, force=force, allow_stale=allow_stale) for s in seed_list]


# Table 3's student seeds per scale: the first n of the chapter's seeds (all where a scale is not named). At
# cpu two, to keep the chapter near an hour on 2 cores (a third costs ~6 min); each is still taught by two
# SimCSE runs of the chapter's seeds.
RANKCSE_STUDENTS = {"cpu": 2}


def rankcse_seeds(scale: str, seed_list: list[int], chosen=None) -> list[int]:
    """Table 3's student seeds: `chosen` when given, else the scale's first n of `seed_list`."""
    _check_scale(scale)
    chosen = as_list(chosen, "rankcse_seeds")
    return chosen if chosen else seed_list[:RANKCSE_STUDENTS.get(scale, len(seed_list))]


def leave_one_out_teachers(students: list[int], pool: list[int] | None = None,
                           method: str = "simcse") -> dict[int, dict]:
    """RankCSE's teachers per student seed: the book's `method` runs at the first two other seeds of `pool`
    (default: the students), so the teachers are the chapter's own SimCSE rows and no student is taught by a
    run of its own seed. Where the pool has no other seed: the method's default teachers ({})."""
    others = {s: [t for t in (pool or students) if t != s][:2] for s in students}
    return {s: {"teachers": ",".join(f"{method}:{t}" for t in others[s])} if others[s] else {} for s in students}


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


def stand_in_log(path=None) -> dict:
    """The committed stand-in PLM's training log (models/sre-bert/training_log.json) and its folder. A model
    pretrained in stages has one log per stage under "stages" (oldest first); "curve" runs across them, its
    steps counted from the first stage's start, and "train_seconds" is their sum."""
    import json

    from .encoder import resolve_model_path

    folder = Path(path or resolve_model_path("sre-bert"))
    log_file = folder / "training_log.json"
    if not log_file.is_file():
        raise SreError(f"{log_file} is missing: run `python -m sre_repro pretrain --config configs/sre-bert.yaml`")
    last = json.loads(log_file.read_text())
    stages = [*last.pop("earlier_stages", []), last]
    curve, offset = [], 0
    for number, stage in enumerate(stages, start=1):
        curve += [{**point, "step": offset + point["step"], "stage": number} for point in stage["curve"]]
        offset += stage["config"]["max_steps"]
    return {**last, "stages": stages, "curve": curve, "train_seconds": sum(s["train_seconds"] for s in stages),
            "path": str(folder)}


def token_norms(model: str, data_dir=None) -> pd.DataFrame:
    """Per vocabulary entry: the L2 norm of the model's input token embedding and the token's BookCorpus
    count (SLT-FAI's counts; the vocabulary must be bert-base-uncased's). Entries never seen are dropped."""
    from .data.corpora import bookcorpus_token_counts
    from .encoder import load_backbone

    backbone, tokenizer = load_backbone(model)
    counts = bookcorpus_token_counts(data_dir)
    vocab = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    if vocab != list(counts):
        raise SreError(f"model {model!r} does not use bert-base-uncased's vocabulary: token frequencies do not apply")
    norms = backbone.get_input_embeddings().weight.detach().norm(dim=1).numpy()
    frame = pd.DataFrame({"token": vocab, "norm": norms, "count": list(counts.values())})
    return frame[frame["count"] > 0].reset_index(drop=True)


def same_budget(scale: str, method: str, batch_size: int) -> dict:
    """Overrides that train with `batch_size` on as many sentences as the scale's preset does (SARCSE's
    batch-size table keeps the data fixed): steps = preset steps x preset batch / batch_size."""
    from .config import resolve

    preset = resolve(overrides={"method": method, "scale": scale})
    if not preset["max_steps"]:
        return {"batch_size": batch_size}  # epoch-based presets: the data budget is the corpus already
    steps = max(1, round(preset["max_steps"] * preset["batch_size"] / batch_size))
    return {"batch_size": batch_size, "max_steps": steps, "eval_steps": max(1, min(preset["eval_steps"], steps // 5 or 1))}


def stsb_test_gold(data_dir=None):
    from .data.sts import load_split

    return load_split("STSBenchmark", "test", data_dir).gold


def cosine_spread(runs: dict[str, dict], gold) -> pd.DataFrame:
    """Variance of the predicted STS-B test cosine within each gold-score group (SARCSE's Appendix D)."""
    import numpy as np

    from .plots import GOLD_GROUPS

    gold = np.asarray(gold)
    out = {}
    for name, run in runs.items():
        cos = np.asarray(run["metrics"]["stsb_test_cosine"])
        out[name] = {f"{lo}-{hi}": float(cos[(gold >= lo) & ((gold < hi) if hi < 5 else (gold <= hi))].var())
                     for lo, hi in GOLD_GROUPS}
    return pd.DataFrame(out).T


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
    import numpy as np

    by_seed = {r["seed"]: r["metrics"]["sts"]["avg"] for r in preset}
    missing = [r["seed"] for r in larger if r["seed"] not in by_seed]
    if missing:
        raise SreError(f"no preset-batch run for seed(s) {missing}: train both batch sizes with the same seeds")
    return np.array([r["metrics"]["sts"]["avg"] - by_seed[r["seed"]] for r in larger])


def ranked_by_dev(groups: dict[str, list[dict]]) -> list[str]:
    """Names of run groups, best first by the mean STS-B dev score of their runs (the test sets stay unseen)."""
    return sorted(groups, key=lambda name: np.mean([r["metrics"]["stsb_dev_best"] for r in groups[name]]), reverse=True)


def transfer_variants(scale: str, ranked: list[str], chosen=None) -> list[str]:
    """The BYOP variants of Table 10: `chosen` when given, else the scale's number of the best on dev."""
    chosen = as_list(chosen, "transfer_variants")
    unknown = [name for name in chosen if name not in ranked]
    if unknown:
        raise SreError(f"unknown BYOP variant {unknown[0]!r} in transfer_variants: choose from {', '.join(ranked)}")
    return chosen or ranked[:TRANSFER_PROTOCOL[scale]["byop_variants"]]


def best_by_dev(grid: dict, name: str):
    """The setting (key of `grid`: setting -> {run name -> result}) whose run `name` scored best on STS-B dev."""
    return ranked_by_dev({setting: [runs[name]] for setting, runs in grid.items()})[0]


def paper_plm(model_name: str) -> str:
    """The BYOP paper's PLM label whose settings a model uses: its own where it is one of the paper's four,
    BERT-base for the stand-in and anything else (the paper's smallest BERT)."""
    from .papers.byop import PLMS

    return next((label for label, hub in PLMS.items() if hub == model_name), "BERT-base")


def byop_variants(scale: str, model_name: str = "") -> dict[str, dict]:
    """Run overrides of BYOP's four variants from the paper's Table 6 row for the PLM: margin type,
    perturbation, constant margin and loss; at paper scale also its batch size, lr and temperature (the
    smaller editions keep their own presets)."""
    from .papers.byop import TABLE6_SETTINGS

    plm = paper_plm(model_name or plms(scale)[0])
    out = {}
    for variant, by_plm in TABLE6_SETTINGS.items():
        batch, lr, tau, margin, perturbation = by_plm[plm]
        overrides = {"method": "byop", "margin_type": "constant" if variant.startswith("BYOPC") else "dynamic",
                     "perturbation": perturbation, "loss_mode": "multi-task" if variant.endswith("-M") else "single"}
        if margin is not None:
            overrides["margin"] = margin
        if scale == "paper":
            overrides.update(batch_size=batch, lr=lr, temperature=tau)
        out[f"SimCSE +{variant}"] = overrides
    return out


def curves(runs: dict[str, dict], *keys: str) -> pd.DataFrame:
    """Long table of dev-curve values (one row per run, step and key) for the training-dynamics figures."""
    rows = [{"run": name, "step": point["step"], "metric": key, "value": point[key]}
            for name, run in runs.items() for point in run["dev_curve"] for key in keys if key in point]
    return pd.DataFrame(rows)


def perturbation_points(model: str, sentences: list[str], margin: float, pooler: str = "avg", seed: int = 0,
                        anchor: int = 0) -> pd.DataFrame:
    """BYOP's Figure 1 in numbers: one batch through the PLM twice with dropout (z, z'), anchor z_i, its
    positive z'_i and negatives z'_j, and where the margins move them. On unit vectors a logit margin is a
    move along the anchor: cos(z_i, z'_i - m z_i) = cos(z_i, z'_i) - m (Robinson et al.), so IFM takes the
    positive to z'_i - m z_i and each negative to z'_j + m z_i; BYOP (p+n-) does the opposite. All points
    are projected on the first two principal components of the unmoved ones."""
    import torch
    from sklearn.decomposition import PCA

    from .encoder import Encoder

    encoder = Encoder(model, pooler=pooler, device="cpu").train()  # dropout on: the two views differ
    torch.manual_seed(seed)
    with torch.no_grad():
        z1, z2 = encoder.embed(encoder.tokenize(list(sentences) * 2), pooler=pooler).chunk(2)
    z1, z2 = torch.nn.functional.normalize(z1, dim=1), torch.nn.functional.normalize(z2, dim=1)
    a = z1[anchor]
    others = [j for j in range(len(sentences)) if j != anchor]
    base = {"anchor": [a], "positive": [z2[anchor]], "negative": [z2[j] for j in others]}
    moved = {"IFM positive": (z2[anchor], -1), "BYOP positive": (z2[anchor], 1)}
    moved.update({f"IFM negative {j}": (z2[j], 1) for j in others})
    moved.update({f"BYOP negative {j}": (z2[j], -1) for j in others})
    pca = PCA(n_components=2).fit(torch.stack([v for vs in base.values() for v in vs]).numpy())
    rows = []
    for role, vectors in base.items():
        for xy in pca.transform(torch.stack(vectors).numpy()):
            rows.append({"role": role, "x": xy[0], "y": xy[1], "from_x": xy[0], "from_y": xy[1]})
    for role, (start, sign) in moved.items():
        (fx, fy), (x, y) = pca.transform(torch.stack([start, start + sign * margin * a]).numpy())
        rows.append({"role": role, "x": x, "y": y, "from_x": fx, "from_y": fy})
    return pd.DataFrame(rows)


# BYOP's Figure 1 batch: the probe pairs every run records, and four more sentences, written for this book
FIGURE1_SENTENCES = ["A man is driving east on the highway.", "A woman is frying some food in a pan.",
                     "Two children are playing football in the park.", "The stock market fell sharply today.",
                     "A cat is sleeping on the sofa.", "The committee approved the new budget.",
                     "Heavy rain flooded the streets of the town.", "He plays the guitar in a small band."]


def total_minutes(*groups) -> float:
    """Measured minutes behind a chapter: the wall time of every distinct run and evaluation it shows
    (records nested in lists or dicts; each counted once), i.e. its cost with nothing cached."""
    seen: dict[str, float] = {}

    def visit(item):
        if isinstance(item, dict) and "config_hash" in item:
            seen[f"{item.get('kind')}/{item['config_hash']}"] = item.get("wall_seconds", 0.0)
        elif isinstance(item, dict):
            for value in item.values():
                visit(value)
        elif isinstance(item, (list, tuple)):
            for value in item:
                visit(value)

    for group in groups:
        visit(group)
    return sum(seen.values()) / 60


# SentEval's transfer protocol per scale: the papers' 10-fold at paper scale; 3 folds on the CPU (the nested
# search fits 6 C values x k inner folds for each of k outer folds: 3 folds cost a quarter of 5), two small
# tasks for smoke. `byop_variants`: how many BYOP variants Table 10 evaluates, the best on STS-B dev first
# (None: all four). `sst2_train`: SST-2 training phrases (0: all 67,349); at cpu a stratified 10,000, since
# encoding and fitting all of them was about 45% of a Table 10 row (on 2 cores a row took about 4 min with
# all of them, 2.5-3 min with the sample).
TRANSFER_PROTOCOL = {"smoke": {"tasks": ["TREC", "MRPC"], "kfold": 2, "sst2_train": 0, "byop_variants": 1},
                     "cpu": {"tasks": None, "kfold": 3, "sst2_train": 10000, "byop_variants": 1},
                     "paper": {"tasks": None, "kfold": 10, "sst2_train": 0, "byop_variants": None}}


def transfer(source: dict, scale: str, data_dir=None, force: bool = False, tasks=None, kfold: int = 0,
             solver: str = "liblinear") -> dict:
    """Cached SentEval transfer accuracies (BYOP's Table 10) of a PLM as it is (`source` = {"model_name",
    "pooler"}) or of a training run's kept weights (`source` = the run's overrides, e.g. {"method": "byop",
    "seed": 42, ...}; trained once if its weights are not kept yet, see trained.py)."""
    import time

    from . import runs
    from .config import resolve
    from .encoder import load_encoder
    from .evaluate.transfer import TRANSFER_TASKS, evaluate_transfer
    from .trained import trained_method

    _check_scale(scale)
    protocol = TRANSFER_PROTOCOL[scale]
    chosen = list(tasks or protocol["tasks"] or TRANSFER_TASKS)
    if "method" in source:
        run = resolve(overrides={"scale": scale, **source})
        cfg = {"run": run, "run_code": runs.code_hash(run["method"]), "model_name": run["model_name"]}
    else:
        cfg = {"model_name": source["model_name"], "pooler": source["pooler"]}
    cfg.update(tasks=chosen, kfold=kfold or protocol["kfold"], sst2_train=protocol["sst2_train"],
               mrpc_features="senteval", solver=solver)
    cached = runs.lookup("transfer", cfg, force=force)
    if cached is not None:
        return cached
    started = time.time()
    if "method" in source:
        encode = trained_method({"scale": scale, **source}, data_dir=data_dir).encode
    else:
        encoder = load_encoder(source["model_name"], source["pooler"])
        encode = encoder.encode
    metrics = evaluate_transfer(encode, chosen, data_dir, cfg["kfold"], cfg["mrpc_features"], solver,
                                cfg["sst2_train"])
    return runs.save("transfer", cfg, {"metrics": metrics, "wall_seconds": time.time() - started})
