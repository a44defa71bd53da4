"""Verdicts against direct computations: the t-interval of a mean difference and the F-test of variances."""
import numpy as np
import pytest
from scipy import stats

from sre_repro import report


def test_verdict_uses_the_t_interval_of_the_mean():
    diffs = [1.0, 2.0, 4.0]
    half = stats.t.ppf(0.975, 2) * np.std(diffs, ddof=1) / np.sqrt(3)  # 4.303 * 1.528 / 1.732 = 3.80
    out = report.verdict(diffs, "claim")
    assert out["mean difference"] == pytest.approx(2.33, abs=0.005)
    assert out["95% interval"] == f"[{7 / 3 - half:.2f}, {7 / 3 + half:.2f}]" == "[-1.46, 6.13]"
    assert out["verdict"].startswith("not shown")
    assert report.verdict([1.0, 1.1, 0.9], "c")["verdict"] == "holds at this scale"
    assert report.verdict([-1.0, -1.1, -0.9], "c")["verdict"] == "reversed at this scale"
    assert report.verdict([3.0], "c")["verdict"] == "not tested (one seed)"
    # a tiny but consistent difference (RankCSE +- BYOP at cpu scale) is no effect, not "reversed"
    assert report.verdict([-0.004, -0.003, -0.005], "c")["verdict"].startswith("no effect")
    assert report.verdict([-0.04, -0.06, -0.05], "c")["verdict"] == "reversed at this scale"  # interval reaches -0.07


def test_seed_table_shows_a_spread_only_where_there_are_seeds():
    def run(seed, avg):
        return {"seed": seed, "metrics": {"sts": {task: avg for task in report.COLUMNS}}}

    table = report.seed_table({"three": [run(1, 50.0), run(2, 52.0), run(3, 54.0)], "one": [run(1, 51.0)]})
    assert table.loc["three"].iloc[0] == "52.00 ± 2.00" and table.loc["three", "seeds"] == "1, 2, 3"
    assert table.loc["one"].iloc[0] == "51.00" and table.loc["one", "seeds"] == "1"


def test_transfer_table_lays_out_accuracies_and_their_mean():
    record = {"metrics": {"TREC": {"acc": 80.0, "C": 1.0}, "MRPC": {"acc": 70.0, "n": 1725}, "avg": 75.0}}
    other = {"metrics": {"TREC": {"acc": 90.5}, "MRPC": {"acc": 60.0}, "avg": 75.25}}
    table = report.transfer_table({"PLM avg": record, "SimCSE": other})
    assert list(table.columns) == ["TREC", "MRPC", "Avg."]
    assert table.loc["SimCSE"].tolist() == [90.5, 60.0, 75.25]
    assert table.loc["PLM avg", "Avg."] == record["metrics"]["avg"]


def test_banner_names_each_methods_poolers_and_collapse_is_flagged_in_verdicts():
    from sre_repro.report import COLLAPSE_ANISOTROPY, flag_collapsed, scale_banner
    cfg = {"method": "sarcse", "max_steps": 100, "model_name": "sre-bert", "train_data": "wiki1m", "batch_size": 64,
           "max_len": 32, "lr": 1e-4, "head_lr": 1e-3, "precision": "fp32", "eval_pooler": "avg"}
    simcse = {**cfg, "method": "simcse", "pooler": "avg", "head_lr": 0.0}
    assert "pooler: Z (SARCSE's CNN) in training, Z (SARCSE's CNN) at test |" in scale_banner("cpu", cfg, [42])
    assert "a fixed budget, no stopping rule" in scale_banner("cpu", {**cfg, "patience": 0, "eval_steps": 20})
    ruled = scale_banner("cpu", {**cfg, "patience": 10, "eval_steps": 20, "min_delta": 0.0})
    assert "stops when 10 evaluations (every 20 steps) gain no more than 0 on STS-B dev" in ruled and "fixed" not in ruled
    rule = {"patience": 10, "eval_steps": 20, "min_delta": 0.0}
    mixed = scale_banner("cpu", {**cfg, **rule}, also=[{**simcse, **rule, "patience": 40, "eval_steps": 5}])
    assert ("stops when sarcse 10 evaluations (every 20 steps); simcse 40 evaluations (every 5 steps), gain no more "
            "than 0 on STS-B dev") in mixed
    assert "stops when 10 evaluations (every 20 steps) gain" in scale_banner("cpu", {**cfg, **rule}, also=[{**simcse, **rule}])
    both = scale_banner("cpu", cfg, [42], also=[simcse, simcse])
    assert "pooler: sarcse Z (SARCSE's CNN) in training, Z (SARCSE's CNN) at test; simcse avg in training, avg at test" in both
    assert "100 steps x batch 64, max_len 32, lr 0.0001, added modules" in both  # shared values once
    # a table of methods with their own caps and lengths names each method's
    longer = scale_banner("cpu", {**cfg, "max_steps": 1200, "max_len": 64}, [42], also=[simcse])
    assert "sarcse 1200 steps, simcse 100 steps x batch 64, max_len sarcse 64, simcse 32," in longer
    assert "sarcse 1 epoch(s), simcse 100 steps x batch" in scale_banner("cpu", {**cfg, "max_steps": None, "epochs": 1}, also=[simcse])
    runs = [{"seed": s, "metrics": {"geometry": {"anisotropy": a}}} for s, a in ((42, COLLAPSE_ANISOTROPY + 0.01), (43, 0.3))]
    claim = {"claim": "x", "verdict": "holds at this scale"}
    assert flag_collapsed(claim, runs)["verdict"] == "holds at this scale; rests on 1 COLLAPSED run(s) (seed 42)"
    assert flag_collapsed(claim, runs[1:]) == claim


def test_paper_effect_puts_the_papers_gain_beside_ours():
    from sre_repro.report import paper_effect, verdict
    ours = [1.0, 2.0, 3.0]  # mean 2, t(2) = 4.303 half-width 4.303 * 1 / sqrt(3) = 2.484
    row = paper_effect(verdict(ours, "A beats B"), 78.09 - 76.57, [42, 43, 44])
    assert list(row)[:2] == ["claim", "paper effect"] and row["paper effect"] == 1.52
    assert row["mean difference"] == 2.0 and row["95% interval"] == "[-0.48, 4.48]" and row["seeds"] == "42, 43, 44"
    assert paper_effect(verdict(ours, "x"), None, [42])["paper effect"] is None


def test_curve_differences_are_the_reference_minus_the_run_at_shared_steps():
    reference = {"dev_curve": [{"step": 20, "alignment": 1.0}, {"step": 40, "alignment": 2.0}, {"step": 60, "alignment": 3.0}]}
    run = {"dev_curve": [{"step": 40, "alignment": 1.5}, {"step": 20, "alignment": 1.25}, {"step": 80, "alignment": 9.0}]}
    assert report.curve_differences(run, reference, "alignment").tolist() == [0.5, -0.25]  # run's order; 80 unshared
    with pytest.raises(ValueError, match="share no evaluation step"):
        report.curve_differences({"dev_curve": [{"step": 5, "alignment": 1.0}]}, reference, "alignment")

