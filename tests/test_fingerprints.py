"""Behavioural fingerprints: what stales a record is a change of numbers, not of source bytes.

The mutation tests copy the package, edit the copy and run `records check` on a store of smoke records made by
the unedited copy: a refactor leaves every record valid, a changed number inside one method stales exactly its
records, a changed evaluation exactly the records that carry it.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sre_repro import fingerprints, report, runs
from sre_repro.config import resolve
from sre_repro.errors import SreError

ROOT = Path(__file__).resolve().parent.parent


def test_a_variant_is_its_config_without_its_size():
    small = resolve(overrides={"method": "simcse", "scale": "smoke", "seed": 1})
    other = {**small, "seed": 7, "max_steps": 50, "batch_size": 4, "eval_max_pairs": 0}
    assert list(runs.variants("simcse", small)) == list(runs.variants("simcse", other))
    hotter = {**small, "temperature": 0.1}
    assert list(runs.variants("simcse", hotter)) != list(runs.variants("simcse", small))
    # an evaluation of a run's weights rests on its own variant and on the run's
    evaluation = {"run": small, "model_name": "tiny-random", "thresholds": {}, "max_pairs": 8}
    ids = list(runs.variants("hard_subset", evaluation))
    assert ids[0].startswith("hard_subset-") and ids[1:] == list(runs.variants("simcse", small))
    assert ids == list(runs.variants("hard_subset", {**evaluation, "max_pairs": 0, "run": other}))


def test_every_committed_record_matches_its_digest():
    """A record whose content no longer matches its digest is set aside and retrained by every reader (a JSON
    merge that kept one side's digest and the other side's content did this to four SimCSE records)."""
    records = [path for path in (runs.REPO_ROOT / "results").glob("*/*.json") if path.parent.name != "fingerprints"]
    assert len(records) > 100
    bad = [str(path) for path in records
           if "config" in (record := json.loads(path.read_text())) and record.get("digest") != runs.content_digest(record)]
    assert not bad, f"records that do not match their digest: {bad}"


def test_numbers_agree_within_float_noise_and_not_beyond():
    old = {"steps": [{"loss": 1.0, "batch": "ab"}], "metrics": {"sts": {"avg": 50.0}, "wall_seconds": 3.0}}
    assert fingerprints.first_difference(old, {**old, "metrics": {"sts": {"avg": 50.0 + 1e-7}, "wall_seconds": 9.0}}) is None
    assert fingerprints.first_difference(old, {**old, "metrics": {"sts": {"avg": 50.01}}}) == "/metrics/sts/avg: 50.0 -> 50.01"
    assert fingerprints.first_difference(old, {**old, "steps": [{"loss": 1.0, "batch": "cd"}]}) == "/steps[0]/batch: ab -> cd"
    assert fingerprints.fingerprint_of(old) == fingerprints.fingerprint_of({**old, "metrics": {"sts": {"avg": 50.0000001}}})


def test_another_cpu_kind_is_held_to_the_measured_tolerance_and_no_further():
    # AVX-512 against AVX2: an 8-pair Spearman moved 1.1 %, a displayed value its last digit, t-SNE anywhere
    old = {"metrics": {"sts": {"STS15": 29.71}, "attention": [0.0087], "tsne": [[1.0, 2.0]]}, "steps": [{"batch": "ab"}]}
    moved = {"metrics": {"sts": {"STS15": 29.39}, "attention": [0.0088], "tsne": [[-40.0, 7.0]]}, "steps": [{"batch": "ab"}]}
    assert fingerprints.first_difference(old, moved) == "/metrics/attention[0]: 0.0087 -> 0.0088"
    assert fingerprints.first_difference(old, moved, other_cpu=True) is None
    # a change of the computation still shows: a loss 5 % off, another batch, a missing number
    assert fingerprints.first_difference(old, {**moved, "metrics": {**moved["metrics"], "sts": {"STS15": 31.2}}},
                                         other_cpu=True) == "/metrics/sts/STS15: 29.71 -> 31.2"
    assert fingerprints.first_difference(old, {**moved, "steps": [{"batch": "cd"}]}, other_cpu=True) == "/steps[0]/batch: ab -> cd"
    assert fingerprints.first_difference(old, {"steps": [{"batch": "ab"}]}, other_cpu=True).endswith("-> <absent>")


def test_a_fingerprint_names_the_cpu_kind_it_was_probed_on(tmp_path):
    cfg = {"model_name": "glove", "pooler": "avg", "whiten": False, "whiten_dim": 0, "precision": "fp32",
           "tasks": "sts", "max_pairs": 8}
    (variant,) = runs.variants("eval", cfg)
    fingerprints.write_fingerprint(variant, "eval", cfg, {"metrics": {"sts": {"avg": 1.0}}}, tmp_path)
    assert json.loads(runs.fingerprint_path(variant, tmp_path).read_text())["hardware"] == fingerprints.hardware()


def test_the_cpu_kind_names_the_cpus_vendor_family_and_model():
    zen5 = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\n\n" \
           "processor\t: 1\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n"
    assert fingerprints.cpu_model(zen5) == "AuthenticAMD-26-2"
    assert fingerprints.cpu_model(zen5.replace(": 26", ": 25")) == "AuthenticAMD-25-2"  # Zen 4: another kind
    assert fingerprints.hardware().endswith("-" + fingerprints.cpu_model())
    # a fingerprint that names only the vector unit (probed before the CPU was named) is another kind's: held to
    # the cross-CPU tolerance, as the check and adopt compare it
    assert fingerprints.hardware() != "x86_64-AVX512"


def test_a_record_is_stale_exactly_when_its_variants_fingerprint_changed(tmp_path):
    cfg = {"model_name": "glove", "pooler": "avg", "whiten": False, "whiten_dim": 0, "precision": "fp32",
           "tasks": "sts", "max_pairs": 0}
    (variant,) = runs.variants("eval", cfg)
    path = runs.fingerprint_path(variant, tmp_path)
    runs.write_json_atomic(path, {"fingerprint": "one"})
    record = runs.save("eval", cfg, {"metrics": {}}, tmp_path)
    assert record["fingerprints"] == {variant: "one"} and runs.read("eval", cfg, tmp_path)["stale"] is False
    runs.write_json_atomic(path, {"fingerprint": "two"})  # an accepted change of numbers
    assert runs.stale_reasons(runs.read("eval", cfg, tmp_path), tmp_path) == [f"{variant}: fingerprint one is now two"]
    assert runs.lookup("eval", cfg, tmp_path) is None
    # the book may still show it, flagged, but no verdict rests on it
    assert report.verdict([1.0, 1.1, 1.2], "x")["verdict"] == "holds at this scale"
    assert runs.lookup("eval", cfg, tmp_path, allow_stale=True)["stale"] is True
    assert report.verdict([1.0, 1.1, 1.2], "x")["verdict"].startswith("stale: recompute with force=True (1 stale record(s)")


def test_records_computed_under_other_library_versions_are_fingerprinted_only_when_asked(tmp_path, monkeypatch):
    """A record a GPU image computed (same source, its own torch) reads stale until `records accept
    --other-versions` names this environment's fingerprint in it; a record of other source is never taken (its
    variant is fingerprinted here, and `records adopt` alone may name it)."""
    cfg = {"model_name": "glove", "pooler": "avg", "whiten": False, "whiten_dim": 0, "precision": "fp32",
           "tasks": "sts", "max_pairs": 0}
    (variant,) = runs.variants("eval", cfg)
    monkeypatch.setattr(fingerprints, "probe_all", lambda jobs, data_dir=None, workers=2: {v: {"avg": 1.0} for v, *_ in jobs})
    here = runs.source_tree()
    record = runs.save("eval", cfg, {"metrics": {}}, tmp_path)
    path = runs.run_path("eval", cfg, tmp_path)
    report.save_verdicts("a_chapter", "cpu", [{"claim": "x", "verdict": "holds at this scale"}], root=tmp_path)
    assert list(fingerprints.records(tmp_path)) == [path]  # a chapter's verdict rows are no record (make book writes them)
    for made, taken in (("0123456789abcdef" + here[16:], False),
                        (here.split("-torch")[0] + "-torch2.11.0+cu130-transformers5.17.0", True)):
        elsewhere = {**record, "source_tree": made}
        runs.write_json_atomic(path, {**elsewhere, "digest": runs.content_digest(elsewhere)})
        assert fingerprints.status(tmp_path)["other_source"] == [path]
        if not taken:
            assert fingerprints.accept([variant], tmp_path, other_versions=True) == [
                f"accepted {variant}: fingerprint {runs.committed_fingerprint(variant, tmp_path)}"]
            assert runs.read("eval", cfg, tmp_path)["fingerprints"][variant] is None
            assert runs.read("eval", cfg, tmp_path)["stale"] is True
            continue
        fingerprints.accept([variant], tmp_path, other_versions=True)
        assert runs.read("eval", cfg, tmp_path)["fingerprints"][variant] == runs.committed_fingerprint(variant, tmp_path)
        assert runs.read("eval", cfg, tmp_path)["stale"] is False


def test_a_chapter_serves_a_stale_evaluation_of_kept_weights_and_recomputes_it_only_when_asked(tmp_path, monkeypatch):
    """make book serves stale evaluations as it serves stale runs (flagged), rather than retraining a run for its
    weights; the background filler asks for allow_stale=False and gets a recompute."""
    from sre_repro.chapters import pt_bert as chapter
    from sre_repro.evaluate import cached

    monkeypatch.setenv("SRE_REPRO_RESULTS", str(tmp_path))
    calls = []
    monkeypatch.setitem(cached.COMPUTE, "hard_subset", lambda cfg, data_dir=None: calls.append(cfg) or {"scores": {"avg": 1.0}})
    cfg = resolve(overrides={"method": "simcse", "scale": "smoke"})
    run = {"config": cfg, "metrics": {}}
    key = {"run": cfg, "model_name": cfg["model_name"], "thresholds": chapter.HARD_THRESHOLDS["strict"],
           "max_pairs": cfg["eval_max_pairs"]}
    for v in runs.variants("hard_subset", key):
        runs.write_json_atomic(runs.fingerprint_path(v, tmp_path), {"fingerprint": "one"})
    first = chapter.hard_subset(run, thresholds="strict")
    assert len(calls) == 1 and first["stale"] is False
    variant = next(v for v in first["fingerprints"] if v.startswith("hard_subset"))
    runs.write_json_atomic(runs.fingerprint_path(variant, tmp_path), {"fingerprint": "changed"})
    served = chapter.hard_subset(run, thresholds="strict")
    assert len(calls) == 1 and served["stale"] is True and served["metrics"] == {"scores": {"avg": 1.0}}
    recomputed = chapter.hard_subset(run, thresholds="strict", allow_stale=False)
    assert len(calls) == 2 and recomputed["fingerprints"][variant] == "changed"


# ----- mutation tests on a copy of the package ---------------------------------------------------------------

STORE = """
from sre_repro.evaluate.cached import cached
from sre_repro.train import train
simcse = train({"method": "simcse", "scale": "smoke"})
train({"method": "simcse", "scale": "smoke", "seed": 43})
train({"method": "byop", "scale": "smoke"})
cached("hard_subset", {"run": simcse["config"], "model_name": "tiny-random", "thresholds": {}, "max_pairs": 100})
"""


def _run(copy: Path, store: Path, *args: str, code: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "SRE_REPRO_RESULTS": str(store / "results"), "SRE_REPRO_WORK": str(store / "work"),
           "SRE_REPRO_DATA": (copy / "data").read_text(), "PYTHONPATH": str(copy), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-c", code] if code else [sys.executable, "-m", "sre_repro", *args]
    return subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, timeout=600)


def _edit(copy: Path, rel: str, old: str, new: str) -> None:
    path = copy / "sre_repro" / rel
    text = path.read_text()
    assert old in text, f"{rel} no longer holds {old!r}: update the mutation"
    path.write_text(text.replace(old, new, 1))


@pytest.fixture(scope="module")
def fingerprinted(tmp_path_factory, data_dir):
    """A copy of the package and a store of its smoke records, every variant fingerprinted."""
    base = tmp_path_factory.mktemp("mutation")
    copy, store = base / "repo", base / "store"
    shutil.copytree(ROOT / "sre_repro", copy / "sre_repro", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "data").write_text(str(data_dir))  # where the data is (a file beside the copy, read by _run)
    made = _run(copy, store, code=STORE)
    assert made.returncode == 0, made.stderr[-2000:]
    accepted = _run(copy, store, "records", "accept", "--workers", "1")
    assert accepted.returncode == 0, accepted.stderr[-2000:]
    assert len([l for l in accepted.stdout.splitlines() if l.startswith("accepted ")]) == 3  # simcse (2 seeds), byop, hard_subset
    return copy, store


def _check(fingerprinted, edits) -> tuple[int, str]:
    copy, store = fingerprinted
    sources = {rel: (copy / "sre_repro" / rel).read_text() for rel, _, _ in edits}
    try:
        for edit in edits:
            _edit(copy, *edit)
        done = _run(copy, store, "records", "check", "--workers", "1")
    finally:
        for rel, text in sources.items():
            (copy / "sre_repro" / rel).write_text(text)
    return done.returncode, done.stdout + done.stderr


def test_a_refactor_that_changes_no_number_leaves_every_record_valid(fingerprinted):
    status, out = _check(fingerprinted, [
        ("train.py", "per_epoch = len(examples) // global_batch", "batches = len(examples) // global_batch"),
        ("train.py", "total = cfg[\"max_steps\"] or per_epoch * cfg[\"epochs\"]", "total = cfg[\"max_steps\"] or batches * cfg[\"epochs\"]"),
        ("train.py", "math.ceil(total / per_epoch))]", "math.ceil(total / batches))]"),
        ("train.py", "per_epoch=per_epoch,", "per_epoch=batches,"),
        ("encoder.py", "def load_encoder(", "def _moved_helper():\n    return None\n\n\ndef load_encoder("),
        ("methods/common.py", '"""The contract every method implements', '"""The contract each method implements')])
    assert status == 0, out
    assert "0 changed" in out


def test_one_number_inside_one_method_stales_exactly_its_records(fingerprinted):
    # the temperature the loss divides by (its config default would not do: every record's config names 0.05)
    status, out = _check(fingerprinted, [("methods/simcse.py", 'info_nce(z1, z2, self.cfg["temperature"])',
                                          'info_nce(z1, z2, 1.2 * self.cfg["temperature"])')])
    copy, store = fingerprinted
    changed = [line for line in out.splitlines() if line.startswith("changed ")]
    # simcse's variant alone; its records are the two runs and the evaluation of a run's weights, which rests on it
    assert status == 1 and len(changed) == 1 and changed[0].startswith("changed simcse-"), out
    assert "stales 3 record(s) (hard_subset/" in changed[0] and "records accept simcse-" in changed[0]


def test_a_changed_evaluation_stales_exactly_the_records_that_carry_it(fingerprinted):
    status, out = _check(fingerprinted, [("evaluate/hard_subset.py", "positive_gap: int = 5", "positive_gap: int = 4")])
    changed = [line for line in out.splitlines() if line.startswith("changed ")]
    assert status == 1 and len(changed) == 1 and changed[0].startswith("changed hard_subset-"), out
    assert "stales 1 record(s) (hard_subset/" in changed[0]


def test_accepting_a_change_makes_the_old_records_stale_and_the_check_pass(fingerprinted):
    copy, store = fingerprinted
    check = _check(fingerprinted, [])
    assert check[0] == 0, check[1]
    _edit(copy, "methods/common.py", "def perturbed_cosines(cos: torch.Tensor, perturbation: str, margin) -> torch.Tensor:",
          "def perturbed_cosines(cos: torch.Tensor, perturbation: str, margin) -> torch.Tensor:\n    margin = 2 * margin")
    try:
        assert _run(copy, store, "records", "check", "--workers", "1").returncode == 1
        variant = next(p.stem for p in (store / "results" / "fingerprints").glob("byop-*.json"))
        assert _run(copy, store, "records", "accept", variant, "--workers", "1").returncode == 0
        done = _run(copy, store, "records", "check", "--workers", "1")
        assert done.returncode == 0 and "1 record(s) rest on a fingerprint since changed" in done.stdout, done.stdout
        (record,) = (store / "results" / "byop").glob("*.json")
        stale = _run(copy, store, code=f"import json; from sre_repro import runs; "
                                     f"print(runs.stale_reasons(json.load(open({str(record)!r}))))")
        assert f"{variant}: fingerprint" in stale.stdout
    finally:
        shutil.rmtree(copy / "sre_repro")
        shutil.copytree(ROOT / "sre_repro", copy / "sre_repro", ignore=shutil.ignore_patterns("__pycache__"))


ADOPT_RECORD = """
from sre_repro.evaluate.cached import cached
from sre_repro.evaluate.model import eval_config
cached("eval", eval_config(model_name="tiny-random", pooler="avg", tasks="stsb_dev", max_pairs=20))
"""


def _committed_copy(tmp_path: Path, data_dir) -> tuple[Path, Path, list[str]]:
    """A copy of the package committed to a git repository of its own, its store, and the git command line."""
    copy, store = tmp_path / "repo", tmp_path / "store"
    shutil.copytree(ROOT / "sre_repro", copy / "sre_repro", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "data").write_text(str(data_dir))
    git = ["git", "-C", str(copy), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "sre_repro"], ["commit", "-q", "-m", "A"]):
        subprocess.run(git + args, check=True, capture_output=True)
    return copy, store, git


def test_adopt_names_a_fingerprint_where_the_records_own_commit_computes_its_numbers(tmp_path, data_dir):
    """A record an earlier commit computed before its variant had a fingerprint (a lane on an older checkout, a
    device's copy) reads stale; `records adopt` probes the variant on that commit's package, read out of git,
    and names the fingerprint only where the numbers are the committed ones."""
    copy, store, git = _committed_copy(tmp_path, data_dir)  # commit A
    assert _run(copy, store, code=ADOPT_RECORD).returncode == 0  # computed by commit A, no fingerprint yet
    _edit(copy, "runs.py", "def stale_reasons(", "# a later commit's comment\ndef stale_reasons(")  # tree B: same numbers
    # accept probes a variant whose every record other source computed (here B's probe: it names no record)
    made = _run(copy, store, "records", "accept", "--workers", "1")
    assert made.returncode == 0 and "accepted eval-" in made.stdout, made.stdout + made.stderr[-2000:]
    (path,) = (store / "results" / "eval").glob("*.json")
    (committed_path,) = (store / "results" / "fingerprints").glob("eval-*.json")
    variant, committed = committed_path.stem, json.loads(committed_path.read_text())
    assert json.loads(path.read_text())["fingerprints"] == {variant: None}
    # committed numbers that commit A does not compute: the record gets A's own fingerprint, and reads stale
    numbers = {"metrics": {"stsb_dev": committed["numbers"]["metrics"]["stsb_dev"] + 1.0}}
    tampered = {**committed, "numbers": numbers, "fingerprint": fingerprints.fingerprint_of(numbers)}
    committed_path.write_text(json.dumps(tampered))
    done = _run(copy, store, "records", "adopt")
    assert done.returncode == 0 and f"stale {variant}: 1 record(s) of commit" in done.stdout, done.stdout + done.stderr
    record = json.loads(path.read_text())
    assert record["fingerprints"] == {variant: committed["fingerprint"]}  # what A computes: the true numbers' label
    assert runs.stale_reasons(record, store / "results") == [
        f"{variant}: fingerprint {committed['fingerprint']} is now {tampered['fingerprint']}"]
    # the true numbers committed again: unname the record (as it came from A) and adopt it
    committed_path.write_text(json.dumps(committed))
    unnamed = {**record, "fingerprints": {variant: None}}
    path.write_text(json.dumps({**unnamed, "digest": runs.content_digest(unnamed)}))
    done = _run(copy, store, "records", "adopt")
    assert f"adopted {variant}: 1 record(s) of commit" in done.stdout, done.stdout + done.stderr
    record = json.loads(path.read_text())
    assert record["fingerprints"] == {variant: committed["fingerprint"]} and record["digest"] == runs.content_digest(record)
    assert runs.stale_reasons(record, store / "results") == []  # served again


def test_adopt_rebuilds_a_lanes_tree_from_its_commit_and_pending_patch(tmp_path, data_dir):
    """A lane computes in a worktree of commit A with A's pending patch applied (scripts/flip.py), a tree that is
    not A's package: `records adopt` applies the patch that A holds to A's package, finds the record's tree, and
    adopts; a record whose tree neither gives stays unnamed."""
    copy, store, git = _committed_copy(tmp_path, data_dir)
    _edit(copy, "runs.py", "def stale_reasons(", "# the pending change\ndef stale_reasons(")  # the lane's patch
    patch = subprocess.run(git + ["diff"], check=True, capture_output=True).stdout
    (copy / "scripts").mkdir()
    (copy / "scripts" / "flip.patch").write_bytes(patch)
    for args in (["checkout", "sre_repro"], ["add", "scripts"], ["commit", "-q", "-m", "A"], ["apply", "scripts/flip.patch"]):
        subprocess.run(git + args, check=True, capture_output=True)
    assert _run(copy, store, code=ADOPT_RECORD).returncode == 0  # computed by A + its patch, no fingerprint yet
    _edit(copy, "runs.py", "# the pending change\n", "# the change, landed\n")  # tree B: same numbers
    made = _run(copy, store, "records", "accept", "--workers", "1")
    assert made.returncode == 0 and "accepted eval-" in made.stdout, made.stdout + made.stderr[-2000:]
    (path,) = (store / "results" / "eval").glob("*.json")
    variant = next(iter(json.loads(path.read_text())["fingerprints"]))
    done = _run(copy, store, "records", "adopt")
    assert f"adopted {variant}: 1 record(s) of commit" in done.stdout, done.stdout + done.stderr
    assert runs.stale_reasons(json.loads(path.read_text()), store / "results") == []
    # the same record claimed by another tree (neither A's package nor A's patch gives it): unnamed, stale
    record = json.loads(path.read_text())
    other = {**record, "fingerprints": {variant: None}, "source_tree": "0123456789abcdef-torch0"}
    path.write_text(json.dumps({**other, "digest": runs.content_digest(other)}))
    done = _run(copy, store, "records", "adopt")
    assert "kept unnamed: 1 record link(s) of commit" in done.stdout and "flip.patch" in done.stdout, done.stdout


def test_a_probe_drops_its_dependencies_checkpoints_but_keeps_their_copies(tmp_path):
    """After each probe the training folders' checkpoints go (a full check once held 14 GB of them); the kept
    copies in models/ that later probes load, and the shared cache/, stay."""
    shared = tmp_path / "shared-cache"
    (shared / "chunker").mkdir(parents=True)
    (shared / "chunker" / "keep.pt").write_bytes(b"c")
    work = tmp_path / "work"
    (work / "paser" / "abc").mkdir(parents=True)
    (work / "models").mkdir()
    for name in ("best.pt", "last.pt", "trace.json"):
        (work / "paser" / "abc" / name).write_bytes(b"x")
    (work / "models" / "paser-abc-1.pt").write_bytes(b"w")
    (work / "cache").symlink_to(shared)
    fingerprints._drop_checkpoints(work)
    assert sorted(p.name for p in (work / "paser" / "abc").iterdir()) == ["trace.json"]
    assert (work / "models" / "paser-abc-1.pt").exists() and (shared / "chunker" / "keep.pt").exists()
