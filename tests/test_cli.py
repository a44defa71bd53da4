"""The command line: JSON output, and one-line errors with exit status 2 for bad input."""
import json
import os
import subprocess
import sys

import pytest

from sre_repro.encoder import REPO_ROOT


def cli(*args, env=None):
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "sre_repro", *args], capture_output=True, text=True,
                          cwd=REPO_ROOT, env=full_env, timeout=600)


def test_eval_glove_json_has_the_seven_scores():
    out = cli("eval", "--model", "glove", "--tasks", "sts", "--format", "json")
    assert out.returncode == 0, out.stderr
    scores = json.loads(out.stdout.strip().splitlines()[-1])
    assert list(scores) == ["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness", "avg"]
    assert scores["avg"] == pytest.approx(44.90, abs=0.01)


def test_eval_minilm_from_the_committed_cache():
    """The acceptance command; served from results/ (computing it takes ~80 s on 2 cores)."""
    out = cli("eval", "--model", "minilm", "--pooler", "avg", "--tasks", "sts", "--format", "json",
              env={"SRE_REPRO_RESULTS": str(REPO_ROOT / "results")})
    assert out.returncode == 0, out.stderr
    scores = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(scores) == 8 and 70 < scores["avg"] < 90


def test_data_check_passes_on_the_shared_data():
    out = cli("data", "check")
    assert out.returncode == 0 and "0 missing, 0 corrupt" in out.stdout


def test_data_check_fails_on_an_empty_dir(tmp_path):
    out = cli("data", "check", "--data-dir", str(tmp_path))
    assert out.returncode == 1 and "missing  senteval/downstream/STS/STS12-en-test" in out.stdout


@pytest.mark.parametrize("args,message", [
    (["train", "--method", "nope"], "unknown method 'nope'"),
    (["train", "--set", "scale=smoke", "--set", "bogus=1"], "unknown parameter 'bogus'"),
    (["train", "--set", "scale=smoke", "--set", "lr=fast"], "parameter lr expects float"),
    (["train", "--set", "scale=smoke", "--set", "batch_size=1"], "batch_size 1 is too small"),
    (["train", "--set", "scale=smoke", "--set", "max_len=1"], "max_len must be at least 2"),
    (["eval", "--model", "glove", "--tasks", "STS99"], "unknown task 'STS99'"),
    (["eval", "--model", "minilm", "--pooler", "max"], "unknown pooler 'max'"),
    (["eval", "--model", "./no/such/dir"], "model path no/such/dir does not exist"),
    (["eval", "--model", "glove", "--data-dir", "/no/such/data"], "data dir /no/such/data (--data-dir) does not exist"),
    (["download", "--data-dir", "/tmp/x"], "downloads are off"),
    (["train", "--method", "slt_fai", "--set", "scale=smoke", "--set", "low_rate=1.5"], "low_rate (lambda) must lie in (0, 1)"),
    (["train", "--method", "slt_fai", "--set", "scale=smoke", "--set", "isf_mask=middle"], "unknown isf_mask 'middle'"),
    (["train", "--method", "slt_fai", "--set", "scale=smoke", "--set", "backbone=bert"], "unknown backbone 'bert'"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    out = cli(*args)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sre-repro: error:") and message in lines[0], out.stderr


@pytest.mark.parametrize("progress, bars", [("0", False), ("1", True)])
@pytest.mark.parametrize("first", ["", "import transformers; "])  # a notebook may import transformers first
def test_sre_repro_progress_0_also_silences_transformers_loading_bars(progress, bars, first):
    """SRE_REPRO_PROGRESS=0 (the Makefile's and CI's setting) keeps the notebooks' outputs free of bars."""
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    code = first + "from sre_repro.encoder import load_encoder; load_encoder('sre-bert')"
    out = subprocess.run([sys.executable, "-c", code],
                         capture_output=True, text=True, cwd=REPO_ROOT, env={**env, "SRE_REPRO_PROGRESS": progress},
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert ("Loading weights" in out.stderr) == bars


def test_a_nonexistent_data_dir_is_an_error_even_on_a_cache_hit(tmp_path):
    """The minilm scores are committed, so this would print them and exit 0 if the named dir went unchecked."""
    out = cli("eval", "--model", "minilm", "--pooler", "avg", "--tasks", "sts", "--data-dir", str(tmp_path / "nonexistent"),
              env={"SRE_REPRO_RESULTS": str(REPO_ROOT / "results")})
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [f"sre-repro: error: data dir {tmp_path / 'nonexistent'} (--data-dir) does not exist: "
                                               "pass --data-dir, set SRE_REPRO_DATA, or run `make data` to link ../shared/data to ./data"]
    cached = cli("eval", "--model", "minilm", "--pooler", "avg", "--tasks", "sts", "--format", "json",
                 env={"SRE_REPRO_RESULTS": str(REPO_ROOT / "results"), "SRE_REPRO_DATA": str(tmp_path / "typo")})
    assert cached.returncode == 2 and "(" + "$SRE_REPRO_DATA) does not exist" in cached.stderr


def _files(tmp_path):
    """The bad files the cases below name: a malformed and a binary YAML, NaN in YAML, a conflicting method, an
    empty model folder, a truncated and a hand-edited record (copies of a committed one), a plain file."""
    record = sorted((REPO_ROOT / "results" / "simcse").glob("*.json"))[0].read_text()
    edited = json.loads(record)
    edited["metrics"]["sts"]["avg"] = 99.9
    files = {"bad.yaml": "lr: [1, 2\nmethod: simcse\n", "nan.yaml": "lr: .nan\n", "byop.yaml": "method: byop\n",
             "truncated.json": record[:100], "edited.json": json.dumps(edited), "plain.txt": "x"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "binary.yaml").write_bytes(b"\xff\xfe\x00\x81binary")
    (tmp_path / "empty_model").mkdir()
    return tmp_path


@pytest.mark.parametrize("args,message", [
    (["train", "--set", "scale=smoke", "--set", "lr=nan"], "parameter lr must be a finite number, got nan"),
    (["train", "--set", "scale=smoke", "--set", "seed=-3"], "seed must lie in [0, 2**32), got -3"),
    (["train", "--set", "scale=smoke", "--set", "seed=99999999999"], "seed must lie in [0, 2**32)"),
    (["train", "--set", "scale=smoke", "--set", "max_len=100000"], "longer than the PLMs' 512 positions"),
    (["train", "--config", "{tmp}/bad.yaml"], "is not valid YAML (line 2)"),
    (["train", "--config", "{tmp}/binary.yaml"], "is not text"),
    (["train", "--config", "{tmp}/nan.yaml", "--set", "scale=smoke"], "parameter lr must be a finite number"),
    (["train", "--config", "{tmp}/byop.yaml", "--method", "simcse"], "--method simcse contradicts method 'byop'"),
    (["train", "--config", "{tmp}/missing.yaml"], "does not exist"),
    (["eval", "--model", "{tmp}/empty_model"], "has no config.json"),
    (["eval", "--model", "glove", "--pooler", "cls"], "pooler 'cls' does not apply"),
    (["export", "{tmp}/truncated.json", "--to", "{tmp}/out"], "is not a readable JSON record"),
    (["export", "{tmp}/edited.json", "--to", "{tmp}/out"], "does not match its digest"),
    (["export", "simcse/0e31b568a0089c7a", "--to", "{tmp}/plain.txt"], "is a file, not a folder"),
])
def test_more_bad_input_is_one_line_and_exit_2(args, message, tmp_path, capsys):
    """In-process (no interpreter start per case): the one line, exit 2, and no committed record touched."""
    from sre_repro.cli import main

    tmp = _files(tmp_path)
    before = {p: p.stat().st_mtime_ns for p in (REPO_ROOT / "results").rglob("*.json")}
    assert main([a.replace("{tmp}", str(tmp)) for a in args]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sre-repro: error:") and message in lines[0], lines
    assert {p: p.stat().st_mtime_ns for p in (REPO_ROOT / "results").rglob("*.json")} == before
