"""Trained models of this book's runs, for what needs the weights and not only a run's record (RankCSE's
teachers, transfer tasks): a run's kept (best STS-B dev) checkpoint, cached under work/models/ and keyed by
the run's config, its method's code and the PLM's weights. On first use it is copied from the run's own
finished training where this machine has it (work/<method>/<config>/), else trained through the ordinary loop.
Training is deterministic on the CPU, so the cached weights are those that produced the run's record."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import torch

from . import runs
from .config import resolve


def kept_checkpoint(overrides: dict, data_dir=None) -> Path:
    """The file of the run's kept weights (training the run once if no current copy exists)."""
    from .train import train

    cfg = resolve(overrides=overrides)
    kind = cfg["method"]
    key = f"{runs.config_hash(cfg)}-{runs.code_hash(kind)}-{runs.model_fingerprint(cfg['model_name']) or 'named'}"
    saved = runs.work_dir() / "models" / f"{kind}-{key}.pt"
    if not saved.exists():
        work = runs.work_dir() / kind / runs.config_hash(cfg)
        if not _finished_here(kind, cfg, work):
            print(f"training {kind} seed {cfg['seed']} once for its weights (kept in {saved.parent})")
            with tempfile.TemporaryDirectory() as results:  # only the weights are wanted, not another record
                train(overrides, data_dir=data_dir, results_root=results)
        saved.parent.mkdir(parents=True, exist_ok=True)
        tmp = saved.with_suffix(".tmp")
        shutil.copyfile(work / "best.pt", tmp)
        tmp.replace(saved)
    return saved


def _finished_here(kind: str, cfg: dict, work: Path) -> bool:
    """Whether this machine's checkpoints of the run are those of its current record: the finished training
    (same code and starting weights, every step, the record's best step), so its best.pt is the kept weights
    and neither training nor the final evaluation needs repeating."""
    record = runs.lookup(kind, cfg)
    if record is None or not (work / "last.pt").exists() or not (work / "best.pt").exists():
        return False
    state = torch.load(work / "last.pt", map_location="cpu", weights_only=False)
    origin = {"code_hash": runs.code_hash(kind), "model_fingerprint": runs.model_fingerprint(cfg["model_name"])}  # train.py's
    return (state.get("origin") == origin and state["state"]["step"] == record["steps"]
            and state["state"]["best_step"] == record["metrics"]["best_step"])


def trained_method(overrides: dict, device: str | None = None, data_dir=None):
    """The run's method module (encoder and its heads) with the kept weights, frozen and in eval mode;
    `.kept_file` is the weights file."""
    from .encoder import default_device
    from .methods import get_method

    device = device or default_device()
    saved = kept_checkpoint(overrides, data_dir)
    cfg = resolve(overrides=overrides)
    method = get_method(cfg["method"]).build(cfg, device, data_dir).to(device)
    method.load_state_dict(torch.load(saved, weights_only=False))
    method.kept_file = saved  # which weights these are (RankCSE's teacher cache is keyed by it)
    return method.eval().requires_grad_(False)
