"""The training loop and the run store: determinism, resume, cache validity, and the failures of §7."""
import json
import time
import os

import pytest
import torch

from sre_repro import runs
from sre_repro.errors import SreError
from sre_repro.train import Interrupted, train

SMOKE = {"method": "simcse", "scale": "smoke"}


def _numbers(result):
    return result["metrics"]["sts"], [p["stsb_dev"] for p in result["dev_curve"]], [p["loss"] for p in result["dev_curve"]]


def test_smoke_run_records_everything(smoke_run):
    r = smoke_run
    assert r["steps"] == 6 and [p["step"] for p in r["dev_curve"]] == [3, 6]
    assert r["metrics"]["stsb_dev_best"] == max(p["stsb_dev"] for p in r["dev_curve"])
    assert set(r["metrics"]["sts"]) == {"STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness", "avg"}
    for key in ("config", "seed", "fingerprints", "source_tree", "config_hash", "versions", "hardware", "wall_seconds", "git_commit"):
        assert key in r
    assert {"alignment", "uniformity", "anisotropy"} <= set(r["dev_curve"][0])
    # the stored STS-B test cosines are the ones the STS-B score was computed from
    from sre_repro.data.sts import load_split
    from sre_repro.evaluate.sts import spearman100
    from sre_repro.evaluate.sts import evenly_spaced
    gold = evenly_spaced(load_split("STSBenchmark", "test"), r["config"]["eval_max_pairs"]).gold
    assert len(r["metrics"]["stsb_test_cosine"]) == len(gold) == 100  # smoke scores 100 evenly spaced pairs
    assert spearman100(r["metrics"]["stsb_test_cosine"], gold) == pytest.approx(r["metrics"]["sts"]["STSBenchmark"], abs=1e-3)
    probes = r["metrics"]["token_importance"]["cls_attention"]
    assert probes[0][0][0] == "[CLS]" and all(sum(w for _, w in row) == pytest.approx(1, abs=1e-4) for row in probes)


def test_same_config_and_seed_give_identical_numbers(smoke_run, tmp_path):
    again = train(SMOKE, results_root=tmp_path / "r", work_root=tmp_path / "w")
    assert _numbers(again) == _numbers(smoke_run)
    other_seed = train({**SMOKE, "seed": 1}, results_root=tmp_path / "r", work_root=tmp_path / "w")
    assert _numbers(other_seed) != _numbers(smoke_run)


def test_interrupted_run_resumes_to_identical_numbers(smoke_run, tmp_path, caplog):
    caplog.set_level("INFO", logger="sre_repro")  # the notices the CLI prints on stderr
    kwargs = dict(results_root=tmp_path / "r", work_root=tmp_path / "w")
    with pytest.raises(Interrupted):
        train({**SMOKE, "checkpoint_steps": 2}, interrupt_at_step=4, **kwargs)
    (work,) = (tmp_path / "w" / "simcse").iterdir()
    before = torch.load(work / "last.pt", weights_only=False)["state"]["wall_seconds"]
    started = time.time()
    resumed = train({**SMOKE, "checkpoint_steps": 2}, **kwargs)  # restarts from the step-4 checkpoint
    assert _numbers(resumed) == _numbers(smoke_run)
    assert [m for m in caplog.messages if m.startswith("resuming")] == [
        f"resuming simcse from step 4 of 6 ({runs.shown_path(work / 'last.pt')})"]
    train({**SMOKE, "checkpoint_steps": 2}, **kwargs)
    assert caplog.messages[-1] == f"cached: {runs.shown_path(tmp_path / 'r' / 'simcse' / (work.name + '.json'))}"
    # the wall time counts the interrupted process's time as well as the resumed one's
    assert before > 0 and resumed["wall_seconds"] >= before + (time.time() - started) * 0.5


def test_an_unreadable_checkpoint_is_set_aside_and_the_run_starts_afresh(smoke_run, tmp_path, capsys):
    kwargs = dict(results_root=tmp_path / "r", work_root=tmp_path / "w")
    with pytest.raises(Interrupted):
        train({**SMOKE, "checkpoint_steps": 2}, interrupt_at_step=4, **kwargs)
    (work,) = (tmp_path / "w" / "simcse").iterdir()
    (work / "last.pt").write_bytes((work / "last.pt").read_bytes()[:1000])  # truncated, as after a full disk
    assert _numbers(train({**SMOKE, "checkpoint_steps": 2}, **kwargs)) == _numbers(smoke_run)
    assert "is unreadable: set aside as" in capsys.readouterr().err and list(work.glob("last.pt.*.set-aside"))


def test_an_unreadable_best_checkpoint_is_refused_in_one_line_and_the_next_request_retrains(smoke_run, tmp_path,
                                                                                              capsys):
    kwargs = dict(results_root=tmp_path / "r", work_root=tmp_path / "w")
    with pytest.raises(Interrupted):  # every step done and checkpointed, the record not yet written
        train({**SMOKE, "checkpoint_steps": 2}, interrupt_at_step=6, **kwargs)
    (work,) = (tmp_path / "w" / "simcse").iterdir()
    (work / "best.pt").write_bytes((work / "best.pt").read_bytes()[:500])
    with pytest.raises(SreError, match="best checkpoint of simcse run .* was unreadable .*: run the command again"):
        train({**SMOKE, "checkpoint_steps": 2}, **kwargs)
    assert not (work / "last.pt").exists() and len(list(work.glob("*.set-aside"))) == 2
    assert "is unreadable: set aside as" in capsys.readouterr().err
    assert _numbers(train({**SMOKE, "checkpoint_steps": 2}, **kwargs)) == _numbers(smoke_run)


def test_cache_hit_and_force(tmp_path, monkeypatch):
    kwargs = dict(results_root=tmp_path / "r", work_root=tmp_path / "w")
    first = train(SMOKE, **kwargs)
    from sre_repro.settings import readable_mode
    record_file = runs.run_path("simcse", first["config"], tmp_path / "r")
    assert record_file.stat().st_mode & 0o777 == readable_mode()  # 0644 under umask 022 (mkstemp gave 0600)
    monkeypatch.setattr("sre_repro.train._compute", None)  # any recomputation would now fail
    assert train(SMOKE, **kwargs)["metrics"] == first["metrics"]
    with pytest.raises(TypeError):
        train(SMOKE, force=True, **kwargs)


def test_a_corrupt_or_hand_edited_record_is_set_aside_said_and_recomputed(tmp_path, capsys):
    kwargs = dict(results_root=tmp_path / "r", work_root=tmp_path / "w")
    first = train(SMOKE, **kwargs)
    path = runs.run_path("simcse", first["config"], tmp_path / "r")
    path.write_text(path.read_text()[:100])  # truncated
    assert runs.read("simcse", first["config"], tmp_path / "r") is None
    assert "is not a readable JSON record: set aside as" in capsys.readouterr().err
    assert train(SMOKE, **kwargs)["metrics"]["sts"] == first["metrics"]["sts"]
    edited = json.loads(path.read_text())
    assert edited["digest"] == runs.content_digest(edited)
    edited["metrics"]["sts"]["avg"] = 99.9  # by hand: the digest no longer matches
    path.write_text(json.dumps(edited))
    assert runs.read("simcse", first["config"], tmp_path / "r") is None
    assert "does not match its digest (edited by hand or damaged): set aside as" in capsys.readouterr().err
    assert train(SMOKE, **kwargs)["metrics"]["sts"]["avg"] == first["metrics"]["sts"]["avg"] != 99.9
    assert len(list(path.parent.glob("*.set-aside"))) == 2 and len(list(path.parent.glob("*.json"))) == 1


def test_files_set_aside_within_one_second_are_all_kept(tmp_path, monkeypatch):
    """A set-aside is evidence: a second one in the same second gets a number instead of overwriting the first."""
    monkeypatch.setattr(time, "strftime", lambda fmt: "20261128T220537")
    path = tmp_path / "r.json"
    for text in ("first", "second", "third"):
        path.write_text(text)
        runs.move_aside(path)
    kept = sorted(tmp_path.glob("*.set-aside"))
    assert [f.name for f in kept] == ["r.json.20261128T220537-2.set-aside", "r.json.20261128T220537-3.set-aside",
                                      "r.json.20261128T220537.set-aside"]
    assert sorted(f.read_text() for f in kept) == ["first", "second", "third"] and not path.exists()
    assert runs.move_aside(path) is None  # already gone: nothing to move


def test_two_identical_runs_at_once_compute_once(tmp_path):
    """Two processes asking for the same run while its lock is held both wait; once it is free, one computes and
    the other serves its record: one computation, one record. The test holds the lock itself until both wait,
    so the overlap does not depend on how fast this machine trains (a fixed head start raced on a fast CPU)."""
    import fcntl
    import subprocess
    import sys

    from sre_repro.config import resolve

    env = {**os.environ, "SRE_REPRO_RESULTS": str(tmp_path / "r"), "SRE_REPRO_WORK": str(tmp_path / "w"),
           "OMP_NUM_THREADS": "1"}
    knobs = {"scale": "smoke", "max_steps": 12, "eval_steps": 6}
    lock = tmp_path / "w" / "locks" / f"simcse-{runs.config_hash(resolve(overrides={'method': 'simcse', **knobs}))}.lock"
    lock.parent.mkdir(parents=True)
    args = [sys.executable, "-m", "sre_repro", "train", *(a for k, v in knobs.items() for a in ("--set", f"{k}={v}")),
            "--format", "json"]
    logs = [tmp_path / f"err{i}.txt" for i in range(2)]
    with open(lock, "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write("the-test")
        held.flush()
        handles = [open(log, "w") for log in logs]
        procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=handle, text=True, env=env) for handle in handles]
        deadline = time.time() + 300
        while not all("waiting for process the-test" in log.read_text() for log in logs):
            assert time.time() < deadline and all(p.poll() is None for p in procs), [log.read_text() for log in logs]
            time.sleep(0.2)
        fcntl.flock(held, fcntl.LOCK_UN)
    outs = [p.communicate(timeout=600)[0] for p in procs]
    for handle in handles:
        handle.close()
    errs = [log.read_text() for log in logs]
    assert [p.returncode for p in procs] == [0, 0], errs
    assert sum("sre-repro: cached: " in err for err in errs) == 1, errs  # one computed, the other served its record
    assert outs[0].strip().splitlines()[-1] == outs[1].strip().splitlines()[-1]  # the same scores
    assert [p.stem for p in (tmp_path / "r" / "simcse").glob("*.json")] == [lock.stem.removeprefix("simcse-")]
    assert not list((tmp_path / "w").rglob("*.tmp"))


def test_interrupted_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "x.json"
    runs.write_json_atomic(path, {"a": 1})

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runs.json, "dump", crash)
    with pytest.raises(KeyboardInterrupt):
        runs.write_json_atomic(path, {"a": 2})
    assert json.loads(path.read_text()) == {"a": 1}
    assert os.listdir(tmp_path) == ["x.json"]


def test_stale_result_is_flagged_and_not_served_by_default(tmp_path, monkeypatch):
    kwargs = dict(results_root=tmp_path / "r", work_root=tmp_path / "w")
    first = train(SMOKE, **kwargs)
    monkeypatch.setattr(runs, "source_tree", lambda: "changed")  # unfingerprinted: valid only under its own source
    assert runs.read("simcse", first["config"], tmp_path / "r")["stale"] is True
    assert runs.lookup("simcse", first["config"], tmp_path / "r") is None
    assert runs.lookup("simcse", first["config"], tmp_path / "r", allow_stale=True)["metrics"] == first["metrics"]


def test_non_finite_loss_stops_with_a_clear_message(tmp_path, monkeypatch):
    from sre_repro.methods import simcse
    monkeypatch.setattr(simcse.SimCSE, "loss", lambda self, batch: {"loss": torch.tensor(float("nan"), requires_grad=True)})
    with pytest.raises(SreError, match=r"non-finite loss \(nan\) at step 1 .*lower lr"):
        train(SMOKE, results_root=tmp_path / "r", work_root=tmp_path / "w")
    assert not (tmp_path / "r").exists()


def test_empty_training_corpus(tmp_path, monkeypatch):
    from sre_repro.methods import simcse
    monkeypatch.setattr(simcse.SimCSE, "corpus", lambda self, data_dir=None: [])
    with pytest.raises(SreError, match="training corpus 'wiki1m' has 0 examples"):
        train(SMOKE, results_root=tmp_path / "r", work_root=tmp_path / "w")


def test_fp16_needs_a_gpu(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(SreError, match="fp16 needs a GPU"):
        train({**SMOKE, "precision": "fp16"}, results_root=tmp_path / "r", work_root=tmp_path / "w")


def test_model_errors():
    from sre_repro.encoder import load_encoder
    with pytest.raises(SreError, match="model path /no/such/model does not exist"):
        load_encoder("/no/such/model")
    with pytest.raises(SreError, match="not in the local HF cache and downloads are off"):
        load_encoder("bert-base-uncased")
    with pytest.raises(SreError, match="unknown pooler 'first'"):
        load_encoder("tiny-random", "first")


def test_download_refuses_when_offline(tmp_path, monkeypatch):
    from sre_repro.data.download import download
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SreError, match="downloads are off"):
        download(tmp_path)
    assert not any(tmp_path.iterdir())


def test_committed_smoke_run_reproduces_its_stored_numbers(tmp_path):
    """The guard that makes a refactor safe: the committed smoke record must come out again. Not bit for bit:
    CPUs with other vector units (CI's) sum floats in another order, which moved the losses by 2e-7 and the
    STS scores by up to 0.07 points; a refactor that changes what is computed moves them far more."""
    from sre_repro.config import resolve
    cfg = resolve(overrides=SMOKE)
    stored = runs.read("simcse", cfg, runs.REPO_ROOT / "results")
    assert stored is not None, "results/ lacks the smoke record: run `sre-repro train --set scale=smoke` into results/"
    assert not stored["stale"], "library code changed since results/ was computed: refresh the results"
    fresh = train(SMOKE, results_root=tmp_path / "r", work_root=tmp_path / "w")
    (sts, dev, losses), (sts_stored, dev_stored, losses_stored) = _numbers(fresh), _numbers(stored)
    assert sts == pytest.approx(sts_stored, abs=0.25)
    assert dev == pytest.approx(dev_stored, abs=0.25)
    assert losses == pytest.approx(losses_stored, abs=1e-4)


def test_a_run_from_replaced_weights_is_stale(tmp_path):
    from safetensors.torch import save_file
    model = tmp_path / "plm"
    model.mkdir()
    (model / "config.json").write_text("{}")
    save_file({"w": torch.zeros(3)}, model / "model.safetensors")
    (model / "config.json").write_text("{}")  # a model folder (one without config.json is refused as a model)
    cfg = {"model_name": str(model), "pooler": "avg"}
    runs.save("eval", cfg, {"metrics": {}}, tmp_path / "r")
    assert runs.read("eval", cfg, tmp_path / "r")["stale"] is False
    save_file({"w": torch.ones(3)}, model / "model.safetensors")  # the model is re-pretrained in place
    assert runs.read("eval", cfg, tmp_path / "r")["stale"] is True
    assert runs.lookup("eval", cfg, tmp_path / "r") is None


def test_a_run_whose_start_now_resolves_to_another_run_is_stale():
    """A run's key is its own config: supervised PaSeR's start (or RankCSE's teacher) resolves under a recipe that can
    change (a cap moving) without changing the key. The record says which runs it started from and when they were
    computed; one that says otherwise, or (older than that field) one whose start was computed after it, is stale."""
    from sre_repro import train as trainer
    from sre_repro.config import resolve

    cfg = resolve(overrides={"method": "rankcse", "scale": "smoke", "teachers": "simcse:7"})
    teacher_cfg = resolve(overrides={"method": "simcse", "scale": "smoke", "seed": 7})
    key = runs.config_hash(teacher_cfg)
    assert trainer.starts_from(cfg) == {"teacher 1": {"config_hash": key, "created": None}}
    assert trainer.starts_missing(cfg) == ["teacher 1"] and trainer.starts_outdated(cfg, {"created": "2000"}) == []
    assert trainer.starts_from(resolve(overrides=SMOKE)) == {}
    created = runs.save("simcse", teacher_cfg, {"metrics": {}})["created"]
    assert trainer.starts_missing(cfg) == [] and trainer.starts_from(cfg)["teacher 1"]["created"] == created
    same = {"starts_from": {"teacher 1": {"config_hash": key, "created": created}}}
    assert trainer.starts_outdated(cfg, same) == []
    assert trainer.starts_outdated(cfg, {"starts_from": {"teacher 1": {"config_hash": "0" * 16, "created": created}}}) == [
        f"its start (teacher 1 run) is now another run ({key})"]
    recomputed = {"starts_from": {"teacher 1": {"config_hash": key, "created": "2000-01-01T00:00:00Z"}}}
    assert trainer.starts_outdated(cfg, recomputed) == [f"its start (teacher 1 run) was computed after it ({created})"]
    # a record older than the field: judged by when its start was computed
    assert trainer.starts_outdated(cfg, {"created": "9999-01-01T00:00:00Z"}) == []
    assert trainer.starts_outdated(cfg, {"created": "2000-01-01T00:00:00Z"}) == [
        f"its start (teacher 1 run) was computed after it ({created})"]
    # the cache serves it as stale where stale records may be served, else recomputes it (None here)
    runs.save("rankcse", cfg, {"metrics": {}, **recomputed})
    assert trainer._cached(cfg, None, force=False, allow_stale=True)["stale"] is True
    assert runs.SERVED_STALE == [f"rankcse/{runs.config_hash(cfg)}"]
    assert trainer._cached(cfg, None, force=False, allow_stale=False) is None
    runs.save("rankcse", cfg, {"metrics": {}, **same})
    assert trainer._cached(cfg, None, force=False, allow_stale=False)["stale"] is False
    # a checkpoint resumes only from the same starts
    assert trainer.checkpoint_origin("rankcse", cfg)["starts_from"] == {"teacher 1": key}
    assert "starts_from" not in trainer.checkpoint_origin("simcse", resolve(overrides=SMOKE))


def test_an_evaluation_computed_before_its_runs_record_is_stale(monkeypatch):
    """A kept-weight evaluation is keyed by its run's config: the run recomputed under the same key (its start
    changed, or --force) leaves an evaluation of the old weights behind, which then reads stale."""
    from sre_repro.config import resolve
    from sre_repro.evaluate import cached as evaluations

    run_cfg = resolve(overrides=SMOKE)
    runs.save("simcse", run_cfg, {"metrics": {}})
    key = {"run": run_cfg, "model_name": run_cfg["model_name"], "poolers": ["avg"]}
    older = runs.save("poolers", key, {"metrics": {"avg": 1.0}})
    assert evaluations._before_its_run(key, older) == []
    run_created = runs.read("simcse", run_cfg)["created"]
    assert evaluations._before_its_run(key, {**older, "created": "2000-01-01T00:00:00Z"}) == [
        f"computed before its run's record ({run_created})"]
    assert evaluations._before_its_run({"model_name": "x"}, older) == []  # not an evaluation of a run
    path = runs.run_path("poolers", key)
    record = json.loads(path.read_text())
    record["created"] = "2000-01-01T00:00:00Z"
    record["digest"] = runs.content_digest(record)
    path.write_text(json.dumps(record))
    served = evaluations.cached("poolers", key, allow_stale=True)
    assert served["stale"] is True and served["metrics"] == {"avg": 1.0}
    assert runs.SERVED_STALE == [f"poolers/{runs.config_hash(key)}"]
    # where stale records may not be served, it is recomputed
    monkeypatch.setitem(evaluations.COMPUTE, "poolers", lambda cfg, data_dir: {"avg": 2.0})
    recomputed = evaluations.cached("poolers", key)
    assert recomputed["metrics"] == {"avg": 2.0}
    assert recomputed["weights"] is None  # no kept weights on this machine: none named, and none trained to name them


def test_no_committed_run_started_from_a_run_its_config_no_longer_resolves_to(monkeypatch):
    """After a recipe change (a pending cap moving into the converged recipe), the runs that start from the method's
    runs must be recomputed too: the committed store holds none whose start is outdated, and every record that
    names its starts (newer than that field) finds them; older ones whose starts were deleted cannot be checked."""
    from sre_repro.train import starts_missing, starts_outdated

    monkeypatch.setenv("SRE_REPRO_RESULTS", str(runs.REPO_ROOT / "results"))  # read only
    outdated, unnamed_missing, dependents = {}, [], 0
    for path in runs.record_paths():
        record = json.loads(path.read_text())
        cfg = record.get("config", {})
        if cfg.get("method") == path.parent.name and cfg["method"] in ("rankcse", "paser") and cfg.get("supervised", True):
            dependents += 1
            if why := starts_outdated(cfg, record):
                outdated[path.name] = why
            if starts_missing(cfg):
                assert "starts_from" not in record, f"{path.name}: its starts are not in the store"
                unnamed_missing.append(path.name)
    assert dependents >= 10 and not outdated, outdated
    assert len(unnamed_missing) <= 3, unnamed_missing  # the recipe study's RankCSE runs, whose teachers were deleted


def test_a_record_of_a_local_model_without_fingerprint_is_stale(tmp_path):
    """Records from before fingerprints were kept cannot show which weights they saw (this served raw
    sre-bert scores of the replaced CPU model once the GPU one landed)."""
    from safetensors.torch import save_file
    model = tmp_path / "plm"
    model.mkdir()
    save_file({"w": torch.zeros(3)}, model / "model.safetensors")
    (model / "config.json").write_text("{}")  # a model folder (one without config.json is refused as a model)
    cfg = {"model_name": str(model), "pooler": "avg"}
    path = runs.save("eval", cfg, {"metrics": {}}, tmp_path / "r")["config_hash"]
    record = json.loads((tmp_path / "r" / "eval" / f"{path}.json").read_text())
    record.pop("model_fingerprint")
    assert runs.is_stale(record) is True
    hub = {**record, "config": {"model_name": "bert-base-uncased"}}  # hub names have no fingerprint to check
    assert runs.is_stale(hub) is False


def test_a_checkpoint_from_other_code_is_not_resumed(tmp_path, monkeypatch, capsys):
    kwargs = dict(results_root=tmp_path / "r", work_root=tmp_path / "w")
    with pytest.raises(Interrupted):
        train({**SMOKE, "checkpoint_steps": 2}, interrupt_at_step=4, **kwargs)
    monkeypatch.setattr(runs, "source_tree", lambda: "changed")
    result = train({**SMOKE, "checkpoint_steps": 2}, **kwargs)
    assert "made by other code or weights; starting simcse afresh" in capsys.readouterr().err
    assert [p["step"] for p in result["dev_curve"]] == [3, 6] and result["source_tree"] == "changed"


def test_kept_weights_come_from_the_run_s_own_training_when_this_machine_has_it(data_dir, monkeypatch):
    """kept_checkpoint copies a finished run's best.pt (no second training or final evaluation); without a current
    record, or with checkpoints that are not the record's, it trains (here: a stand-in that records the call)."""
    import sre_repro.train as train_module
    from sre_repro.train import kept_checkpoint

    overrides = {"method": "simcse", "scale": "smoke", "seed": 42}
    record = train(overrides, data_dir=data_dir)  # into the test's store: record and work/<kind>/<config>/
    work = runs.work_dir() / "simcse" / record["config_hash"]
    retrained = []
    monkeypatch.setattr(train_module, "train", lambda *a, **k: retrained.append(1) or record)
    saved = kept_checkpoint(overrides, data_dir)
    assert retrained == [] and saved.read_bytes() == (work / "best.pt").read_bytes()
    assert train_module.latest_kept_weights(overrides) == train_module.kept_weights(saved)  # what an evaluation records
    assert train_module.kept_weights(saved) == {"same": True, "weights": {"best_step": record["metrics"]["best_step"],
                                                 "dev": record["metrics"]["stsb_dev_best"], "hardware": "CPU"},
                                                "record": {"best_step": record["metrics"]["best_step"],
                                                           "dev": record["metrics"]["stsb_dev_best"], "hardware": "CPU"}}

    saved.unlink()
    state = torch.load(work / "last.pt", weights_only=False)
    state["state"]["best_step"] += 1  # checkpoints that did not make the record
    torch.save(state, work / "last.pt")
    kept_checkpoint(overrides, data_dir)
    assert retrained == [1]
    saved.unlink()
    runs.run_path("simcse", record["config"]).unlink()  # no record: nothing says the checkpoints are current
    kept_checkpoint(overrides, data_dir)
    assert retrained == [1, 1]


def test_kept_weights_follow_the_best_pt_they_came_from_and_a_corrupt_one_is_refused(data_dir, capsys):
    """A copy under work/models/ is keyed by its best.pt's content: a retrained run's new best.pt gets a new copy
    (export never serves an older one); an unreadable copy is set aside with the run's checkpoints, the request
    is refused in one line, and the next request retrains."""
    from sre_repro.errors import SreError
    from sre_repro.train import kept_checkpoint, trained_method

    overrides = {"method": "simcse", "scale": "smoke", "seed": 43}
    record = train(overrides, data_dir=data_dir)
    work = runs.work_dir() / "simcse" / record["config_hash"]
    first = kept_checkpoint(overrides, data_dir)
    weights = torch.load(work / "best.pt", weights_only=False)
    weights[next(iter(weights))] = weights[next(iter(weights))] + 1.0  # as if retrained to other weights
    torch.save(weights, work / "best.pt")
    second = kept_checkpoint(overrides, data_dir)
    assert second != first and second.read_bytes() == (work / "best.pt").read_bytes()

    (work / "best.pt").write_bytes((work / "best.pt").read_bytes()[:1000])  # truncated
    third = kept_checkpoint(overrides, data_dir)
    with pytest.raises(SreError, match="are unreadable: set aside with the run's checkpoints; run the command again"):
        trained_method(overrides, "cpu", data_dir)
    assert not first.exists() and not second.exists() and not third.exists()  # every copy of the run: set aside
    assert not (work / "best.pt").exists() and not (work / "last.pt").exists()
    assert len(list(work.glob("*.set-aside"))) == 2
    method = trained_method(overrides, "cpu", data_dir)  # retrained once for its weights: deterministic
    err = capsys.readouterr().err
    assert "training simcse seed 43 once for its weights" in err and "sibling" not in err
    assert method.kept_file.name == first.name and method.kept_file.exists()  # the same weights as the first time
    assert method.kept_weights["same"] and method.kept_weights["weights"]["dev"] == record["metrics"]["stsb_dev_best"]


def test_a_retrain_that_keeps_another_step_or_score_is_a_sibling_named_with_both_numbers():
    """weights_provenance compares the training that made the weights with the run's record: the same kept step
    and dev score are the record's weights; another step, or a score off by more than rounding, is a sibling."""
    from sre_repro.train import describe_weights, weights_provenance

    def rec(step, dev, cuda=None):
        return {"metrics": {"best_step": step, "stsb_dev_best": dev}, "hardware": {"cuda": cuda} if cuda else {}}

    record = rec(460, 67.33)
    assert weights_provenance(rec(460, 67.33 + 1e-9), record)["same"]
    assert weights_provenance(record, record)["same"] and weights_provenance(rec(460, 67.0), None)["same"]
    sibling = weights_provenance(rec(460, 67.41), rec(460, 67.33, "NVIDIA H200"))
    assert not sibling["same"] and not weights_provenance(rec(480, 67.33), record)["same"]
    assert describe_weights(sibling) == ("a retrain on CPU, a sibling of the record's weights (kept STS-B dev 67.41 at "
                                         "step 460, the record 67.33 at step 460, on NVIDIA H200)")
    assert describe_weights(record and weights_provenance(record, record)) == "the run's own kept weights"
    assert describe_weights(None).startswith("weights not recorded")
    mlm = {"metrics": {"best_step": 300, "mlm_accuracy_best": 0.41}, "hardware": {}}  # selects on its own metric
    assert weights_provenance(mlm, mlm)["weights"]["dev"] == 0.41
    assert describe_weights({"same": False, "weights": {"best_step": 300, "dev": None, "hardware": "CPU"},
                             "record": {"best_step": 280, "dev": None, "hardware": "CPU"}}) == (
        "a retrain on CPU, a sibling of the record's weights (kept step 300, the record's 280, on CPU)")


def test_the_read_log_names_exactly_the_records_looked_up(tmp_path, monkeypatch):
    """scripts/unread_results.py deletes what the log does not name, so a record that is read must be in it."""
    kept, other = {"model_name": "glove", "pooler": "avg"}, {"model_name": "glove", "pooler": "cls"}
    for cfg in (kept, other):
        runs.save("eval", cfg, {"metrics": {}}, tmp_path / "r")
    monkeypatch.setenv("SRE_REPRO_READ_LOG", str(tmp_path / "read.log"))
    assert runs.lookup("eval", kept, tmp_path / "r") is not None
    assert runs.lookup("eval", {"model_name": "glove", "pooler": "max"}, tmp_path / "r") is None  # a miss is logged too
    logged = (tmp_path / "read.log").read_text().split()
    assert logged == [str(runs.run_path("eval", c, tmp_path / "r").resolve()) for c in (kept, {"model_name": "glove", "pooler": "max"})]
    assert str(runs.run_path("eval", other, tmp_path / "r").resolve()) not in logged
