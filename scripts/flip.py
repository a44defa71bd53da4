"""A change staged while its records are computed over several sessions on CPU lanes (the "flip"), then landed at
once. First used for PaSeR's cap moving from 600 to 1200 steps at cpu (landed in commit d0eae4d; records adopt still
reads each lane record's commit's own scripts/flip.patch, fingerprints.PENDING_PATCH). The change is
scripts/flip.patch, made in a worktree with `git diff > scripts/flip.patch` and committed beside the records.
Most of a flip's runs have keys of their own and land in results/ as they finish; main's chapter does not read them
until the flip. A run that starts from another's weights (supervised PaSeR) does not: its key stays when its
start's cap moves (settings.CAPS_PENDING), so its new records, and the evaluations of their kept weights, would
replace records main's chapter reads now. They wait in results/pending/<kind>/<hash>.json, which the store never
reads (runs.record_paths).

    python scripts/flip.py worktree DIR   # a worktree of HEAD, the patch applied, the pending records in place
    cd DIR && PYTHONPATH=DIR SRE_REPRO_WORK=<here>/work python scripts/fill_records.py run --workers 1 --threads 2
    python scripts/flip.py collect DIR    # its finished records here: new keys to results/, the others to pending/
    python scripts/flip.py land           # the flip: the patch applied here, results/pending/ moved into results/
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATCH, PENDING = ROOT / "scripts" / "flip.patch", ROOT / "results" / "pending"


def _git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _unpend(results: Path) -> int:
    """Every pending record into its place in `results` (a record of the same key replaced)."""
    moved = sorted(PENDING.glob("*/*.json"))
    for path in moved:
        (results / path.parent.name).mkdir(exist_ok=True)
        shutil.copyfile(path, results / path.parent.name / path.name)
    return len(moved)


def worktree(folder: Path) -> None:
    _git("worktree", "add", "--detach", str(folder), "HEAD")
    _git("apply", str(PATCH), cwd=folder)
    if not (folder / "data").exists() and (ROOT / "data").exists():
        (folder / "data").symlink_to((ROOT / "data").resolve())
    print(f"{folder}: the flip applied, {_unpend(folder / 'results')} pending records in place")


def collect(folder: Path) -> None:
    """The records the lane in `folder` wrote (untracked there: a new key; modified: a key HEAD holds) into this
    checkout's results/ (new keys) or results/pending/ (keys main reads now)."""
    counts = {"results": 0, "pending": 0}
    for line in _git("status", "--porcelain", "--untracked-files=all", "results", cwd=folder).splitlines():
        state, name = line[:2], line[3:]
        if not name.endswith(".json") or name.startswith("results/pending/") or name.count("/") != 2:
            continue
        source, here = folder / name, ROOT / name
        new_key = state == "??" and (not here.exists() or here.read_bytes() == source.read_bytes())  # collected before
        target = here if new_key else PENDING / Path(name).relative_to("results")
        if target.exists() and target.read_bytes() == source.read_bytes():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        counts["pending" if target.is_relative_to(PENDING) else "results"] += 1
        print(target.relative_to(ROOT))
    print(f"{counts['results']} records into results/, {counts['pending']} into results/pending/", file=sys.stderr)


def land() -> None:
    _git("apply", str(PATCH))
    print(f"the flip applied; {_unpend(ROOT / 'results')} pending records moved into results/")
    shutil.rmtree(PENDING, ignore_errors=True)
    PATCH.unlink()


if __name__ == "__main__":
    command, *rest = sys.argv[1:] or ["help"]
    if command in ("worktree", "collect") and len(rest) == 1:
        (worktree if command == "worktree" else collect)(Path(rest[0]).resolve())
    elif command == "land" and not rest:
        land()
    else:
        sys.exit(f"usage: python scripts/flip.py worktree DIR | collect DIR | land\n\n{__doc__}")
