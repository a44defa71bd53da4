"""The one training loop every method uses, the stand-in PLM's MLM pretraining included.

AdamW in two parameter groups: the PLM at `lr`, the modules the method adds (`Method.added_modules`: heads,
decoders, CNNs, ...) at `head_lr` with their own warm-up; linear schedule, gradient clipping, the method's
dev metrics every `eval_steps` (STS-B dev for sentence-embedding methods; the best checkpoint is kept and is
what gets tested), a resumable checkpoint every `checkpoint_steps`, optional autocast. Same config + seed ->
identical numbers on the CPU, also across an interruption and resume (the checkpoint holds the optimiser,
schedule, data position, RNG states and the starting weights of the added modules).

A method's dependencies (RankCSE's teachers, supervised PaSeR's unsupervised run: `Method.dependencies`) are
resolved here, as the kept weights of their own cached runs (`trained_method`), and passed to its `build`.

"Did it train" is recorded with every run (`training_summary`): each loss term at the first step and over
the evaluation interval that ends at the kept step, with its weighted share of the loss, and how far each
added module (and the PLM) moved from its starting weights, ||W - W0|| / ||W0||, at every evaluation.
"""
from __future__ import annotations

import hashlib
import math
import random
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from . import distributed, runs
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
    tmp = path.with_suffix(".tmp")
    torch.save(obj, tmp)
    tmp.replace(path)


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
    world, main = distributed.world_size(), distributed.is_main()
    if cfg["world_size"] not in (1, world):
        raise SreError(f"world_size {cfg['world_size']} is not this run's {world} processes: torchrun's "
                       "--nproc_per_node sets it, leave world_size out of the config")
    cfg["world_size"] = world  # part of the run's identity when > 1: the global batch is world x batch_size
    if world > 1:
        get_method(kind).validate(cfg)  # checks against the global batch (PT-BERT's queue)
    cached = runs.lookup(kind, cfg, results_root, force=force, allow_stale=allow_stale)
    if cached is not None:
        return cached
    started = time.time()
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

    params = [p for p in method.parameters() if p.requires_grad]
    groups = parameter_groups(method, cfg)
    optimizer = torch.optim.AdamW(groups, lr=cfg["lr"], eps=cfg["adam_eps"], weight_decay=cfg["weight_decay"])
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, [linear_schedule(g["warmup_ratio"], total) for g in groups])
    # fp16 gradients underflow unscaled; a disabled scaler passes backward and step through unchanged
    scaler = torch.amp.GradScaler("cuda", enabled=cfg["precision"] == "fp16")
    watched = watched_modules(method)
    start_weights = {name: _flat_weights(module) for name, module in watched.items()}

    work = runs.work_dir(work_root) / kind / runs.config_hash(cfg)
    work.mkdir(parents=True, exist_ok=True)
    last_ckpt, best_ckpt = work / "last.pt", work / "best.pt"
    state = {"step": 0, "curve": [], "best": -math.inf, "best_step": 0, "train_seconds": 0.0, "first_terms": {},
             "interval_terms": {}, "interval_steps": 0}
    origin = checkpoint_origin(kind, cfg)
    ckpt = torch.load(last_ckpt, weights_only=False) if last_ckpt.exists() and not force else None
    if ckpt is not None and ckpt.get("origin") != origin:
        print(f"{kind}: checkpoint {last_ckpt} was made by other code or weights; starting afresh")
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
        state = ckpt["state"]
        start_weights = ckpt["start_weights"]
    checkpoint_every = cfg["checkpoint_steps"] or cfg["eval_steps"]
    # data parallel: DDP averages the gradients over the processes (built after a resume loaded the weights)
    parallel = (torch.nn.parallel.DistributedDataParallel(method, find_unused_parameters=True,
                                                          device_ids=[torch.cuda.current_device()] if device == "cuda" else None)
                if world > 1 else None)

    def dev_evaluation(step, loss_terms):
        metrics = method.dev_metrics()
        score = metrics[method.selection_metric]
        moved = {f"moved/{name}": relative_change(_flat_weights(module), start_weights[name])
                 for name, module in watched.items()}
        point = {"step": step, **loss_terms, **moved, **metrics}
        state["curve"].append(point)
        if score > state["best"]:
            state["best"], state["best_step"] = score, step
            _save_torch_atomic(method.state_dict(), best_ckpt)
        return score

    method.train()
    bar = tqdm(total=total, initial=state["step"], desc=f"{kind} seed {cfg['seed']}",
               disable=not progress_enabled() or not main, mininterval=5)
    tick = time.time()
    while state["step"] < total:
        step = state["step"]
        epoch, offset = divmod(step, per_epoch)
        idx = distributed.rank_slice(orders[epoch][offset * global_batch:(offset + 1) * global_batch])
        batch = method.collate([examples[i] for i in idx])
        with autocast(cfg["precision"], device):
            terms = parallel(batch) if parallel else method.loss(batch)
        loss = terms["loss"]
        if not torch.isfinite(loss):
            raise SreError(f"non-finite loss ({float(loss)}) at step {step + 1} of run {work.name}: lower lr, "
                           f"use precision=fp32, or check the data; checkpoints so far are kept in {work}")
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)  # clip the true gradients
        if trace is not None:
            trace.append({"step": step + 1, "batch": digest(batch), "grad_norm": _grad_norm(params),
                          **{k: float(v.detach()) for k, v in terms.items()}})
        if cfg["grad_clip"]:
            torch.nn.utils.clip_grad_norm_(params, cfg["grad_clip"])
        scaler.step(optimizer)
        scaler.update()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        state["step"] = step = step + 1
        values = distributed.mean_over_processes({k: float(v.detach()) for k, v in terms.items()})
        if step == 1:
            state["first_terms"] = values
        state["interval_terms"] = {k: state["interval_terms"].get(k, 0.0) + v for k, v in values.items()}
        state["interval_steps"] += 1
        if step % cfg["eval_steps"] == 0 or step == total:
            # the loss terms averaged over the steps since the last evaluation (one batch is too noisy to judge by)
            if main:  # the other processes wait for rank 0 at the next step's gather
                score = dev_evaluation(step, {k: v / state["interval_steps"] for k, v in state["interval_terms"].items()})
                bar.set_postfix(loss=f"{loss.item():.4f}", dev=f"{score:.2f}")
            state["interval_terms"], state["interval_steps"] = {}, 0
            method.train()
        bar.update(1)
        if step % checkpoint_every == 0 or step == total:
            state["train_seconds"] += time.time() - tick
            tick = time.time()
            rng_states = distributed.all_rng_states(device)
            if main:
                _save_torch_atomic({"method": method.state_dict(), "optimizer": optimizer.state_dict(),
                                    "schedule": schedule.state_dict(), "rng_states": rng_states,
                                    "scaler": scaler.state_dict(),
                                    "state": state, "origin": origin, "start_weights": start_weights}, last_ckpt)
        if interrupt_at_step is not None and step == interrupt_at_step:
            raise Interrupted(f"interrupted at step {step}")
    bar.close()

    if not main:  # rank 0 tests the kept checkpoint and writes the record; the others return that record
        distributed.barrier()
        return runs.read(kind, cfg, results_root)
    method.load_state_dict(torch.load(best_ckpt, weights_only=False))
    final = method.finish()
    result = {"metrics": {**final, f"{method.selection_metric}_best": state["best"], "best_step": state["best_step"]},
              "dev_curve": state["curve"], "steps": total, "n_train_examples": len(examples),
              "train_seconds": state["train_seconds"], "wall_seconds": time.time() - started,
              "seed": cfg["seed"], "device": device,
              "training": training_summary(state["curve"], state["best_step"], state["first_terms"],
                                           method.term_weights(), list(watched))}
    record = runs.save(kind, cfg, result, results_root)
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
    source tree while the variant has none) and the same starting weights."""
    (variant,) = list(runs.variants(kind, cfg))[:1]
    return {"computation": runs.committed_fingerprint(variant) or runs.source_tree(),
            "model_fingerprint": runs.model_fingerprint(cfg["model_name"])}


# ----- a run's kept weights, for what needs them and not only its record ----------------------------------------

def kept_checkpoint(overrides: dict, data_dir=None) -> Path:
    """The file of the run's kept (best STS-B dev) weights, cached under work/models/ and keyed by the run's
    config, computation and PLM weights: copied from the run's own finished training where this machine has it
    (work/<method>/<config>/), else trained once through this loop (deterministic on the CPU, so these are the
    weights that produced the run's record)."""
    cfg = resolve(overrides=overrides)
    kind = cfg["method"]
    origin = checkpoint_origin(kind, cfg)
    key = hashlib.sha256(repr(sorted(origin.items())).encode()).hexdigest()[:16]
    saved = runs.work_dir() / "models" / f"{kind}-{runs.config_hash(cfg)}-{key}.pt"
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
    (same computation and starting weights, every step, the record's best step), so its best.pt is the kept
    weights and neither training nor the final evaluation needs repeating."""
    record = runs.lookup(kind, cfg)
    if record is None or not (work / "last.pt").exists() or not (work / "best.pt").exists():
        return False
    state = torch.load(work / "last.pt", map_location="cpu", weights_only=False)
    return (state.get("origin") == checkpoint_origin(kind, cfg) and state["state"]["step"] == record["steps"]
            and state["state"]["best_step"] == record["metrics"]["best_step"])


def trained_method(overrides: dict, device: str | None = None, data_dir=None):
    """The run's method module (encoder and its heads) with the kept weights, frozen and in eval mode;
    `.kept_file` is the weights file."""
    device = device or default_device()
    saved = kept_checkpoint(overrides, data_dir)
    cfg = resolve(overrides=overrides)
    method_cls = get_method(cfg["method"])
    dependencies = {name: trained_method(o, device, data_dir) for name, o in method_cls.dependencies(cfg).items()}
    method = method_cls.build(cfg, device, data_dir, dependencies).to(device)
    method.load_state_dict(torch.load(saved, weights_only=False))
    method.kept_file = saved  # which weights these are (RankCSE's teacher cache is keyed by it)
    return method.eval().requires_grad_(False)
