"""Data parallelism (issue 21): 2 gloo processes on the CPU with batch b equal one process with batch 2b.

Dropout is the one thing that cannot agree (each process draws its own masks), so these tests train a copy of
the tiny random BERT with dropout off. Everything else is the real thing: DistributedDataParallel, the
all-gather of the in-batch negatives, the trainer's data split, rank-0-only evaluation and writing, torchrun.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from sre_repro import runs
from sre_repro.config import resolve
from sre_repro.methods import get_method
from sre_repro.train import seed_everything, train

B = 4  # per-process batch
SENTENCES = ["A man is playing a guitar.", "The cat sleeps on the mat all afternoon.", "Rain.",
             "Two children are running through a field of tall grass.", "She reads.", "A dog barks at the mailman.",
             "Stock markets fell sharply on Monday after the announcement.", "He cooks pasta."]


@pytest.fixture(scope="module")
def no_dropout_model(tmp_path_factory):
    """The tiny random BERT with dropout off, saved as a local model folder."""
    from sre_repro.encoder import tiny_random_bert

    model, tokenizer = tiny_random_bert()
    model.config.hidden_dropout_prob = model.config.attention_probs_dropout_prob = 0.0
    folder = tmp_path_factory.mktemp("no_dropout_bert")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def _join(rank, world, init_file):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)


def _loss_and_gradients(model_name: str, sentences: list[str], parallel: bool):
    cfg = resolve(overrides={"method": "simcse", "scale": "smoke", "model_name": model_name, "batch_size": B})
    seed_everything(cfg["seed"])
    method = get_method("simcse").build(cfg, "cpu")
    module = torch.nn.parallel.DistributedDataParallel(method, find_unused_parameters=True) if parallel else method
    loss = (module(method.collate(sentences)) if parallel else method.loss(method.collate(sentences)))["loss"]
    loss.backward()
    return float(loss), {n: p.grad.clone() for n, p in method.named_parameters() if p.grad is not None}


def _gradient_worker(rank, world, init_file, model_name, out):
    _join(rank, world, init_file)
    try:
        loss, grads = _loss_and_gradients(model_name, SENTENCES[rank * B:(rank + 1) * B], parallel=True)
        torch.save({"loss": loss, "grads": grads}, Path(out) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def test_two_processes_give_the_loss_and_gradients_of_one_with_twice_the_batch(no_dropout_model, tmp_path):
    mp.spawn(_gradient_worker, args=(2, tmp_path / "init", no_dropout_model, str(tmp_path)), nprocs=2)
    loss, grads = _loss_and_gradients(no_dropout_model, SENTENCES, parallel=False)
    assert loss > 0.1  # a real contrastive loss over 8 sentences, not a degenerate one
    for rank in (0, 1):
        got = torch.load(tmp_path / f"rank{rank}.pt")
        assert got["loss"] == pytest.approx(loss, abs=1e-6)
        assert got["grads"].keys() == grads.keys() and len(grads) > 10
        for name, grad in grads.items():
            torch.testing.assert_close(got["grads"][name], grad, atol=1e-6, rtol=1e-5, msg=name)
    # the gradients are not trivially equal: half the batch alone gives others
    _, half = _loss_and_gradients(no_dropout_model, SENTENCES[:B], parallel=False)
    assert any(not torch.allclose(half[n], grads[n], atol=1e-6) for n in grads)


def _training_worker(rank, world, init_file, overrides, store):
    """train() in a process group; logs every file the process writes."""
    import sre_repro.train as trainer

    _join(rank, world, init_file)
    written = []
    atomic_json, atomic_torch = runs.write_json_atomic, trainer._save_torch_atomic
    runs.write_json_atomic = lambda path, data: (written.append(str(path)), atomic_json(path, data))[1]
    trainer._save_torch_atomic = lambda obj, path: (written.append(str(path)), atomic_torch(obj, path))[1]
    try:
        record = train(overrides, results_root=Path(store) / "results", work_root=Path(store) / "work")
        (Path(store) / f"rank{rank}.json").write_text(json.dumps({"written": written, "record": record}))
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def two_process_run(no_dropout_model, tmp_path_factory):
    store = tmp_path_factory.mktemp("ddp_run")
    overrides = {"method": "simcse", "scale": "smoke", "model_name": no_dropout_model, "batch_size": B,
                 "max_steps": 3, "eval_steps": 3}
    mp.spawn(_training_worker, args=(2, store / "init", overrides, str(store)), nprocs=2)
    return store, overrides, [json.loads((store / f"rank{r}.json").read_text()) for r in (0, 1)]


def test_three_steps_on_two_processes_give_the_weights_of_one_process(two_process_run, tmp_path):
    store, overrides, (rank0, _) = two_process_run
    single = train({**overrides, "batch_size": 2 * B}, results_root=tmp_path / "r", work_root=tmp_path / "w")
    assert rank0["record"]["config"]["world_size"] == 2 and single["config"]["world_size"] == 1
    assert rank0["record"]["config_hash"] != single["config_hash"]  # a different run: its global batch is 2 x 4
    weights = [torch.load(next((root / "simcse").glob("*/last.pt")), weights_only=False)["method"]
               for root in (store / "work", tmp_path / "w")]
    assert weights[0].keys() == weights[1].keys()
    # Adam turns float noise in near-zero gradients into steps of up to lr: packed rows summed in another order
    # leave single weights 2e-6 apart; a wrong gradient (one not averaged over the processes) moves them ~lr = 1e-4
    for name in weights[1]:
        torch.testing.assert_close(weights[0][name], weights[1][name], atol=1e-5, rtol=1e-5, msg=name)
    losses = [[p["loss"] for p in run["dev_curve"]] for run in (rank0["record"], single)]
    assert losses[0] == pytest.approx(losses[1], abs=1e-6)
    start = torch.load(next((tmp_path / "w" / "simcse").glob("*/last.pt")), weights_only=False)["start_weights"]
    assert single["training"]["moved"]["plm"] > 0 and start  # the weights did move in those 3 steps


def test_only_rank_0_writes_and_every_process_returns_its_record(two_process_run):
    store, _, (rank0, rank1) = two_process_run
    assert rank1["written"] == []
    assert any(p.endswith(".json") for p in rank0["written"]) and any(p.endswith("last.pt") for p in rank0["written"])
    assert rank1["record"]["metrics"] == rank0["record"]["metrics"]
    assert len(list((store / "results" / "simcse").glob("*.json"))) == 1


def _resumable_worker(rank, world, init_file, overrides, store, interrupt_at_step):
    from sre_repro.train import Interrupted

    _join(rank, world, init_file)
    try:
        try:
            record = train(overrides, results_root=Path(store) / "results", work_root=Path(store) / "work",
                           interrupt_at_step=interrupt_at_step)
        except Interrupted:
            record = None
        (Path(store) / f"rank{rank}.json").write_text(json.dumps(record))
    finally:
        dist.destroy_process_group()


def test_an_interrupted_two_process_run_resumes_to_identical_numbers(tmp_path):
    """With dropout on, so resuming must restore every rank's own random state, not just rank 0's."""
    overrides = {"method": "simcse", "scale": "smoke", "batch_size": B, "max_steps": 6, "eval_steps": 3,
                 "checkpoint_steps": 2}
    runs_ = {}
    for name, interrupts in (("straight", [None]), ("resumed", [4, None])):
        for i, interrupt in enumerate(interrupts):
            store = tmp_path / name
            mp.spawn(_resumable_worker, args=(2, tmp_path / f"init-{name}-{i}", overrides, str(store), interrupt),
                     nprocs=2)
        runs_[name] = json.loads((store / "rank0.json").read_text())
    assert json.loads((tmp_path / "resumed" / "rank1.json").read_text()) is not None
    straight, resumed = runs_["straight"], runs_["resumed"]
    assert [p["loss"] for p in resumed["dev_curve"]] == [p["loss"] for p in straight["dev_curve"]]
    assert resumed["metrics"]["sts"] == straight["metrics"]["sts"]


def test_torchrun_trains_with_the_documented_command(tmp_path):
    env = {**os.environ, "SRE_REPRO_RESULTS": str(tmp_path / "r"), "SRE_REPRO_WORK": str(tmp_path / "w"),
           "OMP_NUM_THREADS": "1"}
    torchrun = Path(sys.executable).with_name("torchrun")
    done = subprocess.run([str(torchrun), "--standalone", "--nproc_per_node", "2", "-m", "sre_repro", "train",
                           "--method", "simcse", "--set", "scale=smoke", "--set", "batch_size=4", "--format", "json"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("STS12") == 1  # the scores are printed once, by rank 0
    record, = [json.loads(p.read_text()) for p in (tmp_path / "r" / "simcse").glob("*.json")]
    assert record["config"]["world_size"] == 2 and record["n_train_examples"] == 96
    assert record["steps"] == 6 and record["dev_curve"][-1]["step"] == 6


def test_world_size_cannot_be_set_by_hand(tmp_path):
    from sre_repro.errors import SreError

    with pytest.raises(SreError, match="torchrun's --nproc_per_node sets it"):
        train({"method": "simcse", "scale": "smoke", "world_size": 2}, results_root=tmp_path / "r",
              work_root=tmp_path / "w")
