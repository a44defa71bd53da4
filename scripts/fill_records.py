"""Train the converged `cpu` runs the chapters' ports (issues 33-36) still miss, in priority order, on several
processes at once: CPU lanes here, or many processes sharing one GPU. Each finished run lands in the run cache
(results/) as it completes, so a cut-off session loses at most the runs in flight. A cached run whose checks are
missing is planned again for them alone (its kept weights are retrained where this machine lacks them).

    python scripts/fill_records.py plan [--out jobs.json]         # the missing runs, one JSON object each
    python scripts/fill_records.py run --workers 2 [--threads 1] [--jobs jobs.json] [--launch-until SECONDS] [--pack DIR]

`run` trains the jobs of `--jobs` (default: the plan, now) on `--workers` processes, `--threads` each (default
one: OMP_NUM_THREADS is set for them; one job alone on 2 cores runs faster with 2); a worker starts no new run
after `--launch-until` seconds. `--pack DIR` writes every new record into DIR/records.tar after each finished run
(a device call's $OUT, which returns files, not folders). A plan needs the committed records (it skips what the
cache holds); a device call that carries only part of results/ runs a plan written here (`--jobs`). Runs are trained under the "pending" cpu recipe
(settings.CAPS_PENDING); a job's "checks" are the evaluations of its kept weights made after it (CHECKS). When a
pending cap moves into the converged recipe, plan again: the runs that start from the method's runs (supervised
PaSeR) are then stale and listed. Before it moves, those runs are computed in a worktree with the move applied and
staged (scripts/flip.py); there SRE_REPRO_WORK=<this checkout>/work shares the checkpoints, so a run the lane here
began resumes there.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import tarfile
import time
import traceback
from pathlib import Path
from unittest import mock

S5, S3 = [42, 43, 44, 45, 46], [42, 43, 44]


# Each run is trained under this cpu recipe: the converged one, with the caps the study chose for the methods whose
# chapters wait for their runs at them (settings.CAPS_PENDING)
RECIPE = "pending"


def wanted() -> list[dict]:
    """Every converged run the ports read, in priority order (a run already cached is dropped by `plan`); a job's
    "checks" name the evaluations of its kept weights its chapter reads (CHECKS), made while the weights are here."""
    from sre_repro.chapters import byop, paser, pt_bert, sarcse, slt_fai

    jobs = []

    def add(method, seeds, checks=(), **overrides):
        for seed in seeds:
            kept = [c for c in checks if c != "pt_bert" or seed in pt_bert.KEPT_WEIGHT_SEEDS["cpu"]]
            jobs.append({"method": method, "scale": "cpu", "seed": seed, **overrides, **({"checks": kept} if kept else {})})

    # issue 33: SARCSE (batch table) and BYOP (per-column reading, Appendix B's margin, Tables 8-9, RankCSE)
    for method in ("simcse", "sarcse"):
        add(method, S3[:1], **sarcse.same_budget("cpu", method, 32))
    add("byop", S3, margin_type="dynamic", perturbation="n-", loss_mode="single", dynamic_margin_axis="column", margin=0.01)
    add("byop", S3[:1], margin_type="constant", perturbation="n-", loss_mode="single", margin=0.1)
    add("byop", S3[:1], margin_type="dynamic", perturbation="p+n-", loss_mode="single", dynamic_margin_axis="anchor")
    add("byop", S3[:1], margin_type="dynamic", perturbation="n-", loss_mode="multi-task", dynamic_margin_axis="anchor")
    teachers = byop.leave_one_out_teachers(S3, pool=S5)
    for settings in ({}, {"byop": "constant", "perturbation": "n-", "margin": 0.01},
                     {"byop": "dynamic", "perturbation": "n-", "dynamic_margin_axis": "anchor"}):
        jobs.extend({"method": "rankcse", "scale": "cpu", "seed": s, **settings, **teachers[s]} for s in S3)
    # issue 34: PT-BERT's rows (both readings and MoCo at the headline's seeds), its grids, SimCSE's lengths
    headline = pt_bert.HEADLINE_SEEDS["cpu"]  # SimCSE's row too, seed-matched
    add("simcse", headline)
    for name, overrides in pt_bert.variants(["reorder", "duplication", "deletion"]).items():
        # the headline's kept-weight seeds: strict thresholds, the length control, the test with h
        add("pt_bert", S3 if name.startswith("MoCo-BERT +") else headline, checks=["pt_bert"] * (name == "PT-BERT"), **overrides)
    for n in (64, 90, 256, 360):
        add("pt_bert", S3, pseudo_length=n)
    for q in (192, 320):
        add("pt_bert", S3, queue_keys=q)
    for n in (64, 128):
        add("simcse", S3, max_len=n)
    # issues 35 and 36: the baselines whose method code their ports leave alone
    add("consert", S5)
    add("simcse_mlm", S5)
    # issue 35: the settings tried for AT's similarity discriminator (chosen on STS-B dev), then the chapter's rows
    # with the chosen one: the headlines at 5 seeds, the ablations and both readings at 3, the lambda grid at 3
    # (the code reading keeps the code's AT: plain CE, GRL 1; w/o AT has no AT to set)
    disc = ["discriminators"]
    for overrides in slt_fai.AT_TRAINING.values():
        add("slt_fai", S3[:1], disc, **overrides)
    at = slt_fai.AT_TRAINING[slt_fai.AT_CHOSEN]
    add("slt_fai", S5, disc, **at)
    add("slt_fai", S3, disc, alpha=0.0)
    add("slt_fai", S5, disc, backbone="simcse", **at)
    add("slt_fai", S3, disc, beta=0.0, **at)
    add("slt_fai", S3, disc, backbone="simcse", alpha=0.0)
    add("slt_fai", S3, disc, backbone="simcse", beta=0.0, **at)
    add("slt_fai", S3, disc, **slt_fai.VARIANTS["code reading"])
    add("slt_fai", S3, disc, **slt_fai.VARIANTS["the paper's ISF rule"], **at)
    for rate in (0.1, 0.3, 0.7, 0.9):
        add("slt_fai", S3, disc, low_rate=rate, **at)
    # issue 36: PaSeR's rows (the headlines at 5 seeds, Eq. 2's signal, no MLM and no augmentation at 3, supervised at 5
    # beside supervised SimCSE) and every grid row at the first seed: depths 1-8, Table 4's augmentations,
    # Table 5's maskings, Table 8's (m, n)
    # (every PaSeR run: the decoder check; the QQP retrieval rows; Table 9's poolers: the preset's first seed)
    dec, qqp = ["decoder"], ["qqp"]
    add("simcse", S5, qqp, train_data="sts_unlabeled")
    add("simcse_mlm", S3, train_data="sts_unlabeled")
    add("paser", S5[:1], [*dec, *qqp, "poolers"])
    add("paser", S5[1:], [*dec, *qqp])
    add("paser", S3, dec, signal="paper")
    add("paser", S3, dec, augment="none")
    add("paser", S3, dec, mlm_weight=0.0)  # Sec. 4.3's "MLM does not hurt PaSeR" (the chapter declares it)
    qqp_seeds = paser.seed_count("qqp_supervised", "cpu")  # the chapter retrieves with the first three supervised seeds
    add("simcse_sup", S5[:qqp_seeds], qqp)
    add("simcse_sup", S5[qqp_seeds:])
    for n in (1, 2, 3, 4, 5, 7, 8):
        add("paser", S3[:1], dec, decoder_layers=n)
    for how in ("rs", "rd", "sr+rd", "sr+rs"):
        add("paser", S3[:1], dec, augment=how)
    for name in ("NP", "VP", "NP+VP", "RAKE top1", "RAKE top2", "RAKE top3", "RAKE top4"):
        add("paser", S3[:1], dec, **paser.masking(name))
    for m, n in ((0.1, 1.0), (1.0, 1.0), (10.0, 1.0), (10.0, 0.1)):
        add("paser", S3[:1], dec, m=m, n=n)
    # last: a supervised PaSeR job first retrains its unsupervised start where this machine lacks the weights, so on
    # one CPU core it needs a retrain (about 85 minutes) and its own run (longer), more than a session; a GPU does both
    # in minutes
    add("paser", S5[:qqp_seeds], [*dec, *qqp], **paser.supervised_overrides("cpu"))
    add("paser", S5[qqp_seeds:], dec, **paser.supervised_overrides("cpu"))
    return jobs


def _training(job: dict) -> dict:
    """A job's overrides for train (its "checks" aside)."""
    return {k: v for k, v in job.items() if k != "checks"}


# A check computes what its chapter should read: a stale record (an evaluation of the weights a run had before it was
# recomputed under the same key, as supervised PaSeR is when its start's cap moves) is computed again, not served
FRESH = {"allow_stale": False}


def _slt_fai_check(record: dict) -> str:
    from sre_repro.chapters import slt_fai

    check = slt_fai.discriminator_check(record, **FRESH)["metrics"]
    return " ".join(f"{k} AUC {v['auc']:.3f} bal {v['balanced_accuracy']:.3f}" for k, v in check.items())


def _decoder_check(record: dict) -> str:
    from sre_repro.chapters import paser

    held = paser.decoder_check(record, **FRESH)["metrics"]["held_out"]
    return f"decoder loss {held['loss']:.3f} vs another's signal {held['loss_shuffled']:.3f}"


def _poolers(record: dict) -> str:
    from sre_repro.chapters import paser

    paser.pooler_scores(record, paser.grid("poolers", "cpu"), **FRESH)
    return "poolers scored"


def _pt_bert_checks(record: dict) -> str:
    from sre_repro.chapters import pt_bert

    pt_bert.hard_subset(record, thresholds="strict", **FRESH)
    pt_bert.length_control(record, **FRESH)
    return f"h avg {pt_bert.h_test(record, **FRESH)['metrics']['h']['sts']['avg']:.2f}"


def _qqp(record: dict) -> str:
    from sre_repro.chapters import paser

    return f"QQP MAP {paser.retrieval(record, **FRESH)['metrics']['map']:.2f}"


# the evaluations of a run's kept weights that its chapter reads (a job's "checks"): each returns what it reports
CHECKS = {"discriminators": _slt_fai_check, "decoder": _decoder_check, "poolers": _poolers,
          "pt_bert": _pt_bert_checks, "qqp": _qqp}


def plan() -> list[dict]:
    from sre_repro import runs
    from sre_repro.config import resolve, use_cpu_recipe
    from sre_repro.train import starts_outdated

    use_cpu_recipe(RECIPE)
    planned: dict[str, dict] = {}
    for job in wanted():
        cfg = resolve(overrides=_training(job))
        key = runs.config_hash(cfg)
        if key in planned:  # one run asked for twice: trained once, with the checks of both
            if checks := list(dict.fromkeys([*planned[key].get("checks", []), *job.get("checks", [])])):
                planned[key]["checks"] = checks
            continue
        record = runs.read(cfg["method"], cfg)
        # a run another checkout computed before its variant had a fingerprint waits for `records adopt`, not a rerun;
        # one whose start is now another run (a pending cap moved into the recipe) is rerun
        held = (record is not None and not starts_outdated(cfg, record)
                and all("before it had a fingerprint" in why for why in runs.stale_reasons(record)))
        if not held:
            planned[key] = job
        elif missing := _missing_checks(record, job.get("checks", [])):  # served from the cache, then checked
            planned[key] = {**job, "checks": missing}
    return list(planned.values())


class _Missing(Exception):
    """An evaluation the run cache lacks (raised instead of computing it: _missing_checks)."""


def _missing_checks(record: dict, checks: list[str]) -> list[str]:
    """The checks of a cached run whose evaluations the cache lacks (a session ended before they ran, and its kept
    weights went with its machine): each check is called with every computation replaced by one that raises."""
    from sre_repro.evaluate import cached

    def absent(cfg, data_dir=None):
        raise _Missing

    missing = []
    with mock.patch.dict(cached.COMPUTE, {kind: absent for kind in cached.COMPUTE}):  # restored on the way out
        for name in checks:
            try:
                CHECKS[name](record)
            except _Missing:
                missing.append(name)
    return missing


def _worker(queue, done, deadline: float) -> None:
    from sre_repro.config import use_cpu_recipe
    from sre_repro.train import train

    use_cpu_recipe(RECIPE)
    while (job := queue.get()) is not None and time.time() < deadline:
        started = time.time()
        try:
            record = train(_training(job))
            m = record["metrics"]
            extra = "".join(f" {CHECKS[name](record)}" for name in job.get("checks", []))
            done.put(f"OK {job} dev {m['stsb_dev_best']:.2f}@{m['best_step']} avg {m['sts']['avg']:.2f} "
                     f"{time.time() - started:.0f}s{extra}")
        except Exception:  # one failed run must not stop the others; its traceback is the report
            done.put(f"FAIL {job} {traceback.format_exc()[-1500:]}")
    done.put(None)


def _records() -> dict[Path, int]:
    from sre_repro import runs

    return {path: path.stat().st_mtime_ns for path in runs.results_dir().glob("*/*.json")}


def _pack(before: dict, folder: Path) -> int:
    """Every record new or rewritten since `before` (a stale one recomputed keeps its path) into
    folder/records.tar, as results/<kind>/<hash>.json (untar in the repo)."""
    from sre_repro import runs

    new = sorted(path for path, mtime in _records().items() if before.get(path) != mtime)
    tmp = folder / "records.tar.tmp"
    with tarfile.open(tmp, "w") as tar:
        for path in new:
            tar.add(path, arcname=f"results/{path.relative_to(runs.results_dir())}")
    tmp.replace(folder / "records.tar")
    return len(new)


def run(jobs: list[dict], workers: int, launch_until: float, pack: Path | None, threads: int = 1) -> None:
    os.environ["OMP_NUM_THREADS"] = str(threads)  # the spawned workers inherit it: `threads` each (default one)
    before, start = _records(), time.time()
    queue, done = mp.get_context("spawn").Queue(), mp.get_context("spawn").Queue()
    for job in [*jobs, *[None] * workers]:
        queue.put(job)
    procs = [mp.get_context("spawn").Process(target=_worker, args=(queue, done, start + launch_until))
             for _ in range(workers)]
    for proc in procs:
        proc.start()
    finished = 0
    while finished < workers:
        message = done.get()
        if message is None:
            finished += 1
            continue
        packed = f" | {_pack(before, pack)} new records packed" if pack else ""
        print(f"[{time.time() - start:5.0f}s] {message}{packed}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan")
    p.add_argument("--out")
    r = sub.add_parser("run")
    r.add_argument("--workers", type=int, default=2)
    r.add_argument("--jobs", help="a plan written earlier (default: plan now)")
    r.add_argument("--launch-until", type=float, default=float("inf"))
    r.add_argument("--pack", type=Path)
    r.add_argument("--threads", type=int, default=1, help="threads per worker (one worker on 2 cores: 2)")
    args = parser.parse_args()
    if args.command == "plan":
        todo = plan()
        if args.out:
            Path(args.out).write_text(json.dumps(todo, indent=0))
        else:
            print(json.dumps(todo, indent=0))
        print(f"{len(todo)} missing runs", file=sys.stderr)
    else:
        run(json.loads(Path(args.jobs).read_text()) if args.jobs else plan(), args.workers, args.launch_until, args.pack,
            args.threads)
