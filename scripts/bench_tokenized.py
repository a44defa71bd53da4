"""What keeping Encoder.encode's tokenized batches saves: a run's evaluations (the STS sets at the end, STS-B dev
during training) with the tokenized batches of an earlier run kept (encoder.TOKENIZED) and with them cleared
first, as every evaluation was before. The two arms alternate on the same encoder and sentences, so the machine's
drift falls on both; medians of `--repeats` pairs after one warm-up. Prints one JSON line per case.

    python scripts/bench_tokenized.py [--repeats 5]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from sre_repro import encoder as enc
from sre_repro.data.sts import load_split
from sre_repro.evaluate.sts import evaluate_sts, evenly_spaced

# (model, what is encoded, STS pairs per subset: 0 = all): a smoke run's final evaluation, a cpu run's STS-B dev
CASES = [("tiny-random", "STS tasks", 100), ("sre-bert", "STS-B dev", 0)]


def one_case(model: str, what: str, max_pairs: int, repeats: int) -> dict:
    encoder = enc.Encoder(model, "avg", device="cpu").eval()
    if what == "STS tasks":
        evaluate = lambda: evaluate_sts(encoder.encode, max_pairs=max_pairs)  # noqa: E731
    else:
        pairs = evenly_spaced(load_split("STSBenchmark", "dev"), max_pairs)
        evaluate = lambda: encoder.encode(list(dict.fromkeys([*pairs.sent1, *pairs.sent2])))  # noqa: E731
    times = {"cleared": [], "kept": []}
    for i in range(repeats + 1):
        for arm in times:
            if arm == "cleared":
                enc.TOKENIZED.clear()
            began = time.perf_counter()
            evaluate()
            if i:  # the first pair warms up
                times[arm].append(time.perf_counter() - began)
    cleared, kept = statistics.median(times["cleared"]), statistics.median(times["kept"])
    return {"model": model, "encoded": what, "max_pairs": max_pairs, "threads": torch.get_num_threads(),
            "cleared_s": round(cleared, 3), "kept_s": round(kept, 3), "cleared_over_kept": round(cleared / kept, 2),
            "repeats": repeats}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for case in CASES:
        print(json.dumps(one_case(*case, args.repeats)), flush=True)


if __name__ == "__main__":
    main()
