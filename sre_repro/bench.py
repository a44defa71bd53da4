"""Throughput benchmarks of the build machine: GEMM, SimCSE training steps, encoding, full STS evaluation,
MLM pretraining steps of candidate stand-in PLM sizes (how `sre-bert`'s size and steps were chosen), the
training peer (sentence-transformers) and packed against padded training steps (`--only packing`).

Medians of repeated runs (these machines are noisy). Writes one JSON that the book's appendix reads.
"""
from __future__ import annotations

import json
import platform
import statistics
import time
from pathlib import Path

import torch

from .config import resolve
from .data.corpora import unlabeled_sts, wiki1m
from .encoder import Encoder, autocast
from .evaluate.sts import evaluate_sts
from .methods import get_method
from .packing import hidden_states
from .runs import write_json_atomic


def _median_time(fn, repeats: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def gemm(n: int = 2048, repeats: int = 5) -> list[dict]:
    out = []
    for dtype in (torch.float32, torch.bfloat16):
        a = torch.randn(n, n).to(dtype)
        reps = repeats if dtype == torch.float32 else 1  # bf16 can be ~500x slower on CPUs without bf16 units
        t = _median_time(lambda: a @ a, reps)
        out.append({"dtype": str(dtype).replace("torch.", ""), "n": n, "seconds": t, "GFLOP/s": 2 * n ** 3 / t / 1e9})
    return out


def simcse_step(model: str, precision: str, sentences: list[str], pooler: str = "cls"):
    """One of our SimCSE training steps (batch 64, length 32) as a function to call: each call trains the next batch."""
    cfg = resolve(overrides={"model_name": model, "precision": precision, "batch_size": 64, "max_len": 32,
                             "pooler": pooler, "eval_pooler": pooler})
    torch.manual_seed(0)
    encoder = Encoder(model, pooler, device="cpu")
    method = get_method("simcse")(cfg, encoder)
    optimizer = torch.optim.AdamW(method.parameters(), lr=3e-5)
    batches = iter(range(10_000))

    def step():
        i = next(batches) % (len(sentences) // 64)
        batch = method.collate(sentences[i * 64:(i + 1) * 64])
        with autocast(precision, "cpu"):
            loss = method.loss(batch)["loss"]
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    return step


def simcse_steps(model: str, precision: str, sentences: list[str], steps: int, pooler: str = "cls") -> dict:
    t = _median_time(simcse_step(model, precision, sentences, pooler), steps)
    return {"model": model, "precision": precision, "batch": 64, "max_len": 32, "step_s": t,
            "sentences_per_s": 64 / t, "steps_timed": steps, "pooler": pooler}


def sentence_transformers_steps(model: str, precision: str, sentences: list[str], steps: int, between=None,
                                max_len: int = 32) -> dict:
    """The training peer: sentence-transformers' own trainer on unsupervised SimCSE (each sentence its own
    positive, MultipleNegativesRankingLoss at scale 20 = temperature 0.05), mean pooling, batch 64, length 32,
    padded batches, no gradient clipping (our step has none); the median of `steps` steps after two warm-up steps. `between`:
    called after each of the peer's steps, outside its timing (training_peer times our step there)."""
    import tempfile

    from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import TrainerCallback

    from .encoder import resolve_model_path

    torch.manual_seed(0)
    transformer = Transformer(str(resolve_model_path(model)), max_seq_length=max_len)
    st = SentenceTransformer(modules=[transformer, Pooling(transformer.get_embedding_dimension(), "mean")], device="cpu")
    times = []

    class StepTimer(TrainerCallback):
        def on_step_begin(self, *_, **__):
            times.append(-time.perf_counter())

        def on_step_end(self, *_, **__):
            times[-1] += time.perf_counter()
            if between is not None:
                between()

    batch, total = 64, steps + 2
    data = Dataset.from_dict({"anchor": sentences[:batch * total], "positive": sentences[:batch * total]})
    with tempfile.TemporaryDirectory() as out:
        args = SentenceTransformerTrainingArguments(
            output_dir=out, per_device_train_batch_size=batch, max_steps=total, learning_rate=3e-5,
            max_grad_norm=0.0, bf16=precision == "bf16", use_cpu=True, report_to=[], save_strategy="no",
            logging_strategy="no", dataloader_drop_last=True, disable_tqdm=True, seed=0)
        SentenceTransformerTrainer(model=st, args=args, train_dataset=data,
                                   loss=MultipleNegativesRankingLoss(st, scale=20.0),
                                   callbacks=[StepTimer()]).train()
    t = statistics.median(times[2:])
    return {"model": model, "precision": precision, "batch": batch, "max_len": max_len, "step_s": t,
            "sentences_per_s": batch / t, "steps_timed": len(times) - 2,
            "trainer": "sentence-transformers SentenceTransformerTrainer + MultipleNegativesRankingLoss"}


def has_bf16_units() -> bool:
    """bf16 matmuls at least half as fast as fp32 (without bf16 units they are tens of times slower)."""
    a = torch.randn(512, 512)
    fp32, bf16 = _median_time(lambda: a @ a, 3), _median_time(lambda: a.bfloat16() @ a.bfloat16(), 1)
    return bf16 < 2 * fp32


def training_peer(sentences: list[str], quick: bool = False) -> dict:
    """Our SimCSE step against sentence-transformers' on the same model (MiniLM, mean pooling), batch, length and
    precision, in one run; bf16 only where the CPU has bf16 units. The two alternate, one timed step of each in
    turn (ours right after each of the peer's), so that the machine's noise falls on both alike; each side's
    median of `steps` steps after the same two warm-up steps."""
    import sentence_transformers

    steps = 3 if quick else 8
    rows = []
    for precision in ("fp32", "bf16") if has_bf16_units() else ("fp32",):
        ours_step, ours_times = simcse_step("minilm", precision, sentences, pooler="avg"), []

        def timed_ours():
            start = time.perf_counter()
            ours_step()
            ours_times.append(time.perf_counter() - start)

        peer = sentence_transformers_steps("minilm", precision, sentences, steps, between=timed_ours)
        ours_s = statistics.median(ours_times[2:])
        rows.append({"precision": precision, "ours_step_s": ours_s, "peer_step_s": peer["step_s"],
                     "ours_over_peer": ours_s / peer["step_s"], "steps_timed": steps})
        print(rows[-1], flush=True)
    return {"model": "minilm", "pooler": "mean", "batch": 64, "max_len": 32, "loss": "InfoNCE, temperature 0.05",
            "peer": f"sentence-transformers {sentence_transformers.__version__}", "bf16_units": len(rows) == 2,
            "rows": rows}


def encoding(model: str, sentences: list[str], precision: str) -> list[dict]:
    encoder = Encoder(model, "avg", device="cpu")
    sorted_t = _median_time(lambda: encoder.encode(sentences, pooler="avg", precision=precision), 2, 0)

    @torch.no_grad()
    def naive():  # the plain loop: input order, no de-duplication
        with autocast(precision, "cpu"):
            for i in range(0, len(sentences), 128):
                encoder.embed(encoder.tokenize(sentences[i:i + 128]), "avg")

    naive_t = _median_time(naive, 2, 0)
    return [{"model": model, "precision": precision, "loop": name, "sentences": len(sentences),
             "seconds": t, "sentences_per_s": len(sentences) / t}
            for name, t in (("dedup + length-sorted (Encoder.encode)", sorted_t), ("input order", naive_t))]


# candidate stand-in sizes: (layers, hidden); heads = hidden / 64, FFN = 4 x hidden
PRETRAIN_SIZES = [(4, 256), (6, 256), (6, 384)]


def pretraining_steps(layers: int, hidden: int, steps: int, data_dir=None) -> dict:
    """One MLM step at the cpu preset's batch (64 blocks of 128 tokens), for a stand-in size."""
    cfg = resolve(overrides={"method": "mlm", "num_layers": layers, "hidden": hidden, "heads": hidden // 64,
                             "intermediate": 4 * hidden, "pretrain_sources": "wiki1m"})
    method = get_method("mlm").build(cfg, "cpu", data_dir)
    blocks = method.corpus()
    optimizer = torch.optim.AdamW(method.parameters(), lr=5e-4)
    batches = iter(range(10_000))

    def step():
        i = next(batches)
        loss = method.loss(method.collate(blocks[i * 64:(i + 1) * 64]))["loss"]
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    t = _median_time(step, steps)
    return {"layers": layers, "hidden": hidden, "parameters_M": sum(p.numel() for p in method.model.parameters()) / 1e6,
            "batch": 64, "block": 128, "step_s": t, "steps_per_hour": 3600 / t, "steps_timed": steps}


# ----- packing: real tokens only (sre_repro/packing.py) -------------------------------------------------------

def real_tokens(batch) -> int:
    """The real (non-padding) tokens of a collated batch, every tokenised part counted (PT-BERT's key view too)."""
    if not isinstance(batch, dict):
        return 0
    own = int(batch["attention_mask"].sum()) if "attention_mask" in batch else 0
    return own + sum(real_tokens(v) for v in batch.values())


def training_step(method: str, max_len: int, packed: bool, sentences: list[str], model: str = "sre-bert"):
    """One training step of `method` as the cpu edition trains it (its PLM, pooler and knobs; batch 64, fp32) at
    `max_len`, as a function to call: each call trains the next batch of `sentences`, collation included, and
    returns the batch's real tokens."""
    cfg = resolve(method, {"scale": "cpu", "model_name": model, "max_len": max_len, "packed": packed,
                           "batch_size": 64, "precision": "fp32"})
    torch.manual_seed(0)
    trained = get_method(method).build(cfg, "cpu").train()
    optimizer = torch.optim.AdamW(trained.parameters(), lr=cfg["lr"])
    batches = iter(range(10_000))

    def step() -> int:
        i = next(batches) % (len(sentences) // 64)
        batch = trained.collate(sentences[i * 64:(i + 1) * 64])
        trained.loss(batch)["loss"].backward()
        optimizer.step()
        optimizer.zero_grad()
        return real_tokens(batch)

    return step


PACKING_ARMS = [("simcse", 32), ("simcse", 64), ("pt_bert", 64)]


def packing(sentences: list[str], quick: bool = False) -> dict:
    """Real tokens per second of training steps (sre-bert, fp32, batch 64), packed and padded, for SimCSE at
    max_len 32 and 64 and PT-BERT at 64, against sentence-transformers' trainer on SimCSE at 64 with the same
    model and sentences. The arms alternate: after each of the peer's steps one step of each of ours, each in
    its own order over the same batches, so the machine's noise falls on all alike; medians after two warm-ups."""
    import sentence_transformers

    steps = 3 if quick else 8
    arms = {(m, n, p): training_step(m, n, p, sentences) for m, n in PACKING_ARMS for p in (True, False)}
    timed = {arm: [] for arm in arms}

    def one_of_each():
        for arm, step in arms.items():
            start = time.perf_counter()
            tokens = step()
            timed[arm].append((time.perf_counter() - start, tokens))

    peer = sentence_transformers_steps("sre-bert", "fp32", sentences, steps, between=one_of_each, max_len=64)
    rows = []
    for (method, max_len, packed), runs in timed.items():
        seconds = statistics.median(t for t, _ in runs[2:])
        rows.append({"method": method, "max_len": max_len, "packed": packed, "step_s": seconds,
                     "real_tokens_per_s": statistics.median(n / t for t, n in runs[2:]),
                     "real_tokens_per_step": statistics.mean(n for _, n in runs[2:])})
    step_s = {(r["method"], r["max_len"], r["packed"]): r["step_s"] for r in rows}
    speedups = [{"method": m, "max_len": n, "packed_over_padded": step_s[(m, n, False)] / step_s[(m, n, True)]}
                for m, n in PACKING_ARMS]
    simcse_64 = next(r for r in rows if (r["method"], r["max_len"], r["packed"]) == ("simcse", 64, True))
    peer_row = {"peer": f"sentence-transformers {sentence_transformers.__version__}", "max_len": 64,
                "step_s": peer["step_s"], "steps_timed": peer["steps_timed"],
                "ours_packed_over_peer": peer["step_s"] / simcse_64["step_s"]}
    print(json.dumps({"speedups": speedups, "peer": peer_row}), flush=True)
    return {"model": "sre-bert", "precision": "fp32", "batch": 64, "steps_timed": steps, "rows": rows,
            "speedups": speedups, "peer": peer_row, "row_length": row_length(sentences, 2 if quick else 5),
            "encoding": packed_encoding(sentences[:1000 if quick else 4000])}


def row_length(sentences: list[str], repeats: int) -> list[dict]:
    """How long a packed row should be: a SimCSE-shaped forward and backward of sre-bert (2 x 64 sentences) with
    rows as long as the batch's longest sentence (the default) or two or four times that, interleaved."""
    encoder = Encoder("sre-bert", "avg", device="cpu").train()
    out = []
    for max_len in (32, 64):
        batches = [encoder.tokenize(sentences[i * 64:(i + 1) * 64] * 2, max_len) for i in range(repeats + 1)]
        times = {factor: [] for factor in (1, 2, 4)}
        for batch in batches:
            for factor in times:
                start = time.perf_counter()
                states = hidden_states(encoder.model, batch["input_ids"], batch["attention_mask"],
                                       row_len=factor * batch["input_ids"].shape[1])
                states[-1].sum().backward()
                times[factor].append(time.perf_counter() - start)
        out += [{"max_len": max_len, "row_len": f"{factor} x longest", "step_s": statistics.median(t[1:])}
                for factor, t in times.items()]
    return out


@torch.no_grad()
def packed_encoding(sentences: list[str]) -> list[dict]:
    """Evaluation encoding (sre-bert, eval mode): Encoder.encode's length-sorted batches of 128, padded as it runs
    them or packed, batch by batch in turn."""
    encoder = Encoder("sre-bert", "avg", device="cpu").eval()
    ordered = sorted(dict.fromkeys(sentences), key=lambda s: len(encoder.tokenizer.tokenize(s)))
    times = {False: 0.0, True: 0.0}
    for start in range(0, len(ordered), 128):
        batch = encoder.tokenize(ordered[start:start + 128])
        for packed in times:
            began = time.perf_counter()
            hidden_states(encoder.model, batch["input_ids"], batch["attention_mask"], packed=packed)
            times[packed] += time.perf_counter() - began
    return [{"batches": "length-sorted, 128", "packed": packed, "sentences": len(ordered), "seconds": t,
             "sentences_per_s": len(ordered) / t} for packed, t in times.items()]


def main(out: str = "results/benchmark.json", quick: bool = False, data_dir=None, only: str = "") -> dict:
    torch.manual_seed(0)
    if only:  # refresh just this section of the report (a new report of this section alone where `out` is new)
        report = json.loads(Path(out).read_text()) if Path(out).exists() else {}
        sections = {"peer": lambda: training_peer(wiki1m(data_dir), quick),
                    "packing": lambda: packing(wiki1m(data_dir), quick),
                    "pretraining": lambda: [pretraining_steps(l, h, 2 if quick else 4, data_dir) for l, h in PRETRAIN_SIZES]}
        report[only] = sections[only]()
        write_json_atomic(Path(out), report)
        print(json.dumps(report[only]))
        return report
    train_sents = wiki1m(data_dir)
    sts_sents = unlabeled_sts(data_dir)
    report = {"machine": f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads, "
                         f"torch {torch.__version__}, cpu capability {torch.backends.cpu.get_cpu_capability()}",
              "gemm": gemm(repeats=2 if quick else 5), "training": [], "encoding": [], "sts_eval": []}
    for model in ("tiny-random", "minilm"):
        for precision in ("fp32", "bf16"):
            steps = 2 if (quick or precision == "bf16") else 5
            report["training"].append(simcse_steps(model, precision, train_sents, steps))
            print(report["training"][-1], flush=True)
    sample = sts_sents[: 500 if quick else 2000]
    report["encoding"] += encoding("minilm", sample, "fp32")
    report["encoding"] += encoding("minilm", sample[:300], "bf16")
    encoder = Encoder("minilm", "avg", device="cpu")
    times = [_median_time(lambda: evaluate_sts(lambda s: encoder.encode(s, pooler="avg"), "sts", data_dir), 1, 0)
             for _ in range(1 if quick else 2)]
    report["sts_eval"].append({"model": "minilm", "precision": "fp32", "tasks": 7, "seconds": statistics.median(times),
                               "repeats": len(times)})
    report["pretraining"] = [pretraining_steps(l, h, 2 if quick else 4, data_dir) for l, h in PRETRAIN_SIZES]
    report["peer"] = training_peer(train_sents, quick)
    report["packing"] = packing(train_sents, quick)
    by = {(r["model"], r["precision"]): r["step_s"] for r in report["training"]}
    report["targets"] = {"sts_eval_minilm_s": report["sts_eval"][0]["seconds"],
                         "simcse_step_minilm_fp32_s": by[("minilm", "fp32")],
                         "simcse_step_minilm_bf16_s": by[("minilm", "bf16")]}
    write_json_atomic(Path(out), report)
    print(json.dumps(report["targets"]))
    return report
