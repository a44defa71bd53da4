"""Data-parallel training (PyTorch's DistributedDataParallel under torchrun): what the trainer and the losses
need to know about the other processes. In one process every function here is the identity or a no-op, so a
single-process run computes exactly what it computed before data parallelism existed.

    torchrun --nproc_per_node N -m sre_repro train --method simcse --set batch_size=16 ...

`batch_size` is per process: N processes with batch b train on one global batch of N*b per step, the same
examples in the same order as one process with batch N*b (`rank_slice`). In-batch negatives are gathered
across processes with their gradients kept (`gather_rows`, SimCSE's all-gather), and the gathered loss is
the same on every process; `gather_rows`' backward sums each row's gradient over the processes and DDP
averages the parameter gradients, so the update equals the single-process one on N*b examples (up to the
dropout draws, which differ per process; tests/test_distributed.py checks it with dropout off).
"""
from __future__ import annotations

import os
from datetime import timedelta

import torch
import torch.distributed as dist


def active() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank() -> int:
    return dist.get_rank() if active() else 0


def world_size() -> int:
    return dist.get_world_size() if active() else 1


def is_main() -> bool:
    return rank() == 0


def init_from_env(device: str) -> None:
    """Join the process group that torchrun describes in the environment (WORLD_SIZE > 1), once: NCCL on
    GPUs (each process on its LOCAL_RANK's device), gloo on CPUs. The long timeout lets the other processes
    wait while rank 0 evaluates."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or (dist.is_available() and dist.is_initialized()):
        return
    if device == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if device == "cuda" else "gloo", timeout=timedelta(hours=2))


def rank_slice(indices: torch.Tensor) -> torch.Tensor:
    """This process's share of the global batch: consecutive blocks, rank 0 first."""
    if not active():
        return indices
    share = len(indices) // world_size()
    return indices[rank() * share:(rank() + 1) * share]


def gather_rows(x: torch.Tensor) -> torch.Tensor:
    """The rows of `x` from every process, rank 0 first; gradients flow back to each process's own rows
    (torch.distributed.nn's all_gather sums them over the processes in its backward)."""
    if not active():
        return x
    from torch.distributed.nn.functional import all_gather

    return torch.cat(all_gather(x.contiguous()))


def mean_over_processes(values: dict[str, float]) -> dict[str, float]:
    """Loss terms averaged over the processes, for the record (local terms differ per process)."""
    if not active() or not values:
        return values
    t = torch.tensor(list(values.values()), dtype=torch.float64)
    dist.all_reduce(t)
    return dict(zip(values, (t / world_size()).tolist()))


def broadcast_flag(flag: bool) -> bool:
    """Rank 0's `flag` in every process (a decision only rank 0 can take, e.g. the stopping rule's)."""
    if not active():
        return flag
    box = [flag]
    dist.broadcast_object_list(box, src=0)
    return bool(box[0])


def barrier() -> None:
    if active():
        dist.barrier()


def all_rng_states(device: str) -> list:
    """Every process's RNG states (rank 0 first), for an exact resume: [(cpu, cuda or None)]."""
    mine = (torch.get_rng_state(), torch.cuda.get_rng_state() if device == "cuda" else None)
    if not active():
        return [mine]
    states = [None] * world_size()
    dist.all_gather_object(states, mine)
    return states
