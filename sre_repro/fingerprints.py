"""Behavioural fingerprints: a record stays valid while its variant computes the same numbers.

A *variant* is what a record's config asks the code to compute, less its size (runs.variants): a training run's
config without seed, steps, batch, examples and evaluation pairs (and the size knobs its method's probe shrinks,
`Method.PROBE_OVERRIDES`), or an evaluation's config without its sample size. Its *probe* runs the variant's own
config (PLM, pooler, data, method knobs) shrunk only in those knobs (PROBE_SIZE), single-threaded on the CPU, and
records numbers that any change to the computation moves: per step the digest of the batch after collation and
augmentation, the gradient norm and every loss term; the dev curve; the final scores. The runs a method depends on
(RankCSE's teachers, supervised PaSeR's unsupervised run) are shrunk alike and trained inside its probe.

The probe's numbers and their digest (the fingerprint) are committed in results/fingerprints/<variant>.json; each
record names the fingerprint it was computed under (runs.save), so a record is stale exactly when its variant's
fingerprint changed. `records check` recomputes every probe (cached per source tree in work/probes/, so an
unchanged tree costs nothing) and fails on a variant whose numbers moved; `records accept` makes that a
decision: it commits the new numbers, and the records computed under the old ones read stale until recomputed.
A check that passes writes results/fingerprints/checked.json (the source tree it probed and the fingerprints it
confirmed): a clone of that very tree needs no probe to know them confirmed (`records check --full` probes anyway).
"""
from __future__ import annotations

import io
import json
import math
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import torch

from . import runs
from .errors import SreError
from .config import probing, resolve
from .evaluate.cached import cached
from .methods import get_method
from .train import train

PROBE_SIZE = {"seed": 42, "max_steps": 3, "epochs": 1, "batch_size": 8, "max_train_examples": 48, "eval_steps": 1,
              "checkpoint_steps": 3, "eval_max_pairs": 8, "device": "cpu", "world_size": 1, "patience": 0,
              "min_delta": 0.0}
EVALUATION_PROBE_SIZE = {"max_pairs": 8, "max_examples": 60, "n_sentences": 16, "max_sentences": 16}
# Same computation, another machine with the same CPU (hardware()): the last bits of a float may differ, nothing more
RTOL, ATOL = 1e-5, 1e-6
# Same computation on another CPU (another vector unit: AVX-512 against AVX2 sums in another order): measured across
# the two kinds this project runs on, a probe's Spearman over its 8 pairs moved by up to 1.1 % and a value rounded for
# display flipped its last digit (1e-3); a change to the computation moves its batches, gradients or losses by more
OTHER_CPU_RTOL, OTHER_CPU_ATOL = 3e-2, 2e-3
CHAOTIC = ("/tsne",)  # t-SNE coordinates land anywhere after any change of the last bits; the embeddings are probed
TIMING = ("seconds", "wall")  # keys holding times are not numbers of the computation


def probe_config(kind: str, cfg: dict) -> dict:
    """A record's config shrunk to its variant's probe."""
    if kind in runs.EVALUATION_SIZE_KNOBS:
        shrunk = {**cfg, **{k: EVALUATION_PROBE_SIZE[k] for k in runs.EVALUATION_SIZE_KNOBS[kind]}}
        if "run" in cfg:
            shrunk["run"] = probe_config(cfg["run"]["method"], cfg["run"])
        return shrunk
    return {**cfg, **PROBE_SIZE, **get_method(kind).PROBE_OVERRIDES}


def run_probe(kind: str, cfg: dict, data_dir=None, work=None) -> dict:
    """The probe's numbers (see the module's docstring). Its records go to a temporary folder; its runs'
    checkpoints and the kept weights of what they depend on to `work` (default: a temporary folder too)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    saved_env = {k: os.environ.get(k) for k in ("SRE_REPRO_RESULTS", "SRE_REPRO_WORK")}
    try:
        with tempfile.TemporaryDirectory() as results, tempfile.TemporaryDirectory() as scratch, probing(PROBE_SIZE):
            os.environ["SRE_REPRO_RESULTS"] = results
            os.environ["SRE_REPRO_WORK"] = str(work or scratch)
            if kind in runs.EVALUATION_SIZE_KNOBS:
                return {"metrics": cached(kind, cfg, data_dir, force=True)["metrics"]}
            steps: list = []
            # its own checkpoints in the scratch folder (gone at once), its dependencies' in `work`
            record = train(resolve(overrides=cfg), data_dir=data_dir, force=True, trace=steps, work_root=scratch)
            return {"steps": steps, "dev_curve": record["dev_curve"], "metrics": record["metrics"],
                    "training": record["training"]}
    finally:
        torch.set_num_threads(threads)
        for key, value in saved_env.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)


def flatten(value, prefix: str = "") -> dict:
    """{path: leaf} of nested dicts and lists, leaving out timings."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() if not any(t in str(key) for t in TIMING)
                for k, v in flatten(item, f"{prefix}/{key}").items()}
    if isinstance(value, (list, tuple)):
        return {k: v for i, item in enumerate(value) for k, v in flatten(item, f"{prefix}[{i}]").items()}
    return {prefix: value}


def hardware() -> str:
    """The CPU kind a probe computes on: its architecture, the vector unit torch's kernels use, and the CPU's vendor,
    family and model, since one vector unit does not fix the kernels: AMD Zen 4 and Zen 5 (both AVX-512) sum in
    another order, and their probes differ in the fifth digit."""
    return f"{platform.machine()}-{torch.backends.cpu.get_cpu_capability()}-{cpu_model()}"


def cpu_model(cpuinfo: str | None = None) -> str:
    """"vendor-family-model" of the first CPU in /proc/cpuinfo (`cpuinfo`: its text), or the platform's processor
    name where there is none (not Linux)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return platform.processor() or "unknown"
    first = {key.strip(): value for key, value in (line.split(":", 1) for line in cpuinfo.split("\n\n")[0].splitlines()
                                                   if ":" in line)}
    fields = [first.get(key, "").strip() for key in ("vendor_id", "cpu family", "model")]
    return "-".join(fields) if any(fields) else (platform.processor() or "unknown")


def first_difference(old: dict, new: dict, other_cpu: bool = False) -> str | None:
    """The first number that differs between two probes' numbers (floats within RTOL/ATOL agree; `other_cpu`: the
    old numbers came from another CPU kind, so within OTHER_CPU_RTOL/ATOL, t-SNE coordinates aside), or None."""
    a, b = flatten(old), flatten(new)
    rtol, atol = (OTHER_CPU_RTOL, OTHER_CPU_ATOL) if other_cpu else (RTOL, ATOL)
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key, "<absent>"), b.get(key, "<absent>")
        if other_cpu and any(part in key for part in CHAOTIC) and key in a and key in b:
            continue
        if isinstance(x, float) and isinstance(y, (int, float)) and not isinstance(y, bool):
            same = (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=rtol, abs_tol=atol)
        else:
            same = x == y
        if not same:
            return f"{key}: {x} -> {y}"
    return None


def fingerprint_of(numbers: dict) -> str:
    """The label of a probe's numbers (rounded to 6 significant digits, so it names them, not their last bits)."""
    rounded = {k: float(f"{v:.6g}") if isinstance(v, float) else v for k, v in flatten(numbers).items()}
    return runs.config_hash(rounded)[:12]


# ----- the store's records and their variants ----------------------------------------------------------------

def records(root=None) -> dict[Path, dict]:
    """Every record of the store (path -> record), fingerprints, verdict rows and the benchmark aside."""
    out = {}
    for path in runs.record_paths(root):
        try:
            out[path] = json.loads(path.read_text())
        except ValueError:
            print(f"unreadable record {path}: recompute it with --force", file=sys.stderr)
    return out


def committed(root=None) -> dict[str, dict]:
    """Variant id -> its committed fingerprint file's content."""
    folder = runs.results_dir(root) / "fingerprints"
    return {path.stem: json.loads(path.read_text()) for path in sorted(folder.glob("*-*.json"))}


def _stamp_path(root=None) -> Path:
    return runs.results_dir(root) / "fingerprints" / "checked.json"


def confirmed_here(fingerprints: dict[str, dict], root=None) -> bool:
    """Whether a passing check already probed this very source tree and confirmed these very fingerprints."""
    try:
        stamp = json.loads(_stamp_path(root).read_text())
    except (OSError, ValueError):
        return False
    return stamp == {"source_tree": runs.source_tree(),
                     "fingerprints": {v: f["fingerprint"] for v, f in fingerprints.items()}}


def write_stamp(tree: str, root=None) -> None:
    """Record that a passing check probed source tree `tree` and confirmed the committed fingerprints."""
    runs.write_json_atomic(_stamp_path(root), {"source_tree": tree, "fingerprints": {
        v: f["fingerprint"] for v, f in committed(root).items()}})


def _probe_cache(variant: str) -> Path:
    return runs.work_dir() / "probes" / "numbers" / runs.source_tree() / f"{variant}.json"


def _probe_many(jobs: list[tuple[str, str, dict]], data_dir=None) -> dict[str, dict]:
    """Variant -> numbers of each (variant, kind, probe config) job, in this process. The jobs share one
    temporary work folder (a dependency is trained once for all of them; every checkpoint is gone afterwards),
    whose cache/ is work/cache (the PaSeR chunker, the pretraining corpus: data, not computation)."""
    out = {}
    with tempfile.TemporaryDirectory() as work:
        (runs.work_dir() / "cache").mkdir(parents=True, exist_ok=True)
        os.symlink(runs.work_dir() / "cache", Path(work) / "cache")
        for variant, kind, cfg in jobs:
            cache = _probe_cache(variant)
            if cache.is_file():
                out[variant] = json.loads(cache.read_text())
                continue
            print(f"probing {variant}", file=sys.stderr, flush=True)
            out[variant] = json.loads(json.dumps(run_probe(kind, cfg, data_dir, work)))
            runs.write_json_atomic(cache, out[variant])
            _drop_checkpoints(Path(work))
    if "joblib" in sys.modules:  # the transfer probes' idle loky workers would hold a probe process 5 minutes
        from joblib.externals.loky import get_reusable_executor
        get_reusable_executor().shutdown(wait=True)
    return out


def _drop_checkpoints(work: Path) -> None:
    """Delete the training checkpoints (best.pt, last.pt) of the dependencies a probe trained: their kept copies
    in models/ serve the later jobs, and a full check's ~40 PaSeR runs kept whole held 14 GB of disk, which a
    CI machine did not have."""
    for folder in work.iterdir():
        if folder.is_dir() and not folder.is_symlink() and folder.name not in ("models", "cache"):
            for checkpoint in folder.glob("*/*.pt"):
                checkpoint.unlink()


def probe_all(jobs: list[tuple[str, str, dict]], data_dir=None, workers: int = 2) -> dict[str, dict]:
    """Numbers of every job, on `workers` processes (one thread each). Jobs sharing a dependency (RankCSE's
    teachers, a supervised run's unsupervised one, an evaluation's run) stay in one process, so two processes
    never train the same run at once."""
    todo = [job for job in jobs if not _probe_cache(job[0]).is_file()]
    if workers <= 1 or len(todo) <= 1:
        return _probe_many(jobs, data_dir)
    shares: list[list] = [[] for _ in range(workers)]
    groups: dict[str, list] = {}
    for job in todo:
        groups.setdefault(_dependency_group(job), []).append(job)
    for group in sorted(groups.values(), key=len, reverse=True):
        min(shares, key=len).extend(group)
    done: dict[str, dict] = {}
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        for part in pool.map(_probe_many, [s for s in shares if s], [data_dir] * workers):
            done.update(part)
    return {**_probe_many([job for job in jobs if job[0] not in done], data_dir), **done}  # the rest: cached


def _dependency_group(job) -> str:
    _, kind, cfg = job
    run = cfg.get("run", cfg) if kind in runs.EVALUATION_SIZE_KNOBS else cfg
    method = run.get("method", kind)
    return method if method in ("rankcse", "paser") or "run" in cfg else job[0]


def status(root=None, data_dir=None, workers: int = 2, full: bool = False, other_versions: bool = False) -> dict:
    """What `records check` reports: per variant with a committed fingerprint, whether its probe still
    computes its numbers; the records that rest on a changed or an old fingerprint; unfingerprinted records
    (`other_versions`: those this source computed under other library versions count as this tree's)."""
    held = records(root)
    fingerprints = committed(root)
    users: dict[str, list[Path]] = {}
    pending: dict[str, tuple[str, dict]] = {}  # variant -> (kind, probe config) of records without a fingerprint
    unclaimed: dict[str, tuple[str, dict]] = {}  # the same for variants whose every such record other source computed
    stale, other_source = [], []
    tree = runs.source_tree()  # the source the probes below compute with
    for path, record in held.items():
        kind = record.get("kind")
        for variant, fingerprint in (record.get("fingerprints") or {}).items():
            users.setdefault(variant, []).append(path)
            if fingerprint is None and not runs.computed_by(record, tree, other_versions):
                other_source.append(path)  # named by `adopt` alone, once its variant has a fingerprint
                if variant not in fingerprints:
                    unclaimed.setdefault(variant, _variant_probe(kind, record["config"], variant))
            elif fingerprint is None and variant not in fingerprints:
                pending.setdefault(variant, _variant_probe(kind, record["config"], variant))
            elif fingerprint is not None and fingerprint != fingerprints.get(variant, {}).get("fingerprint"):
                stale.append(path)
    jobs = [(v, f["kind"], f["probe_config"]) for v, f in fingerprints.items() if v in users]
    confirmed = not full and confirmed_here(fingerprints, root)
    numbers = ({v: fingerprints[v]["numbers"] for v, _, _ in jobs} if confirmed else probe_all(jobs, data_dir, workers))
    here = hardware()  # a fingerprint from another CPU kind (or one that does not say) is held to its tolerance
    changed = {v: diff for v, f in fingerprints.items() if v in numbers
               and (diff := first_difference(f["numbers"], numbers[v], other_cpu=f.get("hardware") != here))}
    return {"changed": changed, "users": users, "confirmed": confirmed, "tree": tree, "stale": sorted(set(stale)), "other_source": sorted(set(other_source)),
            "pending": pending, "unclaimed": {v: job for v, job in unclaimed.items() if v not in pending},
            "numbers": numbers, "fingerprints": fingerprints,
            "orphans": sorted(set(fingerprints) - set(users))}


def _variant_probe(kind: str, cfg: dict, variant: str) -> tuple[str, dict]:
    """(kind, probe config) of the variant `variant` that a record of `kind` with `cfg` rests on."""
    if next(iter(runs.variants(kind, cfg))) == variant:  # its own (an evaluation's run comes after it)
        return kind, probe_config(kind, cfg)
    run = cfg["run"]  # an evaluation's run
    return run["method"], probe_config(run["method"], run)


def write_fingerprint(variant: str, kind: str, probe_cfg: dict, numbers: dict, root=None) -> str:
    fingerprint = fingerprint_of(numbers)
    variant_cfg = runs.variants(kind, probe_cfg).get(variant)
    runs.write_json_atomic(runs.fingerprint_path(variant, root),
                           {"kind": kind, "variant": variant_cfg, "probe_config": probe_cfg, "numbers": numbers,
                            "fingerprint": fingerprint, "source_tree": runs.source_tree(), "hardware": hardware()})
    return fingerprint


def _mark(path: Path, record: dict, marks: dict[str, str]) -> bool:
    """Name fingerprints in a record read earlier from `path`, unless it fails its digest (damaged or edited: it
    stays as it is, to be set aside by its next reader) or another process rewrote it since (True: written)."""
    digest = record.get("digest")
    if digest != runs.content_digest(record):
        return False
    try:
        if json.loads(path.read_text()).get("digest") != digest:
            return False
    except (OSError, ValueError):
        return False
    record = {**record, "fingerprints": {**record["fingerprints"], **marks}}
    record["digest"] = runs.content_digest(record)
    runs.write_json_atomic(path, record)
    return True


def accept(variants: list[str] | None = None, root=None, data_dir=None, workers: int = 2,
           other_versions: bool = False) -> list[str]:
    """Commit the probes' current numbers for `variants` (default: every changed or unfingerprinted one, those
    whose records other source computed included: `adopt` then names them) and name the new fingerprints in the
    records computed by this very source that had none (`other_versions`: also those it computed under other
    library versions, e.g. a GPU image's torch; each names its versions and hardware). Records computed under an
    older fingerprint keep it, and so read stale until recomputed. Returns the lines to print."""
    state = status(root, data_dir, workers, full=True, other_versions=other_versions)
    new = {**state["unclaimed"], **state["pending"]}
    wanted = set(variants or [*state["changed"], *new])
    unknown = wanted - set(state["fingerprints"]) - set(new)
    if unknown:
        raise SreError(f"no record rests on variant {sorted(unknown)[0]}: `python -m sre_repro records check` "
                            "lists the variants")
    fresh = probe_all([(v, *new[v]) for v in wanted if v in new], data_dir, workers)
    lines = []
    for variant in sorted(wanted):
        kind, cfg = new.get(variant) or (state["fingerprints"][variant]["kind"],
                                         state["fingerprints"][variant]["probe_config"])
        numbers = fresh.get(variant) or state["numbers"][variant]
        fingerprint = write_fingerprint(variant, kind, cfg, numbers, root)
        lines.append(f"accepted {variant}: fingerprint {fingerprint}")
    tree = runs.source_tree()
    for path, record in records(root).items():
        marks = record.get("fingerprints") or {}
        todo = [v for v, f in marks.items() if f is None and v in wanted and runs.computed_by(record, tree, other_versions)]
        if todo:
            _mark(path, record, {v: runs.committed_fingerprint(v, root) for v in todo})
    if not {v for v in state["changed"] if v not in wanted}:
        write_stamp(state["tree"], root)
    return lines


# what `adopt` runs in a process of its own, on the package of the commit that computed the records; knobs that
# package lacks are left out where the config holds their default (a knob added since computes what it lacked)
_ADOPT_PROBE = """
import json, sys
from sre_repro import fingerprints
from sre_repro.config import CommonConfig, field_types
from sre_repro.methods import get_method
job = json.load(sys.stdin)
def known(cfg, defaults):
    types = field_types(CommonConfig, get_method(cfg["method"]).Params)
    return {k: v for k, v in cfg.items() if k in types or defaults.get(k, v) != v}
numbers = {}
for variant, kind, cfg, defaults in job["jobs"]:
    if "run" in cfg or "method" in cfg:  # a training run's config, or an evaluation of one's kept weights
        cfg = {**cfg, "run": known(cfg["run"], defaults)} if "run" in cfg else known(cfg, defaults)
    numbers[variant] = json.loads(json.dumps(fingerprints.run_probe(kind, cfg, job["data_dir"])))
print(json.dumps(numbers))
"""


def _package_of(commit: str, folder: Path) -> bool:
    """Read `commit`'s package out of this checkout's git history into `folder`, beside links to the checkout's
    models/ and configs/ (what the package reads from its repository); False where git lacks the commit."""
    got = subprocess.run(["git", "-C", str(runs.REPO_ROOT), "archive", commit, "sre_repro"], capture_output=True,
                         timeout=120) if commit else None
    if got is None or got.returncode:
        return False
    with tarfile.open(fileobj=io.BytesIO(got.stdout)) as tar:  # our own history: trusted
        tar.extractall(folder, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    for name in ("models", "configs"):
        if (runs.REPO_ROOT / name).exists():
            os.symlink(runs.REPO_ROOT / name, folder / name)
    return True


# the change a lane computes with before it lands (scripts/flip.py: a worktree of the commit, this patch applied)
PENDING_PATCH = "scripts/flip.patch"


def _with_pending_patch(commit: str, folder: Path) -> bool:
    """Apply `commit`'s pending patch (PENDING_PATCH, read out of git) to the package `_package_of` put in `folder`:
    the tree a lane's worktree of that commit computed with; False where the commit has no such patch."""
    patch = subprocess.run(["git", "-C", str(runs.REPO_ROOT), "show", f"{commit}:{PENDING_PATCH}"],
                           capture_output=True, timeout=120)
    alone = {**os.environ, "GIT_CEILING_DIRECTORIES": str(folder.parent)}  # a checkout around `folder` stays out
    return not patch.returncode and not subprocess.run(["git", "apply", "--include=sre_repro/*", "-"], cwd=folder,
                                                       input=patch.stdout, capture_output=True, env=alone,
                                                       timeout=120).returncode


def _defaults(kind: str, cfg: dict) -> dict:
    """The knob defaults of the method a (probe) config trains, its run's for an evaluation of kept weights."""
    from .config import defaults

    method = (cfg["run"] if "run" in cfg else cfg).get("method")
    return defaults(method) if method else {}


def adopt(root=None, data_dir=None) -> list[str]:
    """Name the committed fingerprint in the records that other source computed before their variant had one (a
    lane on an earlier commit, a device's copy of the tree), where that source computes the committed numbers:
    the record's commit's package is read out of git (with that commit's PENDING_PATCH applied where the package
    alone is not the record's tree: a lane's worktree), its source tree must be the one the record names (library
    versions aside), and the variant's probe runs on it in a process of its own. A record whose source computes
    other numbers gets that source's own fingerprint, and so reads stale ("fingerprint X is now Y") and is
    recomputed; one whose commit git lacks, or whose tree is not its commit's, stays unnamed (stale too). Each
    group gets a line. Returns the lines to print."""
    from .data.paths import resolve_data_dir

    fingerprints, tree = committed(root), runs.source_tree()
    groups: dict[tuple[str, str], list[tuple[Path, dict, str]]] = {}
    for path, record in records(root).items():
        for variant, mark in (record.get("fingerprints") or {}).items():
            if mark is None and variant in fingerprints and not runs.computed_by(record, tree, other_versions=True):
                key = (record.get("git_commit") or "", (record.get("source_tree") or "").split("-torch")[0])
                groups.setdefault(key, []).append((path, record, variant))
    lines = []
    for (commit, made), held in sorted(groups.items()):
        variants = sorted({v for _, _, v in held})
        with tempfile.TemporaryDirectory() as folder:
            if not _package_of(commit, Path(folder)):
                lines.append(f"kept unnamed: {len(held)} record link(s) of commit {commit or '(none)'}, which this "
                             "checkout's git history lacks")
                continue
            package = Path(folder) / "sre_repro"
            if runs.package_hash(package) != made and not (_with_pending_patch(commit, Path(folder))
                                                              and runs.package_hash(package) == made):
                lines.append(f"kept unnamed: {len(held)} record link(s) of commit {commit}: computed by a tree other "
                             f"than the commit's, with or without its {PENDING_PATCH} (uncommitted changes)")
                continue
            jobs = [(v, fingerprints[v]["kind"], fingerprints[v]["probe_config"],
                     _defaults(fingerprints[v]["kind"], fingerprints[v]["probe_config"])) for v in variants]
            env = {**os.environ, "PYTHONPATH": folder, "OMP_NUM_THREADS": "1", "SRE_REPRO_WORK": str(runs.work_dir().resolve())}
            done = subprocess.run([sys.executable, "-c", _ADOPT_PROBE], capture_output=True, text=True, cwd=folder, env=env,
                                  input=json.dumps({"jobs": jobs, "data_dir": str(resolve_data_dir(data_dir))}), timeout=7200)
        if done.returncode:
            lines.append(f"kept unnamed: {len(held)} record link(s) of commit {commit}: its probe failed "
                         f"({(done.stderr.strip().splitlines() or ['?'])[-1]})")
            continue
        numbers = json.loads(done.stdout.splitlines()[-1])
        same = {v for v in variants if first_difference(fingerprints[v]["numbers"], numbers[v],
                                                        other_cpu=fingerprints[v].get("hardware") != hardware()) is None}
        own = {v: fingerprints[v]["fingerprint"] if v in same else fingerprint_of(numbers[v]) for v in variants}
        for variant in variants:
            count = sum(v == variant for _, _, v in held)
            lines.append(f"{'adopted' if variant in same else 'stale'} {variant}: {count} record(s) of commit {commit} "
                         + ("compute its committed numbers" if variant in same else
                            f"compute other numbers (fingerprint {own[variant]})"))
        for path, record in {path: record for path, record, _ in held}.items():
            if not _mark(path, record, {v: own[v] for v in (record.get("fingerprints") or {}) if v in own}):
                lines.append(f"left as it is: {_short(path)} (fails its digest, or another process rewrote it)")
    return lines


def _short(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def report(state: dict) -> tuple[list[str], int]:
    """The lines `records check` prints and its exit status (1 when a variant changed or records lack fingerprints)."""
    lines = []
    for variant, diff in sorted(state["changed"].items()):
        held = state["users"][variant]
        lines.append(f"changed {variant}: {diff}; stales {len(held)} record(s) ({', '.join(map(_short, held[:3]))}"
                     f"{', ...' if len(held) > 3 else ''}); accept the change with: python -m sre_repro records accept {variant}")
    for variant in sorted(state["pending"]):
        lines.append(f"unfingerprinted {variant}: {len(state['users'][variant])} record(s) computed by this source; "
                     f"fingerprint them with: python -m sre_repro records accept {variant}")
    status = 1 if lines else 0
    if state["stale"]:
        lines.append(f"{len(state['stale'])} record(s) rest on a fingerprint since changed (accepted) and read stale "
                     f"until recomputed, e.g. {_short(state['stale'][0])}")
    if state["other_source"]:
        lines.append(f"{len(state['other_source'])} record(s) without a fingerprint were computed by other source and "
                     f"read stale, e.g. {_short(state['other_source'][0])}: `python -m sre_repro records accept` "
                     "fingerprints their variants, then `records adopt` names them where their own commit computes "
                     "the same numbers")
    checked = len(state["fingerprints"]) - len(state["orphans"])
    how = "confirmed for this source tree by results/fingerprints/checked.json" if state["confirmed"] else "probed"
    lines.append(f"records check: {checked} variant(s) {how}, {len(state['changed'])} changed, "
                 f"{sum(len(state['users'][v]) for v in state['users'] if v in state['fingerprints'])} record link(s) checked")
    return lines, status
