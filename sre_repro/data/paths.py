"""Where the data lives, and whether it is all there and intact.

Resolution order for the data dir: an explicit argument (`--data-dir`), then `$SRE_REPRO_DATA`,
then `./data` (which `make` links to `../shared/data` when that exists). Every file is checked
against `SHA256SUMS` (the checksums of the canonical files) the first time it is read.
"""
from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

from ..errors import SreError

MANIFEST = Path(__file__).with_name("SHA256SUMS")

# Top-level folder of the data dir -> where a user with internet gets it.
SOURCES = {
    "senteval": "run `sre-repro download --data-dir D` (SentEval's senteval.tar from the HF dataset "
                "princeton-nlp/datasets-for-simcse)",
    "wiki": "run `sre-repro download --data-dir D` (SimCSE's wiki1m_for_simcse.txt)",
    "nltk_data": "run `sre-repro download --data-dir D` (nltk.download into D/nltk_data)",
    "bookcorpus_token_counts": "run `sre-repro download --data-dir D` (SLT-FAI's data/labels/bookcorpus)",
    "quora": "get the BiMPM Quora split (dev.tsv/test.tsv) and save it as quora/dev.txt, quora/test.txt",
    "askubuntu": "clone taolei87/askubuntu and copy dev.txt, test.txt, heldout.txt into askubuntu/",
}


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """The data dir: `data_dir`, else $SRE_REPRO_DATA, else ./data. Raises if it does not exist."""
    if data_dir is not None:
        origin, path = "--data-dir", Path(data_dir)
    elif os.environ.get("SRE_REPRO_DATA"):
        origin, path = "$SRE_REPRO_DATA", Path(os.environ["SRE_REPRO_DATA"])
    else:
        origin, path = "default ./data", Path("data")
    if path.exists() and not path.is_dir():
        raise SreError(f"data dir {path} ({origin}) is a file, not a folder: pass --data-dir, set SRE_REPRO_DATA, "
                       f"or run `make data` to link ../shared/data to ./data")
    if not path.is_dir():
        raise SreError(f"data dir {path} ({origin}) does not exist: pass --data-dir, set SRE_REPRO_DATA, "
                       f"or run `make data` to link ../shared/data to ./data")
    return path.resolve()


@lru_cache(maxsize=1)
def manifest() -> dict[str, str]:
    """Relative path -> expected sha256, for every file the book can use."""
    entries = {}
    for line in MANIFEST.read_text().splitlines():
        digest, rel = line.split(maxsplit=1)
        entries[rel.lstrip("*")] = digest
    return entries


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@lru_cache(maxsize=None)
def _verified(path: str, size: int, mtime_ns: int, expected: str) -> bool:
    return _sha256(Path(path)) == expected


def how_to_get(rel: str) -> str:
    return SOURCES.get(rel.split("/")[0], "see the data README")


def data_file(rel: str, data_dir: str | os.PathLike | None = None, verify: bool = True) -> Path:
    """The path of data file `rel`, checked to exist and to match its checksum."""
    root = resolve_data_dir(data_dir)
    path = root / rel
    if not path.is_file():
        raise SreError(f"data file {rel} is missing from data dir {root}: {how_to_get(rel)}")
    expected = manifest().get(rel)
    if verify and expected is not None:
        st = path.stat()
        if not _verified(str(path), st.st_size, st.st_mtime_ns, expected):
            raise SreError(f"data file {path} is corrupt (sha256 differs from sre_repro/data/SHA256SUMS): "
                           f"replace it; {how_to_get(rel)}")
    return path


def check(data_dir: str | os.PathLike | None = None) -> tuple[list[str], list[str], int]:
    """Verify every file of the manifest. Returns (missing, corrupt, n_ok)."""
    root = resolve_data_dir(data_dir)
    missing, corrupt, ok = [], [], 0
    for rel, digest in manifest().items():
        path = root / rel
        if not path.is_file():
            missing.append(rel)
        elif _sha256(path) != digest:
            corrupt.append(rel)
        else:
            ok += 1
    return missing, corrupt, ok


def missing_groups(missing: list[str]) -> list[tuple[str, int]]:
    """The missing files as `data check` lists them: (a folder all of whose files are missing, with a trailing
    "/", or a single file; how many files), so an empty data dir takes a few lines rather than thousands."""
    def folders(rel: str) -> list[str]:
        parts = rel.split("/")[:-1]
        return ["/".join(parts[: i + 1]) + "/" for i in range(len(parts))]

    total: dict[str, int] = {}
    for rel in manifest():
        for folder in folders(rel):
            total[folder] = total.get(folder, 0) + 1
    gone: dict[str, int] = {}
    for rel in missing:
        for folder in folders(rel):
            gone[folder] = gone.get(folder, 0) + 1
    groups: dict[str, int] = {}
    for rel in missing:
        whole = next((f for f in folders(rel) if gone[f] == total[f]), rel)  # the outermost folder wholly missing
        groups[whole] = groups.get(whole, 0) + 1
    return list(groups.items())
