"""What each chapter runs at each scale, so that the notebooks stay thin (calls, tables, figures, prose).

`smoke` runs in seconds on a random tiny BERT (tests/CI); `cpu` is the edition this book shows (all runs on
2 CPU cores, committed to results/); `paper` is the papers' setting (bert-base, full data, needs a GPU and
internet for the weights).
"""
from __future__ import annotations

from .errors import SreError
from .evaluate.model import evaluate_model
from .report import sts_row
from .train import train

EDITION = {
    "smoke": {"plms": ["tiny-random"], "seeds": [42, 43]},
    # The cpu edition's PLM is all-MiniLM-L6-v2 until the book's own raw BERT (sre-bert) exists; MiniLM is
    # already sentence-tuned, so unsupervised training from it tests the code, not the papers' claims.
    "cpu": {"plms": ["minilm"], "seeds": [42, 43, 44]},
    "paper": {"plms": ["bert-base-uncased"], "seeds": [42, 43, 44]},
}
BASELINE_POOLERS = ["cls", "avg", "avg_first_last", "avg_first_last_emb", "avg_top2"]
WHITENING_POOLER = "avg_first_last"


def _check_scale(scale: str) -> None:
    if scale not in EDITION:
        raise SreError(f"unknown scale {scale!r}: choose from {', '.join(EDITION)}")


def plms(scale: str, model_name: str = "") -> list[str]:
    _check_scale(scale)
    return [model_name] if model_name else list(EDITION[scale]["plms"])


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


def rows(results: dict[str, dict]) -> dict[str, list[float]]:
    return {name: sts_row(r["metrics"]["sts"]) for name, r in results.items()}
