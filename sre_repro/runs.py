"""The results store and run cache.

A run is named by the hash of its resolved config (the file name). What makes its record valid is what the
code computes, not its source bytes: every record names, for each *variant* it rests on (its own config less
its size, and any run it was computed from), the behavioural fingerprint that variant had when the record was
computed (sre_repro/fingerprints.py). A record is stale exactly when one of those fingerprints is no longer the
committed one, or when a local model's weights changed since. A record of a variant that has no committed
fingerprint yet is valid while the library's source is the one that computed it (`records accept` then
fingerprints it). Writes are atomic (temp file + rename), so an interrupted write never leaves a half file,
and a file that does not parse is treated as missing and recomputed.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import logging
import os
import platform
import sys
import subprocess
import tempfile
import time
from pathlib import Path

from .errors import SreError
from .methods import get_method
from .settings import PACKAGE, REPO_ROOT, readable_mode, results_dir, work_dir  # noqa: F401  (results_dir, work_dir: the store's places)

# What happened to a request (served from the cache, resumed, recomputed): the CLI prints these lines on stderr;
# a notebook, which configures no handler, stays quiet
log = logging.getLogger("sre_repro")

SCHEMA = 7  # 2: full configs hashed as they are (no neutral knobs left out), derived records keyed without run_code;
           # 3: the knob `packed` (sre_repro/packing.py); 4: the stopping rule's `patience` and `min_delta`;
           # 5: SimCSE's `dropout` and `fixed_mask` (its Table 3, the positive controls);
           # 6: every record carries the digest of its own content (`content_digest`), checked on every read;
           # 7: SLT-FAI's `at_class_weights` and `grl_schedule` (its similarity discriminator's training)
# What a probe shrinks (sre_repro/fingerprints.py): a variant is its config without these
SIZE_KNOBS = ("seed", "scale", "max_steps", "epochs", "batch_size", "max_train_examples", "eval_steps",
              "checkpoint_steps", "eval_max_pairs", "device", "world_size", "patience", "min_delta")
# Cached evaluations (a model as it is, or a run's kept weights) and their size knobs; every other kind is a method
EVALUATION_SIZE_KNOBS = {"eval": ("max_pairs",), "transfer": ("max_examples",), "hard_subset": ("max_pairs",),
                         "frequency": ("n_sentences",), "retrieval": ("max_pairs",), "poolers": (),
                         "reconstruction": ("max_sentences",), "discriminators": ("max_sentences",),
                         "decoder_check": ("max_sentences",), "length_control": ("max_pairs",), "h_test": ("max_pairs",)}


# Folders of the results store that hold no run records: the variants' fingerprints, the chapters' verdict rows
NOT_RECORDS = ("fingerprints", "verdicts")


def record_paths(root=None) -> list[Path]:
    """The paths of every run record in the store, sorted (the NOT_RECORDS folders aside)."""
    return sorted(p for p in results_dir(root).glob("*/*.json") if p.parent.name not in NOT_RECORDS)


def config_hash(cfg: dict) -> str:
    return hashlib.sha256(json.dumps(cfg, sort_keys=True).encode()).hexdigest()[:16]


def variants(kind: str, cfg: dict) -> dict[str, dict]:
    """Variant id -> variant config of everything a record of `kind` with `cfg` rests on: a training run's own
    variant (its config less the size knobs and what its method's probe shrinks), or an evaluation's variant
    plus that of the run whose weights it evaluates."""
    if kind in EVALUATION_SIZE_KNOBS:
        own = {k: v for k, v in cfg.items() if k not in EVALUATION_SIZE_KNOBS[kind]}
        out = {}
        if "run" in cfg:
            out = variants(cfg["run"]["method"], cfg["run"])
            own["run"] = next(iter(out))
        return {_variant_id(kind, own): own, **out}
    shrunk = set(SIZE_KNOBS) | set(get_method(kind).PROBE_OVERRIDES)
    own = {k: v for k, v in cfg.items() if k not in shrunk}
    return {_variant_id(kind, own): own}


def _variant_id(kind: str, variant: dict) -> str:
    return f"{kind}-{config_hash(variant)[:12]}"


def fingerprint_path(variant_id: str, root=None) -> Path:
    return results_dir(root) / "fingerprints" / f"{variant_id}.json"


def committed_fingerprint(variant_id: str, root=None) -> str | None:
    """The fingerprint the store holds for a variant, None if it has none yet."""
    try:
        return json.loads(fingerprint_path(variant_id, root).read_text())["fingerprint"]
    except (OSError, ValueError, KeyError):
        return None


@functools.lru_cache(maxsize=4)
def _tree_hash(stamp: tuple, package: Path = PACKAGE) -> str:
    h = hashlib.sha256()
    for name, _, _ in stamp:  # the path inside the package, so a clone elsewhere has the same tree
        h.update(Path(name).relative_to(package).as_posix().encode() + b"\0" + Path(name).read_bytes())
    return h.hexdigest()[:16]


def package_hash(package: Path) -> str:
    """The source-tree hash (source_tree(), library versions aside) of the package in folder `package`."""
    files = sorted(package.rglob("*.py"))  # sizes and times in the key: a package edited in place is hashed anew
    return _tree_hash(tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files), package)


def source_tree() -> str:
    """Hash of the library's source (every .py file of the package) and the versions of the packages it
    computes with: the state a probe's numbers and an unfingerprinted record belong to."""
    import torch
    import transformers

    return f"{package_hash(PACKAGE)}-torch{torch.__version__}-transformers{transformers.__version__}"


def computed_by(record: dict, tree: str, other_versions: bool = False) -> bool:
    """Whether `record` was computed by the source state `tree` (source_tree()); with `other_versions`, by the same
    source under any library versions."""
    made = record.get("source_tree") or ""
    return made == tree or (other_versions and made.split("-torch")[0] == tree.split("-torch")[0])


def run_path(kind: str, cfg: dict, root=None) -> Path:
    return results_dir(root) / kind / f"{config_hash(cfg)}.json"


def write_json_atomic(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, readable_mode())  # mkstemp makes it 0600; a record is as readable as any file written here
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def files_hash(files) -> str:
    """The content hash of files read in order (16 hex digits); remembered while each file's size and time stay."""
    return _files_hash(tuple((str(f), Path(f).stat().st_size, Path(f).stat().st_mtime_ns) for f in files))


@functools.lru_cache(maxsize=64)
def _files_hash(files: tuple[tuple[str, int, int], ...]) -> str:
    h = hashlib.sha256()
    for name, _, _ in files:
        with open(name, "rb") as f:
            while chunk := f.read(1 << 22):
                h.update(chunk)
    return h.hexdigest()[:16]


def model_fingerprint(model_name: str | None) -> str | None:
    """Hash of the weight files of a local model (an alias such as sre-bert, or a folder), so a run from
    a model whose weights were since replaced (a re-pretrained sre-bert) counts as stale. None for hub
    names and built-in models, whose weights do not change under one name."""
    from .encoder import resolve_model_path

    if not model_name or model_name in ("glove", "tiny-random"):
        return None
    try:
        folder = Path(resolve_model_path(model_name))
    except SreError:
        return None
    files = sorted([*folder.glob("*.safetensors"), *folder.glob("*.bin")]) if folder.is_dir() else []
    if not files:
        return None
    return files_hash(files)


def stale_reasons(record: dict, root=None) -> list[str]:
    """Why a record may not be served ([] when it is valid): a variant whose committed fingerprint is not the
    one it was computed under, an unfingerprinted variant computed by other source, or changed weights."""
    reasons = []
    for variant, fingerprint in (record.get("fingerprints") or {"unknown": None}).items():
        committed = committed_fingerprint(variant, root)
        if fingerprint is None and record.get("source_tree") != source_tree():
            reasons.append(f"{variant}: computed by other source before it had a fingerprint")
        elif fingerprint is not None and fingerprint != committed:
            reasons.append(f"{variant}: fingerprint {fingerprint} is now {committed}")
    if record.get("model_fingerprint") != model_fingerprint(record.get("config", {}).get("model_name")):
        reasons.append("the model's weights changed")
    return reasons


def is_stale(record: dict, root=None) -> bool:
    return bool(stale_reasons(record, root))


def content_digest(record: dict) -> str:
    """The digest of a record's content (all but its digest), as JSON writes it: a record edited by hand or
    damaged on disk no longer matches it."""
    body = {k: v for k, v in record.items() if k not in ("digest", "stale")}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


def move_aside(path: Path) -> Path | None:
    """Move a file that may not be used out of the way (never deleted): its new path, or None when another
    process moved it first."""
    stamp = time.strftime('%Y%m%dT%H%M%S')
    aside = path.with_name(f"{path.name}.{stamp}.set-aside")
    for n in itertools.count(2):  # two set aside within one second: the second gets a number, none is overwritten
        if not aside.exists():
            break
        aside = path.with_name(f"{path.name}.{stamp}-{n}.set-aside")
    try:
        path.replace(aside)
    except FileNotFoundError:
        return None
    return aside


def set_aside(path: Path, why: str) -> None:
    """Move a record that may not be served out of the store's way, saying so on one line."""
    if aside := move_aside(path):
        print(f"sre-repro: record {path} {why}: set aside as {aside.name}; it will be recomputed", file=sys.stderr)


def note_read(path: Path) -> None:
    """Log a record the book reads to SRE_REPRO_READ_LOG, if set (scripts/unread_results.py lists the others)."""
    if log := os.environ.get("SRE_REPRO_READ_LOG"):
        with open(log, "a") as f:
            f.write(f"{path.resolve()}\n")


def read(kind: str, cfg: dict, root=None) -> dict | None:
    """The stored result for this config, or None if absent. Sets result['stale']. A record that cannot be
    parsed or does not match its digest is set aside, with one line saying so (its run is then recomputed)."""
    path = run_path(kind, cfg, root)
    note_read(path)
    try:
        text = path.read_text()
    except OSError:
        return None
    try:
        result = json.loads(text)
        assert isinstance(result, dict)
    except (ValueError, AssertionError):
        set_aside(path, "is not a readable JSON record")
        return None
    if result.get("config") != json.loads(json.dumps(cfg)):
        return None
    if result.get("digest") != content_digest(result):
        set_aside(path, "does not match its digest (edited by hand or damaged)" if "digest" in result else
                  "has no digest (older than schema 6: `python -m sre_repro records migrate` adds them)")
        return None
    result["stale"] = is_stale(result, root)
    return result


def check_named_data_dir(data_dir=None) -> None:
    """Before serving from the cache: a data dir that was named (an argument or $SRE_REPRO_DATA) must exist,
    or a typo goes unnoticed until the first run that is not cached. The default ./data may be absent: a
    reader with the committed results needs no data."""
    from .data.paths import resolve_data_dir

    if data_dir is not None or os.environ.get("SRE_REPRO_DATA"):
        resolve_data_dir(data_dir)


# The stale records this process has served (allow_stale): a verdict computed after one reads "stale" (report.py)
SERVED_STALE: list[str] = []


def lookup(kind: str, cfg: dict, root=None, force: bool = False, allow_stale: bool = False,
           more_reasons=None) -> dict | None:
    """A cached result to serve, or None when the run must be computed. more_reasons(record): why it is stale
    beyond what the record itself shows (a run's start recomputed since), handled like the record's own reasons."""
    if force:
        return None
    result = read(kind, cfg, root)
    if result is None:
        return None
    if more := (more_reasons(result) if more_reasons else []):
        result["stale"] = True
    if result["stale"] and not allow_stale:
        if log.isEnabledFor(logging.INFO):  # the reasons and the path cost a fingerprint read and a resolve
            log.info(f"stale: {shown_path(run_path(kind, cfg, root))} "
                     f"({'; '.join(stale_reasons(result, root) + more)}): recomputing")
        return None
    if result["stale"]:
        SERVED_STALE.append(f"{kind}/{result['config_hash']}")
    if log.isEnabledFor(logging.INFO):
        log.info(f"cached{' (stale)' if result['stale'] else ''}: {shown_path(run_path(kind, cfg, root))}")
    return result


def shown_path(path: Path) -> str:
    """A path as a message shows it: relative to the current folder when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


@contextlib.contextmanager
def run_lock(kind: str, cfg: dict, work_root=None):
    """Hold the run's lock (work/locks/<kind>-<id>.lock) while computing it: a second process asking for the same
    run waits, saying which process holds it, and then finds the first one's record (one computation, one record)."""
    import fcntl

    path = work_dir(work_root) / "locks" / f"{kind}-{config_hash(cfg)}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            print(f"sre-repro: waiting for process {handle.read().strip() or '?'}, which is computing this run "
                  f"({path.name})", file=sys.stderr)
            fcntl.flock(handle, fcntl.LOCK_EX)
        handle.truncate(0)
        handle.write(str(os.getpid()))
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def provenance() -> dict:
    import torch
    import transformers

    try:
        commit = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return {"versions": {"python": platform.python_version(), "torch": torch.__version__,
                         "transformers": transformers.__version__},
            "hardware": {"machine": platform.machine(), "processor": platform.processor(),
                         "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                         "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None},
            "git_commit": commit, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def save(kind: str, cfg: dict, result: dict, root=None) -> dict:
    record = {**result, "kind": kind, "config": cfg, "config_hash": config_hash(cfg), "schema": SCHEMA,
              "fingerprints": {v: committed_fingerprint(v, root) for v in variants(kind, cfg)},
              "source_tree": source_tree(), "model_fingerprint": model_fingerprint(cfg.get("model_name")),
              **provenance()}
    record.pop("stale", None)
    record = json.loads(json.dumps(record))  # as the file will hold it (tuples become lists)
    record["digest"] = content_digest(record)
    write_json_atomic(run_path(kind, cfg, root), record)
    # hand back what a later read returns (tuples become lists), so a fresh run equals its cached self
    return {**json.loads(json.dumps(record)), "stale": False}


# ----- schema migrations --------------------------------------------------------------------------------------

def migrate_config(kind: str, cfg: dict) -> dict:
    """An older config as the current schema names it: every knob present (3: `packed`, which a record of
    schema 2 names as the default it is now, its fingerprint telling whether it computes the same); for
    schema 1 also the added modules' rate and warm-up as the values used (1 wrote 0 and -1 for "as the PLM's"),
    an evaluation's run without the old code hash."""
    from .config import resolve

    if kind in EVALUATION_SIZE_KNOBS:
        out = {k: v for k, v in cfg.items() if k != "run_code"}
        if "run" in out:
            out["run"] = migrate_config(out["run"]["method"], out["run"])
        defaults = {"retrieval": {"max_pairs": 0}, "transfer": {"max_examples": 0}}.get(kind, {})
        return {**defaults, **out}
    old = dict(cfg)
    if old.get("method") == "paser" and "supervised" not in old:  # 3: supervised PaSeR explicit, not by its data
        old["supervised"] = old["train_data"] == "snli"
    if old.get("head_lr") == 0.0:
        old["head_lr"] = old["lr"]
    if old.get("head_warmup_ratio") == -1.0:
        old["head_warmup_ratio"] = old.get("warmup_ratio", 0.0)
    new = resolve(overrides=old)
    if any(new[k] != v for k, v in old.items()):
        raise SreError(f"a {kind} config does not resolve to itself: {[k for k, v in old.items() if new[k] != v]}")
    return new


def _migrate_fingerprints(root=None) -> dict[str, str]:
    """Move every committed fingerprint to its variant's current id (old id -> new id): the numbers stay the
    ones committed, so `records check` tells which variants compute differently under the new schema."""
    renamed = {}
    for path in sorted((results_dir(root) / "fingerprints").glob("*.json")):
        data = json.loads(path.read_text())
        if "kind" not in data:  # the check's stamp
            continue
        probe = migrate_config(data["kind"], data["probe_config"])
        new_id, variant = next(iter(variants(data["kind"], probe).items()))
        if new_id != path.stem:
            write_json_atomic(fingerprint_path(new_id, root), {**data, "probe_config": probe, "variant": variant})
            path.unlink()
            renamed[path.stem] = new_id
    return renamed


def migrate_store(root=None) -> list[str]:
    """Rewrite every record of an older schema under its current name. From schema 2 a record keeps the
    fingerprints it was computed under (renamed with their variants), so it stays valid exactly while its
    variant computes the same numbers. A schema-1 record that was valid under the schema-1 rule (`valid_tree`:
    the source that computes its numbers) keeps that claim as its source tree; the others keep none and read
    stale."""
    renamed = _migrate_fingerprints(root)
    lines = [f"fingerprints/{old}.json -> fingerprints/{new}.json" for old, new in renamed.items()]
    for path in record_paths(root):
        record = json.loads(path.read_text())
        if record.get("schema", 1) >= SCHEMA or "config" not in record:
            continue
        kind = record["kind"]
        valid = record.pop("valid_under_schema_1", False)
        record.pop("code_hash", None)
        old_variants, record["config"] = variants(kind, record["config"]), migrate_config(kind, record["config"])
        if record.get("schema", 1) == 1:
            record.update(fingerprints={v: None for v in variants(kind, record["config"])},
                          source_tree=source_tree() if valid else "schema 1, stale then")
        else:  # the same variants in the same order, named anew
            new_id = dict(zip(old_variants, variants(kind, record["config"])))
            record["fingerprints"] = {new_id[v]: f for v, f in record["fingerprints"].items()}
        record.update(schema=SCHEMA, config_hash=config_hash(record["config"]))
        record["digest"] = content_digest(record)
        target = run_path(kind, record["config"], root)
        write_json_atomic(target, record)
        if target != path:
            path.unlink()
        lines.append(f"{path.relative_to(results_dir(root))} -> {target.relative_to(results_dir(root))}")
    return lines
