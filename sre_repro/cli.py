"""Command line: `python -m sre_repro ...` (also installed as `sre-repro`)."""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from .errors import SreError


def _print_scores(scores: dict, fmt: str) -> None:
    from .data.sts import STS_TASKS

    scores = {k: scores[k] for k in [*STS_TASKS, "avg"] if k in scores}
    if fmt == "json":
        print(json.dumps({k: round(v, 4) for k, v in scores.items()}))
    else:
        print("  ".join(f"{k} {v:.2f}" for k, v in scores.items()))


def cmd_data_check(args) -> int:
    from .data.paths import check, how_to_get, missing_groups, resolve_data_dir

    root = resolve_data_dir(args.data_dir)
    missing, corrupt, ok = check(root)
    for rel, count in missing_groups(missing):
        files = f" ({count} files, all of it)" if count > 1 else " (1 file, all of it)" if rel.endswith("/") else ""
        print(f"missing  {rel}{files}: {how_to_get(rel)}")
    for rel in corrupt:
        print(f"corrupt  {rel}: checksum differs; {how_to_get(rel)}")
    print(f"data dir {root}: {ok} files ok, {len(missing)} missing, {len(corrupt)} corrupt")
    return 1 if missing or corrupt else 0


def cmd_eval(args) -> int:
    from .evaluate.cached import evaluate_model

    overrides = {"model_name": args.model, "pooler": args.pooler, "tasks": args.tasks,
                 "precision": args.precision, "whiten": args.whiten}
    from .runs import check_named_data_dir
    from .evaluate.sts import resolve_tasks
    resolve_tasks(args.tasks)
    check_named_data_dir(args.data_dir)
    result = evaluate_model(data_dir=args.data_dir, force=args.force, **overrides)
    _print_scores(result["metrics"]["sts"], args.format)
    return 0


def cmd_train(args) -> int:
    import torch

    from . import distributed
    from .config import load_yaml, parse_sets, resolve
    from .runs import check_named_data_dir
    from .train import train

    overrides = {**load_yaml(args.config), **parse_sets(args.set)}
    if args.method and overrides.get("method", args.method) != args.method:
        raise SreError(f"--method {args.method} contradicts method {overrides['method']!r} of the config: give one")
    if args.method:
        overrides["method"] = args.method
    if "method" not in overrides:
        resolve(overrides=dict(overrides))  # a bad knob is the one line to print, before this notice
        print("sre-repro: no --method given: training simcse (the default)", file=sys.stderr)
    check_named_data_dir(args.data_dir)
    result = train(overrides, data_dir=args.data_dir, force=args.force)
    if distributed.active():  # under torchrun: rank 0 reports, for all the processes
        main = distributed.is_main()
        torch.distributed.destroy_process_group()
        if not main:
            return 0
    metrics = result["metrics"]
    selected = next(k for k in metrics if k.endswith("_best"))  # stsb_dev_best, or mlm_accuracy_best for mlm
    print(f"run {result['config_hash']} ({result['config']['method']}, seed {result['seed']}): "
          f"best {selected.removesuffix('_best')} {metrics[selected]:.2f} at step {metrics['best_step']}",
          file=sys.stderr)
    if "sts" in metrics:
        _print_scores(metrics["sts"], args.format)
    return 0


def _earlier_stages(cfg: dict) -> list[dict]:
    """Training logs of the stages this run continues: when it starts from the folder it writes to, the
    log found there is the previous stage's (unless it is this very run's, served again from the cache)."""
    from .encoder import resolve_model_path
    from .methods.mlm import output_path

    out = output_path(cfg)
    log_file = out / "training_log.json"
    if cfg["init"] == "scratch" or not log_file.is_file():
        return []
    if Path(resolve_model_path(cfg["init"])).resolve() != out.resolve():
        return []
    log = json.loads(log_file.read_text())
    earlier = log.pop("earlier_stages", [])
    return earlier if log["config"] == cfg else [*earlier, log]


def cmd_pretrain(args) -> int:
    from .config import load_yaml, parse_sets
    from .runs import check_named_data_dir
    from .methods.mlm import write_model_card
    from .train import train

    overrides = {**load_yaml(args.config), **parse_sets(args.set), "method": "mlm"}
    check_named_data_dir(args.data_dir)
    result = train(overrides, data_dir=args.data_dir, force=args.force)
    command = " ".join(["python -m sre_repro pretrain", *(["--config", args.config] if args.config else []),
                        *(f"--set {pair}" for pair in args.set or [])])
    earlier = _earlier_stages(result["config"])
    # logs written before commands were recorded have none: say so rather than fail after the training
    commands = ([f"{c} --force" for c in [*(s.get("command", "(command not recorded)") for s in earlier), command]]
                if earlier else [command])
    out = write_model_card(result, "\n    ".join(commands))
    log = {**json.loads((out / "training_log.json").read_text()), "command": command}
    (out / "training_log.json").write_text(json.dumps({**log, "earlier_stages": earlier}, indent=1, sort_keys=True))
    if earlier:
        stages = [*earlier, log]
        lines = [f"{i + 1}. {s.get('command', '?').split()[-1]}: init {s['config']['init']}, {s['config']['max_steps']:,} steps x "
                 f"batch {s['config']['batch_size']}, peak lr {s['config']['lr']}, {s['train_seconds'] / 3600:.2f} h, "
                 f"held-out MLM accuracy {s['final']['heldout']['mlm_accuracy']:.2f}%" for i, s in enumerate(stages)]
        total = sum(s["train_seconds"] for s in stages) / 3600
        with open(out / "README.md", "a") as card:
            card.write(f"\n## Pretraining stages\n\nThe model is the end of {len(stages)} stages ({total:.2f} h in all); "
                       "the figures above are the last stage's.\n\n" + "\n".join(lines) + "\n")
    held = result["metrics"]["heldout"]
    print(f"run {result['config_hash']}: held-out MLM accuracy {held['mlm_accuracy']:.2f}% "
          f"(loss {held['mlm_loss']:.3f}) after {result['steps']} steps; model in {out}")
    return 0


def cmd_download(args) -> int:
    from .data.download import download

    download(args.data_dir or "data", what=args.what)
    return 0


def cmd_export(args) -> int:
    from .export import export

    out = export(args.run, args.to, data_dir=args.data_dir)
    print(f"wrote {out}: load it with SentenceTransformer({str(out)!r}) or AutoModel.from_pretrained")
    return 0


def cmd_bench(args) -> int:
    from .bench import main as bench_main

    bench_main(out=args.out, quick=args.quick, only=args.only)
    return 0


def cmd_records(args) -> int:
    from . import fingerprints, runs

    if args.records_command == "migrate":
        for line in runs.migrate_store(args.results):
            print(line)
        return 0
    if args.records_command == "adopt":
        for line in fingerprints.adopt(args.results, args.data_dir):
            print(line)
        return 0
    if args.records_command == "accept":
        for line in fingerprints.accept(args.variants or None, args.results, args.data_dir, args.workers,
                                        args.other_versions):
            print(line)
        return 0
    state = fingerprints.status(args.results, args.data_dir, args.workers, args.full)
    lines, status = fingerprints.report(state)
    if status == 0:
        fingerprints.write_stamp(state["tree"], args.results)
    print("\n".join(lines))
    return status


def _train_epilog() -> str:
    """`train --help`'s list of methods and of the knobs every method shares, with their defaults."""
    import dataclasses
    import functools
    import textwrap

    from .config import CPU_RECIPES, CommonConfig, SCALE_PRESETS
    from .methods import available, get_method

    methods = ", ".join(f"{m} ({', '.join(f.name for f in dataclasses.fields(get_method(m).Params)) or 'no own knobs'})"
                        for m in available())
    common = ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(CommonConfig()).items())
    recipe = "; ".join(f"{m} " + ", ".join(f"{k}={v:g}" for k, v in knobs.items())
                       for m, knobs in CPU_RECIPES["converged"].items())
    wrap = functools.partial(textwrap.fill, width=110, subsequent_indent="  ")
    return "\n".join([wrap(f"methods and their own knobs: {methods}"),
                      wrap(f"knobs every method has, with their defaults (the scale's preset then replaces some; "
                           f"--set scale=smoke|cpu|paper): {common}"),
                      wrap(f"the cpu preset: {', '.join(f'{k}={v}' for k, v in SCALE_PRESETS['cpu'].items())}; each "
                           f"method's lr, budget and stopping rule at cpu: {recipe}")])


def build_parser(train_help: bool = False) -> argparse.ArgumentParser:
    """The parser; `train_help`: with `train --help`'s list of methods and defaults (it imports every method)."""
    p = argparse.ArgumentParser(prog="sre-repro", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    data = sub.add_parser("data", help="data dir commands")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    check = data_sub.add_parser("check", help="verify every data file against its checksum")
    check.add_argument("--data-dir")
    check.set_defaults(func=cmd_data_check)

    ev = sub.add_parser("eval", help="evaluate a model on the STS tasks without training")
    ev.add_argument("--model", required=True, help="alias (minilm, glove, sre-bert, tiny-random), path or HF name")
    ev.add_argument("--pooler", default="avg")
    ev.add_argument("--tasks", default="sts", help="'sts' (all seven) or one task name")
    ev.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    ev.add_argument("--whiten", action="store_true", help="BERT-whitening fitted on the unlabeled STS sentences")
    ev.add_argument("--data-dir")
    ev.add_argument("--format", default="text", choices=["text", "json"])
    ev.add_argument("--force", action="store_true", help="recompute even if cached")
    ev.set_defaults(func=cmd_eval)

    tr = sub.add_parser("train", help="one training run (cached)", epilog=_train_epilog() if train_help else None,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    tr.add_argument("--method", help="the method to train (default: simcse, or the config's method)")
    tr.add_argument("--config", help="YAML file of key: value overrides")
    tr.add_argument("--set", action="append", metavar="KEY=VALUE", help="override one parameter (repeatable)")
    tr.add_argument("--data-dir")
    tr.add_argument("--format", default="text", choices=["text", "json"])
    tr.add_argument("--force", action="store_true", help="recompute even if cached")
    tr.set_defaults(func=cmd_train)

    pt = sub.add_parser("pretrain", help="MLM pretraining of the stand-in PLM sre-bert (cached, resumable)")
    pt.add_argument("--config", help="YAML file of key: value overrides (e.g. configs/sre-bert.yaml)")
    pt.add_argument("--set", action="append", metavar="KEY=VALUE", help="override one parameter (repeatable)")
    pt.add_argument("--data-dir")
    pt.add_argument("--force", action="store_true", help="recompute even if cached")
    pt.set_defaults(func=cmd_pretrain)

    dl = sub.add_parser("download", help="fetch the canonical data files (needs internet)")
    dl.add_argument("--data-dir")
    dl.add_argument("--what", default="all", choices=["all", "senteval", "wiki", "nltk", "bookcorpus"])
    dl.set_defaults(func=cmd_download)

    ex = sub.add_parser("export", help="a run's encoder as a Hugging Face + sentence-transformers folder")
    ex.add_argument("run", help="the run's record (results/<method>/<hash>.json), <method>/<hash>, or <hash>")
    ex.add_argument("--to", required=True, help="a new folder")
    ex.add_argument("--data-dir")
    ex.set_defaults(func=cmd_export)

    rc = sub.add_parser("records", help="the run records' fingerprints: check them, accept a change of numbers")
    rc_sub = rc.add_subparsers(dest="records_command", required=True)
    for name, text in (("check", "recompute every variant's probe; exit 1 when one computes other numbers"),
                       ("accept", "commit the probes' current numbers (the records under the old ones read stale)"),
                       ("adopt", "fingerprint the records an earlier commit computed, where its probe gives the committed numbers"),
                       ("migrate", "rewrite records of an older schema under their current keys")):
        one = rc_sub.add_parser(name, help=text)
        one.add_argument("--results", help="the results store (default: results/ or $SRE_REPRO_RESULTS)")
        one.add_argument("--data-dir")
        one.add_argument("--workers", type=int, default=2, help="probe processes (one thread each)")
        if name == "check":
            one.add_argument("--full", action="store_true", help="probe even a tree that checked.json confirms")
        if name == "accept":
            one.add_argument("variants", nargs="*", help="variant ids (default: every changed or unfingerprinted one)")
            one.add_argument("--other-versions", action="store_true",
                             help="also fingerprint the records this source computed under other library versions "
                                  "(a GPU image's torch): they name their versions and hardware")
        one.set_defaults(func=cmd_records)

    be = sub.add_parser("bench", help="throughput benchmarks of this machine (writes a JSON for the book)")
    be.add_argument("--out", default="results/benchmark.json")
    be.add_argument("--quick", action="store_true")
    be.add_argument("--only", default="", choices=["", "pretraining", "peer", "packing"], help="refresh one section of --out")
    be.set_defaults(func=cmd_bench)
    return p


class _Stderr(logging.Handler):
    """The library's notices ("cached: …", "resuming …") as lines on whatever sys.stderr is at the time."""

    def emit(self, record: logging.LogRecord) -> None:
        print(f"sre-repro: {record.getMessage()}", file=sys.stderr)


def _end_progress_bars() -> None:
    """Close any progress bar left open, so an error starts on its own line rather than after a bar."""
    from tqdm import tqdm

    for bar in list(getattr(tqdm, "_instances", [])):
        bar.close()


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(train_help=bool(argv) and argv[0] == "train" and ("-h" in argv or "--help" in argv)).parse_args(argv)
    notices = logging.getLogger("sre_repro")
    if not any(isinstance(h, _Stderr) for h in notices.handlers):
        notices.addHandler(_Stderr())
    notices.setLevel(logging.INFO)
    try:
        return args.func(args)
    except SreError as exc:
        _end_progress_bars()
        print(f"sre-repro: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("sre-repro: interrupted; finished work is kept (rerun to resume)", file=sys.stderr)
        return 130
