"""Compute every run the cpu edition of the book reads (cached: reruns are free). Used once by the
developers to fill results/; `make book` gets the same runs from the cache through the notebooks, which
call the same `sre_repro.book` functions with the same arguments."""
import sys

from sre_repro import book

which = sys.argv[1:] or ["baselines", "simcse", "simcse_sup"]
if "baselines" in which:
    for name, result in book.baselines(book.baseline_models("cpu"), allow_stale=False).items():
        print(name, result["metrics"]["sts"]["avg"], flush=True)
for method in ("simcse", "simcse_sup"):
    if method in which:
        for r in book.train_seeds(method, "cpu", book.seeds("cpu"), allow_stale=False):
            print(method, r["seed"], r["metrics"]["sts"]["avg"], r["wall_seconds"], flush=True)
