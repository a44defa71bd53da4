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
    lines = out.stdout.strip().splitlines()
    # one line per wholly missing source folder (it printed all 3,605 files before), then the count
    assert out.returncode == 1 and len(lines) == 7, out.stdout
    assert lines[4].startswith("missing  senteval/ (101 files, all of it): run `sre-repro download")
    assert lines[-1] == f"data dir {tmp_path}: 0 files ok, 3605 missing, 0 corrupt"


def test_data_check_lists_a_partly_missing_folder_file_by_file():
    from sre_repro.data.paths import manifest, missing_groups
    sts12 = sorted(rel for rel in manifest() if rel.startswith("senteval/downstream/STS/STS12-en-test/"))
    assert len(sts12) == 12
    assert missing_groups(sts12[:2]) == [(sts12[0], 1), (sts12[1], 1)]
    assert missing_groups(sts12) == [("senteval/downstream/STS/STS12-en-test/", 12)]


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
    stringly = json.loads(record)
    stringly["metrics"]["sts"]["avg"] = "high"
    files = {"bad.yaml": "lr: [1, 2\nmethod: simcse\n", "nan.yaml": "lr: .nan\n", "byop.yaml": "method: byop\n",
             "truncated.json": record[:100], "edited.json": json.dumps(edited), "plain.txt": "x",
             "string_metric.json": json.dumps(stringly), "list.yaml": "- lr\n- 3e-5\n", "unknown.yaml": "lrr: 1\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "binary.yaml").write_bytes(b"\xff\xfe\x00\x81binary")
    from sre_repro.runs import content_digest
    evaluation = {"kind": "eval", "config": {"model_name": "glove"}, "metrics": {}}
    (tmp_path / "eval.json").write_text(json.dumps({**evaluation, "digest": content_digest(evaluation)}))
    (tmp_path / "empty_model").mkdir()
    (tmp_path / "a_folder").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "kept.txt").write_text("x")
    return tmp_path


T = ["train", "--method", "simcse", "--set", "scale=smoke", "--set"]  # one knob after it


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
    # every knob kind: bool, int, float, choice, range; the method's own knobs
    (T + ["packed=maybe"], "parameter packed expects bool, got 'maybe'"),
    (T + ["max_steps=1.5"], "parameter max_steps expects int, got '1.5'"),
    (T + ["max_steps=-1"], "parameter max_steps must be >= 0, got -1"),
    (T + ["seed=abc"], "parameter seed expects int, got 'abc'"),
    (T + ["lr=-1e-4"], "parameter lr must be positive"),
    (T + ["weight_decay=inf"], "parameter weight_decay must be a finite number, got inf"),
    (T + ["warmup_ratio=2"], "parameter warmup_ratio must lie in [0, 1]"),
    (T + ["epochs=0"], "parameter epochs must be positive, got 0"),
    (T + ["patience=-1"], "parameter patience must be >= 0, got -1"),
    (T + ["scale=huge"], "unknown scale 'huge': choose from smoke, cpu, paper"),
    (T + ["pooler=max"], "unknown pooler 'max'"),
    (T + ["eval_pooler=max"], "unknown eval_pooler 'max'"),
    (T + ["precision=fp8"], "unknown precision 'fp8'"),
    (T + ["device=tpu"], "unknown device 'tpu'"),
    (T + ["train_data=books"], "unknown train_data 'books'"),
    (T + ["dropout=1.5"], "dropout must lie in [0, 1)"),
    (T + ["temperature=0"], "temperature must be positive"),
    (T + ["lr"], "--set 'lr' is not key=value"),
    (T + ["model_name=./no/such/model"], "model path no/such/model does not exist"),
    (T + ["device=cuda"], "device cuda was asked for but no GPU is visible"),
    (T + ["precision=fp16"], "precision fp16 needs a GPU"),
    # every file the CLI reads: missing, a folder, of the wrong kind
    (["train", "--config", "{tmp}/a_folder"], "is a folder: give a YAML file"),
    (["train", "--config", "{tmp}/list.yaml"], "must be a mapping: write key: value lines"),
    (["train", "--config", "{tmp}/unknown.yaml"], "unknown parameter 'lrr' for method simcse"),
    (["train", "--method", "simcse", "--set", "scale=smoke", "--data-dir", "{tmp}/plain.txt"], "is a file, not a folder"),
    (["eval", "--model", "{tmp}/plain.txt"], "is a file, not a model folder"),
    (["eval", "--model", "glove", "--tasks", ""], "unknown task ''"),
    (["eval", "--model", "glove", "--precision", "fp16"], "precision fp16 does not apply"),
    (["eval", "--model", "sre-bert", "--precision", "fp16"], "precision fp16 needs a GPU"),
    (["export", "simcse/0000000000000000", "--to", "{tmp}/out"], "no run record"),
    (["export", "{tmp}/eval.json", "--to", "{tmp}/out"], "not a trained sentence encoder"),
    (["export", "{tmp}/string_metric.json", "--to", "{tmp}/out"], "does not match its digest"),
    (["export", "simcse/0e31b568a0089c7a", "--to", "{tmp}/full"], "is not empty: export into a new folder"),
])
def test_more_bad_input_is_one_line_and_exit_2(args, message, tmp_path, capfd, monkeypatch):
    """In-process (no interpreter start per case): the one line, exit 2, and neither a committed record nor a
    checkpoint touched."""
    from sre_repro.cli import main

    tmp = _files(tmp_path)
    work = tmp_path / "work"
    (work / "simcse" / "0e31b568a0089c7a").mkdir(parents=True)
    (work / "simcse" / "0e31b568a0089c7a" / "last.pt").write_bytes(b"a checkpoint")
    monkeypatch.setenv("SRE_REPRO_WORK", str(work))
    state = lambda: {p: (p.stat().st_mtime_ns, p.stat().st_size)  # noqa: E731
                     for p in [*(REPO_ROOT / "results").rglob("*.json"), *work.rglob("*.pt")]}
    before = state()
    if any(a in ("device=cuda", "precision=fp16") for a in args):
        import torch
        if torch.cuda.is_available():
            pytest.skip("a GPU is visible here: these settings are valid")
    capfd.readouterr()
    assert main([a.replace("{tmp}", str(tmp)) for a in args]) == 2
    out, err = capfd.readouterr()  # file descriptors: what C code writes straight to stderr counts too
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1 and lines[0].startswith("sre-repro: error:") and message in lines[0], lines
    assert state() == before


def test_papermill_with_an_unknown_parameter_stops_the_chapter_with_one_line(tmp_path):
    """`-p scal smoke` (a typo): papermill only warns; the chapter stops before computing anything, and the
    notebook's error is the one line (papermill's own traceback of its CLI comes before it)."""
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "papermill"), "--no-progress-bar", "-k", "python3",
                          "notebooks/verdict_board.ipynb", str(tmp_path / "out.ipynb"), "-p", "scal", "smoke"],
                         capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert out.returncode != 0
    notebook_part = out.stderr.split('Exception encountered at "In [3]":')[1].strip().splitlines()
    assert notebook_part == ["sre-repro: error: unknown parameter 'scal' for notebooks/verdict_board.ipynb: the known "
                             "ones are scale (papermill --help-notebook notebooks/verdict_board.ipynb)"]


def test_the_cli_says_when_it_serves_a_result_from_the_cache(capsys):
    """A cache hit used to print exactly what a fresh computation prints."""
    from sre_repro.cli import main

    assert main(["eval", "--model", "glove", "--tasks", "STS12"]) == 0
    first = capsys.readouterr()
    assert main(["eval", "--model", "glove", "--tasks", "STS12"]) == 0
    second = capsys.readouterr()
    assert "cached" not in first.err and second.out == first.out == "STS12 48.11  avg 48.11\n"
    (line,) = second.err.strip().splitlines()
    assert line.startswith("sre-repro: cached: ") and line.endswith(".json") and "/eval/" in line


def test_train_without_method_says_it_trains_simcse(capsys):
    """It trained SimCSE without a word; the notice comes before anything is computed (here: a bad data dir)."""
    from sre_repro.cli import main

    assert main(["train", "--set", "scale=smoke", "--data-dir", "/no/such/data"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "sre-repro: no --method given: training simcse (the default)",
        "sre-repro: error: data dir /no/such/data (--data-dir) does not exist: pass --data-dir, set SRE_REPRO_DATA, "
        "or run `make data` to link ../shared/data to ./data"]


def test_train_help_lists_the_methods_and_the_defaults(capsys):
    from sre_repro.cli import build_parser, main

    with pytest.raises(SystemExit) as done:
        main(["train", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert done.value.code == 0 and "methods and their own knobs: byop (" in out and "simcse (temperature, pooler" in out
    assert "lr=3e-05" in out and "the cpu preset: model_name=sre-bert" in out
    # other commands do not build it (it imports every method)
    assert build_parser()._subparsers._group_actions[0].choices["train"].epilog is None


def test_an_error_closes_an_open_progress_bar_first():
    """So the error starts on its own line rather than after a bar's last frame."""
    from tqdm import tqdm

    from sre_repro.cli import _end_progress_bars

    bar = tqdm(total=10)
    bar.update(3)
    _end_progress_bars()
    assert bar not in getattr(tqdm, "_instances", set()) and bar.n == 3
