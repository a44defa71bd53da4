"""Compute every run the cpu edition of the book reads (cached: reruns are free). Used once by the
developers to fill results/; `make book` gets the same runs from the cache through the notebooks."""
import sys

from sre_repro.evaluate.model import evaluate_model
from sre_repro.train import train

SEEDS = [42, 43, 44]
which = sys.argv[1:] or ["baselines", "simcse", "simcse_sup"]
if "baselines" in which:
    for pooler in ["cls", "avg", "avg_first_last", "avg_first_last_emb", "avg_top2"]:
        print("minilm", pooler, evaluate_model(model_name="minilm", pooler=pooler)["metrics"]["sts"]["avg"], flush=True)
    print("minilm whitening", evaluate_model(model_name="minilm", pooler="avg_first_last", whiten=True)["metrics"]["sts"]["avg"], flush=True)
    print("glove", evaluate_model(model_name="glove")["metrics"]["sts"]["avg"], flush=True)
for method in ("simcse", "simcse_sup"):
    if method in which:
        for seed in SEEDS:
            r = train({"method": method, "scale": "cpu", "seed": seed})
            print(method, seed, r["metrics"]["sts"]["avg"], r["wall_seconds"], flush=True)
