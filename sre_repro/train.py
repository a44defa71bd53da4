"""The one training loop every method uses, the stand-in PLM's MLM pretraining included.

AdamW in two parameter groups: the PLM at `lr`, the modules the method adds (`Method.added_modules`: heads,
decoders, CNNs, ...) at `head_lr` with their own warm-up; linear schedule, gradient clipping, the method's
dev metrics every `eval_steps` (STS-B dev for sentence-embedding methods; the best checkpoint is kept and is
what gets tested; with `patience` the run stops once dev's best has not gained `min_delta` for that many
evaluations, protocol.py), a resumable checkpoint every `checkpoint_steps`, optional autocast. Same config + seed ->
identical numbers on the CPU, also across an interruption and resume (the checkpoint holds the optimiser,
schedule, data position, RNG states and the starting weights of the added modules).

A method's dependencies (RankCSE's teachers, supervised PaSeR's unsupervised run: `Method.dependencies`) are
resolved here, as the kept weights of their own cached runs (`trained_method`), and passed to its `build`; the
record names the runs it started from (`starts_from`), and one whose start now resolves to another run is stale.

"Did it train" is recorded with every run (`training_summary`): each loss term at the first step and over
the evaluation interval that ends at the kept step, with its weighted share of the loss, and how far each
added module (and the PLM) moved from its starting weights, ||W - W0|| / ||W0||, at every evaluation.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
import random
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from . import distributed, protocol, runs
from .config import resolve
from .encoder import autocast, default_device, progress_enabled
from .errors import SreError
from .methods import get_method


class Interrupted(Exception):
    """Raised by the test hook `interrupt_at_step` to simulate a crash."""


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _save_torch_atomic(obj, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # this process's own: no two writers share a name
    torch.save(obj, tmp)
    tmp.replace(path)


# what torch.load raises on a truncated or foreign file (a GPU-saved file is read onto the CPU, never refused)
UNREADABLE = (RuntimeError, EOFError, ValueError, pickle.UnpicklingError, zipfile.BadZipFile)


def _load_checkpoint(path: Path, then: str = "starting the run afresh") -> dict | None:
    """A checkpoint's content, or None (set aside, said on one line, `then` saying what follows) when it cannot
    be read."""
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except UNREADABLE:
        aside = runs.move_aside(path)
        print(f"sre-repro: checkpoint {path} is unreadable: "
              f"{f'set aside as {aside.name}' if aside else 'another process set it aside'}; {then}", file=sys.stderr)
        return None


def digest(value) -> str:
    """A short hash of a batch (tensors, lists, strings, numbers; nested): what a fingerprint's probe records
    of the inputs after collation and augmentation."""
    h = hashlib.sha256()

    def visit(item):
        if isinstance(item, torch.Tensor):
            h.update(f"{item.dtype}{tuple(item.shape)}".encode() + item.detach().cpu().contiguous().numpy().tobytes())
        elif isinstance(item, dict):
            for key in sorted(item):
                h.update(str(key).encode())
                visit(item[key])
        elif isinstance(item, (list, tuple)):
            h.update(b"[")
            for x in item:
                visit(x)
            h.update(b"]")
        else:
            h.update(repr(item).encode())

    visit(value)
    return h.hexdigest()[:16]


def _grad_norm(params) -> float:
    grads = [p.grad.detach().float().flatten() for p in params if p.grad is not None]
    return float(torch.cat(grads).norm()) if grads else 0.0


def train(overrides: dict | None = None, data_dir=None, force: bool = False, results_root=None,
          work_root=None, allow_stale: bool = False, interrupt_at_step: int | None = None,
          trace: list | None = None) -> dict:
    """Train one run (or serve it from the cache) and return its result record. `trace`: a list that gets,
    per step, the batch's digest, the gradient norm before clipping and every loss term (fingerprints.py)."""
    cfg = resolve(overrides=overrides)
    kind = cfg["method"]
    device = default_device() if cfg["device"] == "auto" else cfg["device"]
    if device == "cuda" and not torch.cuda.is_available():
        raise SreError("device cuda was asked for but no GPU is visible: use --set device=cpu (or auto)")
    distributed.init_from_env(device)  # under torchrun: join the other processes
    world = distributed.world_size()
    if cfg["world_size"] not in (1, world):
        raise SreError(f"world_size {cfg['world_size']} is not this run's {world} processes: torchrun's "
                       "--nproc_per_node sets it, leave world_size out of the config")
    cfg["world_size"] = world  # part of the run's identity when > 1: the global batch is world x batch_size
    if world > 1:
        get_method(kind).validate(cfg)  # checks against the global batch (PT-BERT's queue)
    cached = _cached(cfg, results_root, force, allow_stale)
    if cached is not None:
        return cached
    if world > 1:  # the processes of one data-parallel run are that run: no lock between them
        return _compute(cfg, device, data_dir, work_root, force, results_root, trace, interrupt_at_step)
    with runs.run_lock(kind, cfg, work_root):
        # another process may have computed it while this one waited (force: it asked for its own computation)
        cached = _cached(cfg, results_root, force, allow_stale)
        return cached or _compute(cfg, device, data_dir, work_root, force, results_root, trace, interrupt_at_step)


def _cached(cfg: dict, results_root, force: bool, allow_stale: bool) -> dict | None:
    """runs.lookup, with a record whose starting runs changed since (starts_outdated) stale too."""
    return runs.lookup(cfg["method"], cfg, results_root, force=force, allow_stale=allow_stale,
                       more_reasons=lambda record: starts_outdated(cfg, record, results_root))


def starts_from(cfg: dict, results_root=None) -> dict[str, dict]:
    """name -> {"config_hash", "created"} of each run this one starts from (Method.dependencies, resolved now; created:
    when its record was computed, None without one). A run's key is its own config, so a change to how its start
    resolves (a recipe's cap moving), or its start recomputed, leaves the key as it was."""
    starts = {}
    for name, overrides in get_method(cfg["method"]).dependencies(cfg).items():
        start_cfg = resolve(overrides=overrides)
        start = runs.read(start_cfg["method"], start_cfg, results_root)
        starts[name] = {"config_hash": runs.config_hash(start_cfg), "created": start and start.get("created")}
    return starts


def starts_outdated(cfg: dict, record: dict, results_root=None) -> list[str]:
    """Why a record's starting runs are not the ones its config resolves to now ([] when they are): another run, or
    the same one recomputed since (its "starts_from"); for a record older than that field, a start computed after
    it. A start no longer in the store cannot be checked (starts_missing)."""
    reasons = []
    for name, now in starts_from(cfg, results_root).items():
        was = record.get("starts_from", {}).get(name)
        if was is not None and was["config_hash"] != now["config_hash"]:
            reasons.append(f"its start ({name} run) is now another run ({now['config_hash']})")
        elif now["created"] is not None and (now["created"] != was["created"] if was is not None
                                             else now["created"] > record.get("created", "")):
            reasons.append(f"its start ({name} run) was computed after it ({now['created']})")
    return reasons


def starts_missing(cfg: dict, results_root=None) -> list[str]:
    """The names of the runs this one starts from whose records are not in the store."""
    return [name for name, now in starts_from(cfg, results_root).items() if now["created"] is None]


def _compute(cfg, device, data_dir, work_root, force, results_root, trace, interrupt_at_step) -> dict:
    run = _setup(cfg, device, data_dir, work_root, force)
    _loop(run, trace, interrupt_at_step)
    return _finish(run, results_root)


class _Run:
    """One training run in progress: what the loop advances and a checkpoint holds."""

    def __init__(self, **parts):
        self.__dict__.update(parts)

    def wall_seconds(self) -> float:
        """Wall time of the run so far, the processes before a resume included."""
        return self.wall_before + time.time() - self.started


def _setup(cfg: dict, device: str, data_dir, work_root, force: bool) -> _Run:
    """The method (its dependencies resolved first), data order, optimiser and schedule, resumed from the last
    checkpoint when it holds this computation."""
    started, kind, world = time.time(), cfg["method"], distributed.world_size()
    autocast(cfg["precision"], device)  # fails early on fp16 without a GPU
    method_cls = get_method(kind)
    # before seeding: a dependency trained or loaded now leaves the run's random stream as it is
    dependencies = {name: trained_method(o, device, data_dir) for name, o in method_cls.dependencies(cfg).items()}
    seed_everything(cfg["seed"])
    method = method_cls.build(cfg, device, data_dir, dependencies).to(device)
    if world > 1:  # same initial weights everywhere, its own dropout draws in each process
        torch.manual_seed(cfg["seed"] * 7919 + distributed.rank())
    examples = method.corpus(data_dir)
    if cfg["max_train_examples"]:
        examples = examples[: cfg["max_train_examples"]]
    global_batch = cfg["batch_size"] * world
    if len(examples) < global_batch:
        raise SreError(f"training corpus {cfg['train_data']!r} has {len(examples)} examples, fewer than one batch "
                       f"of {global_batch}: check the data dir or lower batch_size")
    per_epoch = len(examples) // global_batch  # the last incomplete batch is dropped
    total = cfg["max_steps"] or per_epoch * cfg["epochs"]
    generator = torch.Generator().manual_seed(cfg["seed"])
    orders = [torch.randperm(len(examples), generator=generator) for _ in range(math.ceil(total / per_epoch))]

    groups = parameter_groups(method, cfg)
    optimizer = torch.optim.AdamW(groups, lr=cfg["lr"], eps=cfg["adam_eps"], weight_decay=cfg["weight_decay"])
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, [linear_schedule(g["warmup_ratio"], total) for g in groups])
    # fp16 gradients underflow unscaled; a disabled scaler passes backward and step through unchanged
    scaler = torch.amp.GradScaler("cuda", enabled=cfg["precision"] == "fp16")
    watched = watched_modules(method)
    run = _Run(cfg=cfg, device=device, method=method, examples=examples, orders=orders, per_epoch=per_epoch,
               global_batch=global_batch, total=total, params=[p for p in method.parameters() if p.requires_grad],
               optimizer=optimizer, schedule=schedule, scaler=scaler, watched=watched,
               start_weights={name: _flat_weights(module) for name, module in watched.items()},
               work=runs.work_dir(work_root) / kind / runs.config_hash(cfg), origin=checkpoint_origin(kind, cfg),
               started=started, wall_before=0.0,
               start_provenance={name: dep.kept_weights for name, dep in dependencies.items()},
               state={"step": 0, "curve": [], "best": -math.inf, "best_step": 0, "train_seconds": 0.0,
                      "first_terms": {}, "interval_terms": {}, "interval_steps": 0})
    run.work.mkdir(parents=True, exist_ok=True)
    last = run.work / "last.pt"
    ckpt = _load_checkpoint(last) if last.exists() and not force else None
    if ckpt is not None and ckpt.get("origin") != run.origin:
        print(f"sre-repro: checkpoint {runs.shown_path(last)} was made by other code or weights; starting {kind} afresh",
              file=sys.stderr)
        ckpt = None
    if ckpt is not None:
        method.load_state_dict(ckpt["method"])
        optimizer.load_state_dict(ckpt["optimizer"])
        schedule.load_state_dict(ckpt["schedule"])
        # each process's own draws (and the GPU's); checkpoints before data parallelism kept one CPU state
        cpu_rng, cuda_rng = ckpt.get("rng_states", [(ckpt.get("torch_rng"), None)])[distributed.rank()]
        torch.set_rng_state(cpu_rng)
        if cuda_rng is not None and device == "cuda":
            torch.cuda.set_rng_state(cuda_rng)
        if ckpt.get("scaler"):
            scaler.load_state_dict(ckpt["scaler"])
        run.state, run.start_weights = ckpt["state"], ckpt["start_weights"]
        run.wall_before = run.state.get("wall_seconds", 0.0)
        runs.log.info(f"resuming {kind} from step {run.state['step']} of {total} ({runs.shown_path(last)})")
    # data parallel: DDP averages the gradients over the processes (built after a resume loaded the weights)
    run.parallel = (torch.nn.parallel.DistributedDataParallel(
        method, find_unused_parameters=True, device_ids=[torch.cuda.current_device()] if device == "cuda" else None)
        if world > 1 else None)
    return run


def _dev_evaluation(run: _Run, step: int, loss_terms: dict) -> float:
    """STS-B dev (the method's dev metrics) and how far each watched module moved; keeps the best checkpoint."""
    method, state = run.method, run.state
    metrics = method.dev_metrics()
    score = metrics[method.selection_metric]
    moved = {f"moved/{name}": relative_change(_flat_weights(module), run.start_weights[name])
             for name, module in run.watched.items()}
    state["curve"].append({"step": step, **loss_terms, **moved, **metrics})
    if score > state["best"]:
        state["best"], state["best_step"] = score, step
        _save_torch_atomic(method.state_dict(), run.work / "best.pt")
    state["stopped"] = protocol.stop_now([p[method.selection_metric] for p in state["curve"]], run.cfg["patience"],
                                         run.cfg["min_delta"])
    return score


def _loop(run: _Run, trace: list | None, interrupt_at_step: int | None) -> None:
    cfg, method, state, main = run.cfg, run.method, run.state, distributed.is_main()
    checkpoint_every = cfg["checkpoint_steps"] or cfg["eval_steps"]
    method.train()
    bar = tqdm(total=run.total, initial=state["step"], desc=f"{cfg['method']} seed {cfg['seed']}",
               disable=not progress_enabled() or not main, mininterval=5)
    tick = time.time()
    while state["step"] < run.total and not state.get("stopped"):
        step = state["step"]
        epoch, offset = divmod(step, run.per_epoch)
        idx = distributed.rank_slice(run.orders[epoch][offset * run.global_batch:(offset + 1) * run.global_batch])
        batch = method.collate([run.examples[i] for i in idx])
        with autocast(cfg["precision"], run.device):
            terms = run.parallel(batch) if run.parallel else method.loss(batch)
        loss = terms["loss"]
        if not torch.isfinite(loss):
            raise SreError(f"non-finite loss ({float(loss)}) at step {step + 1} of run {run.work.name}: lower lr, "
                           f"use precision=fp32, or check the data; checkpoints so far are kept in {run.work}")
        run.scaler.scale(loss).backward()
        run.scaler.unscale_(run.optimizer)  # clip the true gradients
        if trace is not None:
            trace.append({"step": step + 1, "batch": digest(batch), "grad_norm": _grad_norm(run.params),
                          **{k: float(v.detach()) for k, v in terms.items()}})
        if cfg["grad_clip"]:
            torch.nn.utils.clip_grad_norm_(run.params, cfg["grad_clip"])
        run.scaler.step(run.optimizer)
        run.scaler.update()
        run.schedule.step()
        run.optimizer.zero_grad(set_to_none=True)
        state["step"] = step = step + 1
        values = distributed.mean_over_processes({k: float(v.detach()) for k, v in terms.items()})
        if step == 1:
            state["first_terms"] = values
        state["interval_terms"] = {k: state["interval_terms"].get(k, 0.0) + v for k, v in values.items()}
        state["interval_steps"] += 1
        if step % cfg["eval_steps"] == 0 or step == run.total:
            # the loss terms averaged over the steps since the last evaluation (one batch is too noisy to judge by)
            if main:  # the other processes wait for rank 0 at the next step's gather
                interval = {k: v / state["interval_steps"] for k, v in state["interval_terms"].items()}
                bar.set_postfix(loss=f"{loss.item():.4f}", dev=f"{_dev_evaluation(run, step, interval):.2f}")
            # the stopping rule's decision is rank 0's (it alone evaluates); every process stops with it
            state["stopped"] = distributed.broadcast_flag(state.get("stopped", False))
            state["interval_terms"], state["interval_steps"] = {}, 0
            method.train()
        bar.update(1)
        if step % checkpoint_every == 0 or step == run.total or state.get("stopped"):
            state["train_seconds"] += time.time() - tick
            state["wall_seconds"] = run.wall_seconds()
            tick = time.time()
            rng_states = distributed.all_rng_states(run.device)
            if main:
                _save_torch_atomic({"method": method.state_dict(), "optimizer": run.optimizer.state_dict(),
                                    "schedule": run.schedule.state_dict(), "rng_states": rng_states,
                                    "scaler": run.scaler.state_dict(), "state": state, "origin": run.origin,
                                    "start_weights": run.start_weights}, run.work / "last.pt")
        if interrupt_at_step is not None and step == interrupt_at_step:
            raise Interrupted(f"interrupted at step {step}")
    bar.close()


def _finish(run: _Run, results_root) -> dict:
    """Rank 0 tests the kept checkpoint and writes the record; the other processes return that record."""
    cfg, method, state = run.cfg, run.method, run.state
    if not distributed.is_main():
        distributed.barrier()
        return runs.read(cfg["method"], cfg, results_root)
    best = _load_checkpoint(run.work / "best.pt", then="the run cannot be finished from it")
    if best is None:
        runs.move_aside(run.work / "last.pt")  # so that the next request retrains rather than resuming at the end
        raise SreError(f"the best checkpoint of {cfg['method']} run {run.work.name} was unreadable (set aside with "
                       "its last.pt): run the command again to retrain it")
    method.load_state_dict(best)
    final = method.finish()
    result = {"metrics": {**final, f"{method.selection_metric}_best": state["best"], "best_step": state["best_step"]},
              "dev_curve": state["curve"], "steps": state["step"], "n_train_examples": len(run.examples),
              "train_seconds": state["train_seconds"], "wall_seconds": run.wall_seconds(),
              "seed": cfg["seed"], "device": run.device,
              "training": training_summary(state["curve"], state["best_step"], state["first_terms"],
                                           method.term_weights(), list(run.watched)),
              "convergence": protocol.convergence(state["curve"], state["best_step"], run.total, cfg["patience"],
                                                  cfg["min_delta"], method.selection_metric)}
    if starts := starts_from(cfg, results_root):  # with which weights of each: the record's, or a sibling
        result["starts_from"] = {name: {**start, "weights": run.start_provenance.get(name)} for name, start in starts.items()}
    record = runs.save(cfg["method"], cfg, result, results_root)
    distributed.barrier()
    return record


def parameter_groups(method, cfg: dict) -> list[dict]:
    """AdamW groups: the PLM (and anything else not declared added) at `lr`; the method's added modules at
    `head_lr` with their own warm-up `head_warmup_ratio` (config.resolve sets both). The PLM group
    comes first and keeps the parameters' order, so a method without added modules trains as with one group."""
    added = {id(p) for module in method.added_modules().values() for p in module.parameters() if p.requires_grad}
    plm = [p for p in method.parameters() if p.requires_grad and id(p) not in added]
    head = [p for p in method.parameters() if p.requires_grad and id(p) in added]
    groups = [{"name": "plm", "params": plm, "lr": cfg["lr"], "warmup_ratio": cfg["warmup_ratio"]}]
    if head:
        groups.append({"name": "added", "params": head, "lr": cfg["head_lr"], "warmup_ratio": cfg["head_warmup_ratio"]})
    return groups


def linear_schedule(warmup_ratio: float, total: int):
    """Multiplier of a group's lr at step s: linear warm-up over warmup_ratio * total steps, then linear decay to 0."""
    warmup = int(warmup_ratio * total)
    return lambda s: s / max(1, warmup) if s < warmup else max(0.0, (total - s) / max(1, total - warmup))


def watched_modules(method) -> dict:
    """The modules whose movement every run records: the method's added modules, and the PLM itself."""
    return {**method.added_modules(), "plm": method.encoder.model}


def _flat_weights(module) -> torch.Tensor:
    return torch.cat([p.detach().float().flatten().cpu() for p in module.parameters()]).clone()


def relative_change(now: torch.Tensor, start: torch.Tensor) -> float:
    """||W - W0|| / ||W0|| over all of a module's parameters at once."""
    return float((now - start).norm() / start.norm().clamp(min=1e-12))


def training_summary(curve: list[dict], kept_step: int, first_terms: dict, weights: dict, modules: list[str]) -> dict:
    """What a run's kept checkpoint learned, from its dev curve: the kept step; per loss term its value at
    the first step and over the evaluation interval that ends at the kept step, and its share of the loss
    there (weight x term / loss; a method's `term_weights`); per watched module its relative weight change at
    the kept step."""
    kept = next((point for point in curve if point["step"] == kept_step), curve[-1] if curve else {})
    terms = {}
    for name in first_terms:
        if name == "loss":
            continue
        weight = weights.get(name, 1.0)
        terms[name] = {"weight": weight, "first": first_terms[name], "kept": kept.get(name),
                       "share_first": weight * first_terms[name] / first_terms["loss"] if first_terms["loss"] else None,
                       "share_kept": weight * kept[name] / kept["loss"] if kept.get("loss") else None}
    return {"kept_step": kept_step, "loss_first": first_terms.get("loss"), "loss_kept": kept.get("loss"),
            "terms": terms, "moved": {name: kept.get(f"moved/{name}") for name in modules}}


def checkpoint_origin(kind: str, cfg: dict) -> dict:
    """What a checkpoint resumes only under: the computation that made it (its variant's fingerprint, or the
    source tree while the variant has none), the same starting weights and the same runs started from."""
    (variant,) = list(runs.variants(kind, cfg))[:1]
    origin = {"computation": runs.committed_fingerprint(variant) or runs.source_tree(),
              "model_fingerprint": runs.model_fingerprint(cfg["model_name"])}
    if starts := starts_from(cfg):  # a run that starts from others resumes only from those same runs
        origin["starts_from"] = {name: start["config_hash"] for name, start in starts.items()}
    return origin


# ----- a run's kept weights, for what needs them and not only its record ----------------------------------------

def kept_checkpoint(overrides: dict, data_dir=None) -> Path:
    """The file of the run's kept (best STS-B dev) weights, cached under work/models/ and keyed by the run's
    config, computation and PLM weights and by the content of the best.pt it was copied from (so a run retrained
    with --force never serves an older copy): copied from the run's own finished training where this machine has
    it (work/<method>/<config>/), else trained once through this loop. A retrain gives the record's weights only
    where it keeps the record's step with the record's score: another machine rounds differently (a GPU's
    arithmetic, or another CPU's), so its retrain may be a sibling that keeps another step. Beside the file, what
    the weights are (`kept_weights`) is written, and a sibling is announced."""
    cfg = resolve(overrides=overrides)
    kind, (stem, work, models) = cfg["method"], _kept_paths(cfg)
    record = runs.read(kind, cfg)
    if _finished_here(kind, cfg, work, record):
        kept = record
    else:
        if copy := _latest_copy(stem, models):
            return copy  # the copy of the latest training this machine finished
        print(f"sre-repro: training {kind} seed {cfg['seed']} once for its weights (kept in {models})", file=sys.stderr)
        with tempfile.TemporaryDirectory() as results:  # only the weights are wanted, not another record
            kept = train(overrides, data_dir=data_dir, results_root=results)
    provenance = weights_provenance(kept, record)
    if not provenance["same"]:
        print(f"sre-repro: {describe_weights(provenance)}", file=sys.stderr)
    best = work / "best.pt"
    saved = models / f"{stem}-{runs.files_hash([best])}.pt"
    if not saved.exists():
        models.mkdir(parents=True, exist_ok=True)
        runs.write_json_atomic(saved.with_suffix(".json"), provenance)
        tmp = saved.with_name(f".{saved.name}.{os.getpid()}.tmp")
        shutil.copyfile(best, tmp)
        tmp.replace(saved)
    return saved


def weights_provenance(kept: dict, record: dict | None) -> dict:
    """What a run's kept weights are, from the training that made them (`kept`, a record) and the run's record:
    the kept step and dev score of each, the hardware that trained them, and whether they are the record's (the
    same step and score; a retrain without a record to compare counts as its own)."""
    def summary(r):  # the kept step and its selection score (STS-B dev; MLM pretraining selects on another)
        best = [v for k, v in r["metrics"].items() if k.endswith("_best")]
        return {"best_step": r["metrics"].get("best_step"), "dev": r["metrics"].get("stsb_dev_best", best[0] if best else None),
                "hardware": (r.get("hardware") or {}).get("cuda") or "CPU"}

    weights, of_record = summary(kept), summary(record) if record is not None else None
    same = of_record is None or kept is record or (
        weights["best_step"] == of_record["best_step"] and (weights["dev"] is None) == (of_record["dev"] is None)
        and (weights["dev"] is None or abs(weights["dev"] - of_record["dev"]) < 1e-6))
    return {"same": same, "weights": weights, "record": of_record}


def describe_weights(provenance: dict | None) -> str:
    """One phrase for a `weights_provenance` (None: not recorded)."""
    if provenance is None:
        return "weights not recorded (an evaluation older than the record of its weights)"
    if provenance["same"]:
        return "the run's own kept weights"
    w, r = provenance["weights"], provenance["record"]
    if w["dev"] is None or r["dev"] is None:  # a run that selects on no STS-B dev score: the kept steps alone
        kept = f"kept step {w['best_step']}, the record's {r['best_step']}"
    else:
        kept = f"kept STS-B dev {w['dev']:.2f} at step {w['best_step']}, the record {r['dev']:.2f} at step {r['best_step']}"
    return f"a retrain on {w['hardware']}, a sibling of the record's weights ({kept}, on {r['hardware']})"


def _kept_paths(cfg: dict) -> tuple[str, Path, Path]:
    """A run's kept-weight copies' name stem, its work folder, and the folder of the copies."""
    kind = cfg["method"]
    key = hashlib.sha256(repr(sorted(checkpoint_origin(kind, cfg).items())).encode()).hexdigest()[:16]
    return f"{kind}-{runs.config_hash(cfg)}-{key}", runs.work_dir() / kind / runs.config_hash(cfg), runs.work_dir() / "models"


def kept_weights(saved: Path) -> dict | None:
    """`weights_provenance` of a kept weights file (kept_checkpoint); None for a copy made before copies kept it."""
    beside = saved.with_suffix(".json")
    return json.loads(beside.read_text()) if beside.exists() else None


def _latest_copy(stem: str, models: Path) -> Path | None:
    """The run's kept-weight copy of the latest training this machine finished (None: no copy)."""
    copies = sorted(models.glob(f"{stem}-*.pt"), key=lambda f: f.stat().st_mtime_ns)
    return copies[-1] if copies else None


def latest_kept_weights(overrides: dict) -> dict | None:
    """`kept_weights` of the run's latest copy on this machine, without training (None where there is none)."""
    stem, _, models = _kept_paths(resolve(overrides=overrides))
    copy = _latest_copy(stem, models)
    return kept_weights(copy) if copy else None


def _finished_here(kind: str, cfg: dict, work: Path, record: dict | None) -> bool:
    """Whether this machine's checkpoints of the run are those of its current `record`: the finished training
    (same computation and starting weights, every step, the record's best step), so its best.pt is the kept
    weights and neither training nor the final evaluation needs repeating."""
    if (record is None or record["stale"] or starts_outdated(cfg, record) or not (work / "last.pt").exists()
            or not (work / "best.pt").exists()):
        return False
    state = _load_checkpoint(work / "last.pt", then="the run's weights will be retrained")
    return (state is not None and state.get("origin") == checkpoint_origin(kind, cfg)
            and state["state"]["step"] == record["steps"] and state["state"]["best_step"] == record["metrics"]["best_step"])


def _load_kept(saved: Path, kind: str, cfg: dict) -> dict:
    """The kept weights' state dict; an unreadable copy is set aside with every copy of the run and the checkpoints
    it came from (best.pt, and last.pt so that the next request retrains instead of resuming at the end), and the
    request refused in one line."""
    try:
        return torch.load(saved, map_location="cpu", weights_only=False)
    except UNREADABLE:
        work = runs.work_dir() / kind / runs.config_hash(cfg)
        copies = saved.parent.glob(f"{saved.name.rsplit('-', 1)[0]}-*.pt")
        for path in (*copies, work / "best.pt", work / "last.pt"):
            runs.move_aside(path)
        raise SreError(f"the kept weights of {kind} run {runs.config_hash(cfg)} ({saved.name}) are unreadable: set "
                       "aside with the run's checkpoints; run the command again to retrain them") from None


def trained_method(overrides: dict, device: str | None = None, data_dir=None):
    """The run's method module (encoder and its heads) with the kept weights, frozen and in eval mode;
    `.kept_file` is the weights file."""
    device = device or default_device()
    saved = kept_checkpoint(overrides, data_dir)
    cfg = resolve(overrides=overrides)
    method_cls = get_method(cfg["method"])
    dependencies = {name: trained_method(o, device, data_dir) for name, o in method_cls.dependencies(cfg).items()}
    method = method_cls.build(cfg, device, data_dir, dependencies).to(device)
    method.load_state_dict(_load_kept(saved, cfg["method"], cfg))
    method.kept_file = saved  # which weights these are (RankCSE's teacher cache is keyed by it)
    method.kept_weights = kept_weights(saved)  # the record's, or a sibling retrained here
    return method.eval().requires_grad_(False)
