"""The README's command lines, run as written from a fresh clone (at smoke scale where a line names a longer one).

Every command line of the README's code blocks and of its "Rerun a chapter" paragraph is either run here, with
the substitutions listed in AT_SMOKE, or named in ELSEWHERE with the test that runs it or why it cannot run in a
test. A line added to the README without either fails the first test.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sre_repro.settings import REPO_ROOT

# README text -> what the test writes instead (the same command, smoke-sized)
# (the papermill line in quick mode too: tests/test_book.py executes every chapter in full at smoke)
AT_SMOKE = {"--set scale=cpu": "--set scale=smoke",
            "-p scale paper -p model_name bert-base-uncased": "-p scale smoke -p quick True",
            "--method pt_bert --set packed=false": "--method pt_bert --set packed=false --set scale=smoke",
            "--method paser --set patience=3": "--method paser --set scale=smoke --set patience=3",
            "python -m sre_repro bench ": "python -m sre_repro bench --quick --only packing --out work/bench.json ",
            "pretrain --config configs/sre-bert.yaml": "pretrain --config configs/sre-bert.yaml --set scale=smoke "
                                                       "--set batch_size=8 --set max_steps=2 --set eval_steps=2 "
                                                       "--set precision=fp32 --set device=cpu "
                                                       "--set output_dir=work/sre-bert-smoke"}
ELSEWHERE = {
    "make book": "CI builds the book (.ci/run); test_book executes every notebook",
    "make test": "CI runs it (.ci/run)",
    "make venv": "make test makes it (.ci/run)",
    "torchrun": "tests/test_distributed.py::test_torchrun_trains_with_the_documented_command (2 processes, smoke)",
    "download": "needs internet (tests/test_train.py::test_download_refuses_when_offline checks the offline refusal)",
    "conda env create": "conda is not on the test machine",
    "SRE_REPRO_READ_LOG=work/read.log make notebooks": "executes every chapter at cpu",
    "python scripts/unread_results.py": "deletes records: run after a recompute",
    "python scripts/time_quick.py": "tests/test_book_helpers.py::test_time_quick_measures_a_chapter_from_nothing (smoke)",
}


def readme_commands(text: str) -> list[str]:
    """The command lines of the README: each line of its bash blocks (comments dropped) and each `command` in
    backticks that starts with papermill, python, make or conda."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        lines += [line.split(" #")[0].strip() for line in block.splitlines() if line.strip()]
    lines += [c for c in re.findall(r"`((?:papermill|python|make|conda|SRE_REPRO_READ_LOG)[^`]*)`", text) if " " in c]
    return list(dict.fromkeys(lines))


def test_every_readme_command_is_run_here_or_named_elsewhere():
    commands = readme_commands((REPO_ROOT / "README.md").read_text())
    assert len(commands) >= 15, commands
    runnable = [c for c in commands if not any(c.startswith(k) or k in c for k in ELSEWHERE)]
    assert all(c.startswith(("python -m sre_repro", "papermill", "make clean")) for c in runnable), runnable


def _smoke(command: str) -> str:
    for text, smoke in AT_SMOKE.items():
        command = (command + " ").replace(text, smoke).strip()
    return command


@pytest.fixture(scope="module")
def clone(tmp_path_factory, data_dir):
    """A fresh clone of the committed tree, its data linked as `make data` links it, the project's virtualenv on
    PATH (what `make book` made; the README says to activate it)."""
    root = tmp_path_factory.mktemp("readme") / "sre-repro"
    subprocess.run(["git", "clone", "--quiet", "--local", str(REPO_ROOT), str(root)], check=True, timeout=300)
    (root / "data").symlink_to(Path(data_dir).resolve())
    (root / "my.yaml").write_text("scale: smoke\n")  # the README's own YAML example
    return root


def _run(command: str, root: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("SRE_REPRO_RESULTS", "SRE_REPRO_WORK", "SRE_REPRO_DATA")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # source .venv/bin/activate
    env["VIRTUAL_ENV"] = str(Path(sys.executable).parent.parent)
    command = command.replace("python ", f"{sys.executable} ", 1) if command.startswith("python ") else command
    return subprocess.run(command, shell=True, cwd=root, env=env, capture_output=True, text=True, timeout=900)


def test_the_readme_commands_run_as_written_from_a_fresh_clone(clone):
    commands = [c for c in readme_commands((clone / "README.md").read_text()) if not any(
        c.startswith(k) or k in c for k in ELSEWHERE)]
    trained = None
    for command in commands:
        command = _smoke(command)
        if "<config_hash>" in command:
            command = command.replace("results/simcse/<config_hash>.json", trained)
        out = _run(command, clone)
        if command == "python -m sre_repro records check":
            # the committed records all check; the runs this test made are new variants, which it lists for
            # `records accept` (exit 1) as it should before anyone commits them
            lines = out.stdout.strip().splitlines()
            assert out.returncode == 1 and ", 0 changed, " in lines[-1] and "confirmed" in lines[-1], out.stdout
            assert any(line.startswith("unfingerprinted") for line in lines), out.stdout
            assert not any(line.startswith("changed") for line in lines), out.stdout
            continue
        assert out.returncode == 0, f"{command}\n{out.stderr[-3000:]}"
        if command == "make clean":  # keeps the training checkpoints; clean-all (next) removes them
            assert list((clone / "work" / "simcse").glob("*/last.pt")) and not (clone / "work" / "probes").exists()
        if command == "make clean-all":
            assert not (clone / "work").exists()
        if " train --method simcse --set scale=smoke --set seed=43" in command:  # the run `export` names below
            trained = "results/simcse/{}.json".format(re.search(r"run (\w+) \(simcse, seed 43\)", out.stderr)[1])
        if "--format json" in command and "eval" in command:
            assert len(json.loads(out.stdout.strip().splitlines()[-1])) == 8
    assert commands.index("make clean") < commands.index("make clean-all")
    assert trained and (clone / "my-model" / "README.md").is_file() and (clone / "out.ipynb").is_file()
    assert "sre-repro simcse run" in (clone / "my-model" / "README.md").read_text()
