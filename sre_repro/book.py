"""What each chapter runs at each scale, so that the notebooks stay thin (calls, tables, figures, prose).

`smoke` runs in seconds on a random tiny BERT (tests/CI); `cpu` is the edition this book shows (all runs on
2 CPU cores, committed to results/); `paper` is the papers' setting (bert-base, full data, needs a GPU and
internet for the weights).
"""
from __future__ import annotations

from pathlib import Path

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
    return list(chosen) if chosen else list(EDITION[scale]["seeds"])


def baselines(models: list[str], precision: str = "fp32", data_dir=None, force: bool = False,
              allow_stale: bool = True) -> dict[str, dict]:
    """Row name -> eval result, for every pooler of every model, whitening, and averaged GloVe."""
    out = {}
    for model in models:
        for pooler in BASELINE_POOLERS:
            out[f"{model} {pooler}"] = evaluate_model(data_dir, force, model_name=model, pooler=pooler,
                                                      precision=precision, allow_stale=allow_stale)
        out[f"{model} {WHITENING_POOLER} + whitening"] = evaluate_model(
            data_dir, force, model_name=model, pooler=WHITENING_POOLER, whiten=True, precision=precision,
            allow_stale=allow_stale)
    out["glove avg (50d 6B)"] = evaluate_model(data_dir, force, model_name="glove", allow_stale=allow_stale)
    return out


def train_seeds(method: str, scale: str, seed_list: list[int], model_name: str = "", data_dir=None,
                force: bool = False, allow_stale: bool = True, **overrides) -> list[dict]:
    """One cached training run per seed."""
    extra = {k: v for k, v in overrides.items() if v not in ("", None)}
    if model_name:
        extra["model_name"] = model_name
    return [train({"method": method, "scale": scale, "seed": s, **extra}, data_dir=data_dir, force=force,
                  allow_stale=allow_stale) for s in seed_list]


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


def best_by_dev(grid: dict, name: str):
    """The setting (key of `grid`: setting -> {run name -> result}) whose run `name` scored best on STS-B dev."""
    return max(grid, key=lambda setting: grid[setting][name]["metrics"]["stsb_dev_best"])
