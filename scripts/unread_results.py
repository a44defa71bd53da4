"""List the committed run records that no notebook reads, so they can be removed after a recompute.

    SRE_REPRO_READ_LOG=work/read.log make book   # every record a lookup asks for is appended to the log
    python scripts/unread_results.py work/read.log [--delete]

Two records are read by something other than a notebook lookup and are never listed: the stand-in PLM's
pretraining record (results/mlm/, read from its file by chapter 00b) and the smoke-scale records (the test
suite reruns them to guard against refactors that change numbers: tests/test_train.py).
"""
import sys
from pathlib import Path

from sre_repro import runs

if len(sys.argv) < 2:
    sys.exit("usage: python scripts/unread_results.py READ_LOG [--delete]  (make the log with SRE_REPRO_READ_LOG=READ_LOG make book)")
read = {Path(line.strip()) for line in Path(sys.argv[1]).read_text().splitlines() if line.strip()}
root = runs.results_dir().resolve()
records = runs.record_paths(root)


def kept_anyway(path: Path) -> bool:
    return path.parent.name == "mlm" or '"scale": "smoke"' in path.read_text()


unread = [p for p in records if p not in read and not kept_anyway(p)]
for path in unread:
    print(path.relative_to(root))
    if "--delete" in sys.argv:
        path.unlink()
print(f"{len(unread)} of {len(records)} records unread", file=sys.stderr)
