"""Time every chapter in quick mode (`-p quick True`) at a scale, each from nothing: an empty run store and an
empty work folder of its own, the data dir and the committed PLM only. Writes results/quick_times.json (what the
chapters' "Needs" lines and the page "Teaching with this book" read), one chapter at a time, so an interrupted run
keeps what it measured. Run it on idle cores (each chapter uses all of them): the numbers are wall times.

    python scripts/time_quick.py                 # every chapter at cpu
    python scripts/time_quick.py 01_simcse paser # these chapters; --scale smoke for a dry run
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sre_repro import book, runs
from sre_repro.settings import REPO_ROOT

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("chapters", nargs="*", default=book.QUICK_CHAPTERS)
parser.add_argument("--scale", default="cpu")
args = parser.parse_args()
unknown = sorted(set(args.chapters) - set(book.QUICK_CHAPTERS))
if unknown:
    sys.exit(f"time_quick: no quick mode in {unknown[0]}: choose from {', '.join(book.QUICK_CHAPTERS)}")
for name in args.chapters:
    with tempfile.TemporaryDirectory() as empty:
        env = {**os.environ, "SRE_REPRO_RESULTS": f"{empty}/results", "SRE_REPRO_WORK": f"{empty}/work",
               "SRE_REPRO_PROGRESS": "0"}
        start = time.perf_counter()
        subprocess.run([Path(sys.executable).parent / "papermill", "--cwd", REPO_ROOT, "-k", "python3", "--no-progress-bar",
                        REPO_ROOT / "notebooks" / f"{name}.ipynb", f"{empty}/out.ipynb", "-p", "scale", args.scale,
                        "-p", "quick", "True"], check=True, env=env)
        seconds = time.perf_counter() - start
    made = runs.provenance()
    book.save_quick_time(name, args.scale, {"seconds": round(seconds, 1), "hardware": made["hardware"],
                                            "versions": made["versions"], "measured": made["created"],
                                            "source_tree": runs.source_tree()})
    print(f"{name}: {seconds / 60:.1f} minutes in quick mode at {args.scale}", flush=True)
