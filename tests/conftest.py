import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["SRE_REPRO_PROGRESS"] = "0"


@pytest.fixture(scope="session")
def data_dir():
    from sre_repro.data.paths import resolve_data_dir
    return resolve_data_dir(os.environ.get("SRE_REPRO_DATA") or ROOT / "data")


@pytest.fixture(autouse=True)
def isolated_store(tmp_path_factory, monkeypatch, data_dir):
    """Every test writes runs and checkpoints to its own temporary store, never to results/."""
    base = tmp_path_factory.mktemp("store")
    monkeypatch.setenv("SRE_REPRO_RESULTS", str(base / "results"))
    monkeypatch.setenv("SRE_REPRO_WORK", str(base / "work"))
    monkeypatch.setenv("SRE_REPRO_DATA", str(data_dir))
    from sre_repro import config, runs
    monkeypatch.setattr(runs, "SERVED_STALE", [])  # which stale records this test served, for its verdicts alone
    monkeypatch.setattr(config, "_QUICK", [False])
    monkeypatch.setattr(config, "_CPU_RECIPE", ["converged"])  # a chapter's recipe put in force stays in its test


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory, data_dir):
    """One smoke-scale SimCSE run, shared by the tests that only read it."""
    from sre_repro.train import train
    base = tmp_path_factory.mktemp("shared_run")
    return train({"method": "simcse", "scale": "smoke"}, data_dir=data_dir, results_root=base / "r",
                 work_root=base / "w")
