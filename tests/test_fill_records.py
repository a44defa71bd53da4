"""scripts/fill_records.py plans a cached run again when the evaluations of its kept weights (its checks) are missing."""
import importlib.util

from conftest import ROOT


def _script():
    spec = importlib.util.spec_from_file_location("fill_records", ROOT / "scripts" / "fill_records.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_cached_runs_missing_check_is_found_without_computing_it_and_a_cached_one_is_not(monkeypatch):
    from sre_repro.evaluate import cached
    from sre_repro.evaluate.model import eval_config

    fill = _script()
    cfg = eval_config(model_name="tiny-random", tasks="stsb_dev", max_pairs=8)
    calls = []
    monkeypatch.setitem(fill.CHECKS, "dev", lambda record: calls.append(1) or cached.cached("eval", cfg))
    computations = dict(cached.COMPUTE)
    assert fill._missing_checks({}, ["dev"]) == ["dev"]
    assert cached.COMPUTE == computations  # the real computations are back
    assert not list(cached.runs.results_dir().glob("eval/*.json"))  # nothing was computed or saved
    record = cached.cached("eval", cfg)  # now the check's evaluation is in the cache
    assert fill._missing_checks({}, ["dev"]) == [] and len(calls) == 2
    assert cached.cached("eval", cfg)["metrics"] == record["metrics"]


def test_every_check_asks_for_a_fresh_evaluation_not_a_stale_one(monkeypatch):
    """A recomputed run (supervised PaSeR after its start's cap moved) keeps its key, so its old checks are still in the
    store, stale: a lane that served them would report the old weights' numbers as the new run's."""
    from sre_repro.chapters import paser, pt_bert, slt_fai

    fill, asked = _script(), []

    def evaluation(*args, **kwargs):  # the last (or only) evaluation a check asks for
        asked.append(kwargs.get("allow_stale", True))
        raise StopIteration

    def earlier_evaluation(*args, **kwargs):  # one a check asks for before its last
        asked.append(kwargs.get("allow_stale", True))

    for module, name in ((paser, "decoder_check"), (paser, "retrieval"), (paser, "pooler_scores"), (slt_fai, "discriminator_check"),
                         (pt_bert, "h_test")):
        monkeypatch.setattr(module, name, evaluation)
    for name in ("hard_subset", "length_control"):  # PT-BERT's check asks for three evaluations
        monkeypatch.setattr(pt_bert, name, earlier_evaluation)
    for check in fill.CHECKS.values():
        try:
            check({})
        except StopIteration:
            pass
    assert asked == [False] * (len(fill.CHECKS) + 2)
