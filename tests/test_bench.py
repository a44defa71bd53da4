"""The benchmark's bookkeeping, with the timed work replaced by stand-ins (the real run takes minutes)."""
import json

from sre_repro import bench


def test_only_creates_a_missing_report_and_keeps_the_other_sections(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "wiki1m", lambda data_dir=None: [])
    monkeypatch.setattr(bench, "training_peer", lambda sentences, quick=False: {"rows": []})
    out = tmp_path / "new.json"
    bench.main(out=str(out), only="peer")
    assert json.loads(out.read_text()) == {"peer": {"rows": []}}
    out.write_text(json.dumps({"gemm": [1], "peer": {"rows": [0]}}))
    bench.main(out=str(out), only="peer")
    assert json.loads(out.read_text()) == {"gemm": [1], "peer": {"rows": []}}


def test_the_peer_comparison_alternates_one_step_of_each(monkeypatch):
    order, clock = [], iter(range(100))
    monkeypatch.setattr(bench, "has_bf16_units", lambda: False)
    monkeypatch.setattr(bench.time, "perf_counter", lambda: next(clock))
    monkeypatch.setattr(bench, "simcse_step", lambda *args, **kwargs: lambda: order.append("ours"))

    def peer(model, precision, sentences, steps, between=None):
        for _ in range(steps + 2):  # two warm-up steps, then the timed ones
            order.append("peer")
            between()
        return {"step_s": 2.0}

    monkeypatch.setattr(bench, "sentence_transformers_steps", peer)
    result = bench.training_peer([], quick=True)
    assert order == ["peer", "ours"] * 5
    assert result["rows"] == [{"precision": "fp32", "ours_step_s": 1, "peer_step_s": 2.0, "ours_over_peer": 0.5,
                               "steps_timed": 3}]
