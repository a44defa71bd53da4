"""A claim's verdict row (sre_repro/claims.py) against hand computations: every claim type, the power word, and
the rows that must not carry a verdict (a flagged run, an unengaged component, one seed)."""
import numpy as np
import pytest
from scipy import stats

from sre_repro import protocol
from sre_repro import claims
from sre_repro.claims import Claim, judge, left_the_plm, run_flag

BEATS = Claim("x_beats_y", "X beats Y", "superiority", "X - Y, average STS", paper_effect=1.0, components=("decoder",))


def _run(seed, curve=(50.0, 52.0, 51.0, 50.5, 50.0), cap=100, patience=3, dev_best=None):
    points = [{"step": 20 * (i + 1), "stsb_dev": v} for i, v in enumerate(curve)]
    best = max(points, key=lambda p: p["stsb_dev"])
    conv = protocol.convergence(points, best["step"], cap, patience, 0.1)
    return {"seed": seed, "config": {"max_steps": cap, "patience": patience, "min_delta": 0.1},
            "steps": points[-1]["step"], "dev_curve": points,
            "convergence": conv, "metrics": {"best_step": best["step"], "stsb_dev_best": dev_best or best["stsb_dev"]}}


def test_superiority_row_equals_a_hand_t_interval_and_its_detectable_effect():
    d = np.array([1.2, 0.8, 1.5, 1.1, 0.9])
    row = judge(BEATS, d, [_run(s) for s in range(5)], {"decoder": (True, "fell")})
    half = stats.t.ppf(0.975, 4) * d.std(ddof=1) / np.sqrt(5)
    assert row["interval"] == f"[{d.mean() - half:.2f}, {d.mean() + half:.2f}]" and row["verdict"] == "holds"
    assert row["detectable"] == pytest.approx(protocol.detectable_effect(d.std(ddof=1), 5), abs=0.005)
    assert row["n seeds"] == 5 and row["seeds"] == "0, 1, 2, 3, 4" and row["type"] == "superiority"


def test_an_interval_across_zero_below_the_papers_effect_is_underpowered_else_not_shown():
    d = [3.0, -2.0, 1.0]  # sd 2.5: three seeds detect only effects of several points
    assert judge(BEATS, d, [_run(s) for s in range(3)], {"decoder": (True, "")})["verdict"] == "underpowered"
    big = Claim("big", "X beats Y by a lot", "superiority", "X - Y", paper_effect=50.0)
    assert judge(big, d, [_run(s) for s in range(3)])["verdict"] == "not shown"


def test_no_verdict_rests_on_a_flagged_run_an_idle_component_or_one_seed():
    rising = _run(43, curve=(50.0, 51.0, 52.0, 53.0, 54.0), cap=100)
    assert judge(BEATS, [1.0, 2.0], [_run(42), rising])["verdict"] == "not tested: still improving at the cap (seed 43)"
    first = _run(44, curve=(55.0, 50.0, 49.0, 48.0))
    assert judge(BEATS, [1.0, 2.0], [_run(42), first])["verdict"] == "not tested: kept its first evaluation (seed 44)"
    idle = {"decoder": protocol.engaged("reconstruction", first=10.0, kept=9.5, baseline=7.0)}
    assert judge(BEATS, [1.0, 2.0, 1.5], [_run(s) for s in range(3)], idle)["verdict"].startswith(
        "not tested: decoder did not engage (fell 5.0% (less than the 10% asked)")
    assert judge(BEATS, [1.0, 2.0, 1.5], [_run(s) for s in range(3)])["verdict"] == "not tested: no evidence that decoder engaged"
    # every component that did not engage is named, not only the first
    both = Claim("both", "X with both parts beats Y", "superiority", "X - Y", paper_effect=1.0,
                 components=("decoder", "critic"))
    two_idle = {"decoder": (False, "fell 5%"), "critic": (False, "ROC AUC 0.52")}
    assert judge(both, [1.0, 2.0, 1.5], [_run(s) for s in range(3)], two_idle)["verdict"] == (
        "not tested: decoder did not engage (fell 5%); critic did not engage (ROC AUC 0.52)")
    assert judge(both, [1.0, 2.0, 1.5], [_run(s) for s in range(3)])["verdict"] == (
        "not tested: no evidence that decoder or critic engaged")
    assert judge(BEATS, [1.0], [_run(42)], {"decoder": (True, "")})["verdict"] == "one seed: difference shown, no verdict"


def test_a_fixed_budget_run_is_judged_on_its_curve_by_the_rule():
    fixed = _run(42, curve=(50.0, 51.0, 52.0, 53.0, 54.0), cap=100, patience=0)
    assert run_flag(fixed) is None  # no rule: a fixed budget is not judged
    assert run_flag(fixed, rule=(3, 0.1)) == "still improving at the cap"
    assert run_flag(_run(42, curve=(50.0, 52.0, 51.0, 50.5, 50.0), patience=0), rule=(3, 0.1)) is None


def test_flagged_runs_names_each_run_no_verdict_may_rest_on():
    rising = _run(43, curve=(50.0, 51.0, 52.0, 53.0, 54.0), cap=100)
    first = _run(44, curve=(55.0, 50.0, 49.0, 48.0))
    groups = {"A": [_run(42), rising], "B": [first], "C": [_run(45)]}
    assert claims.flagged_runs(groups) == ("A (seed 43: still improving at the cap), "
                                           "B (seed 44: kept its first evaluation)")
    assert claims.flagged_runs({"C": [_run(45)]}) == "none"


def test_parity_and_does_not_hurt_claims_test_against_their_margin():
    parity = Claim("parity", "X matches Y", "equivalence", "X - Y", paper_effect=-0.1, margin=1.0)
    assert judge(parity, [0.1, -0.2, 0.05, 0.0, 0.1], [_run(s) for s in range(5)])["verdict"] == "holds (within ±1)"
    assert judge(parity, [0.1, -1.9, 1.5, 0.0, 0.1], [_run(s) for s in range(5)])["verdict"] == "not shown (margin ±1)"
    harmless = Claim("harmless", "X does not hurt", "non-inferiority", "X - Y", paper_effect=0.0, margin=0.5)
    row = judge(harmless, [-0.1, 0.0, 0.1, -0.05, 0.05], [_run(s) for s in range(5)])
    assert row["verdict"] == "holds (lower bound above -0.5)" and row["interval"].endswith("∞)")
    with pytest.raises(ValueError, match="states its margin"):
        Claim("bad", "X matches Y", "equivalence", "X - Y", paper_effect=0.0)


def test_a_geometry_value_the_untrained_plm_shares_is_the_plms_own():
    aligned = Claim("alignment", "X aligns better", "geometry", "alignment of X", paper_effect=None)
    row = judge(aligned, [0.110, 0.108, 0.112], [_run(s) for s in range(3)], plm_value=0.109)
    assert row["verdict"] == "the PLM's own (within the seed spread)" and row["untrained PLM"] == 0.109
    assert judge(aligned, [0.05, 0.06, 0.055], [_run(s) for s in range(3)], plm_value=0.12)["verdict"] == "better than the PLM"


def test_an_encoder_within_its_spread_of_the_plm_barely_left_it():
    runs_ = [_run(s, dev_best=v) for s, v in enumerate([48.0, 48.6, 47.9])]
    assert left_the_plm(runs_, plm_dev=47.8) == "the encoder barely left the PLM"
    assert left_the_plm(runs_, plm_dev=40.0) is None
    row = judge(BEATS, [1.2, 0.8, 1.5], [_run(s) for s in range(3)], {"decoder": (True, "")}, tested=runs_, plm_dev=47.8)
    assert row["verdict"] == "holds; the encoder barely left the PLM"


def test_a_row_says_how_many_seeds_the_paper_s_effect_needs_at_its_spread():
    """The fewest seeds whose detectable effect is below the paper's, from the row's own spread; "more than 10"."""
    d = np.array([0.5, 1.5, 1.0, 0.2, 1.8])
    claim = claims.Claim("c", "A beats B", "superiority", "A - B", paper_effect=1.0)
    row = claims.judge(claim, d, [])
    sd = d.std(ddof=1)
    n = int(row["seeds for the paper's effect"])
    assert protocol.detectable_effect(sd, n) < 1.0 <= protocol.detectable_effect(sd, n - 1)
    tiny = claims.Claim("t", "A beats B a little", "superiority", "A - B", paper_effect=0.1)
    assert claims.judge(tiny, d, [])["seeds for the paper's effect"] == "more than 10"
    assert claims.judge(claims.Claim("n", "x", "superiority", "A - B", paper_effect=None), d, [])[
        "seeds for the paper's effect"] is None


def test_seed_matched_differences_pair_runs_by_seed_and_keep_the_plm_beside():
    def run(seed, avg, alignment):
        return {"seed": seed, "metrics": {"sts": {"avg": avg}, "stsb_dev_best": avg + 1, "geometry": {"alignment": alignment}}}
    method = [run(44, 60.0, 0.20), run(42, 58.0, 0.25), run(43, 59.0, 0.30)]
    baseline = [run(42, 57.0, 0.27), run(43, 59.5, 0.31)]  # seed 44 has no baseline: left out
    assert claims.by_seed(method) == {44: 60.0, 42: 58.0, 43: 59.0}
    assert claims.by_seed(method, "stsb_dev")[42] == 59.0
    assert claims.matched(claims.by_seed(method), claims.by_seed(baseline)) == [1.0, -0.5]  # seeds 42, 43
    shared = claims.at_shared_seeds(method, baseline)  # the runs those differences rest on, whatever each row's order
    assert [(r["seed"], r["metrics"]["sts"]["avg"]) for r in shared] == [(42, 58.0), (43, 59.0), (42, 57.0), (43, 59.5)]
    lower = claims.matched(claims.by_seed(baseline, "alignment"), claims.by_seed(method, "alignment"))
    assert lower == pytest.approx([0.02, 0.01])
    row = judge(Claim("a", "aligns better", "superiority", "x", 0.065), lower, plm_value=0.0451)
    assert row["untrained PLM"] == 0.045 and row["type"] == "superiority"


def test_a_component_engages_over_a_claim_only_where_it_engaged_at_every_seed():
    group = [{"seed": 42, "fell": 0.3}, {"seed": 43, "fell": 0.05}, {"seed": 44, "fell": 0.02}]
    check = lambda run: (run["fell"] >= 0.1, f"fell {run['fell']:.0%}")  # noqa: E731
    assert claims.engaged_in_every(group, check) == (False, "seed 43: fell 5%; and 1 more seed(s)")
    assert claims.engaged_in_every(group[:1], check) == (True, "seed 42: fell 30%")
    assert claims.engaged_in_every(group[:1], check, lambda whys: "all: " + whys[0]) == (True, "all: fell 30%")
    assert claims.engaged_in_every([], check) == (False, "no runs to read it from")  # no runs are no evidence


def test_a_variance_claim_is_a_one_sided_f_test_with_the_ratio_its_seeds_detect():
    claim = claims.Claim("v", "B varies less than A", "variance", "std B / std A", 0.5)
    base, method = [70.0, 75.0, 80.0, 72.0, 78.0], [77.0, 77.1, 76.9, 77.05, 76.95]
    row = claims.judge(claim, method, [], baseline_values=base)
    ratio = np.std(method, ddof=1) / np.std(base, ddof=1)
    assert row["ours"] == round(ratio, 2) and row["verdict"] == "holds" and row["interval"] == "–"
    assert row["detectable"] == round(protocol.detectable_sd_ratio(5, 5), 2)
    # at the detectable ratio the test rejects with probability 0.8 (r^2 F < the critical value)
    r, c = protocol.detectable_sd_ratio(5, 5), stats.f.ppf(0.05, 4, 4)
    assert stats.f.cdf(c / r ** 2, 4, 4) == pytest.approx(0.8)
    assert protocol.variance_verdict(base, method)["p"] == pytest.approx(stats.f.cdf(ratio ** 2, 4, 4))
    assert protocol.variance_verdict(method, base)["verdict"] == "reversed"
    # alike spreads: five seeds a side detect a ratio of 0.25, not the paper's 0.5 (ten would not either)
    alike = claims.judge(claim, [1.0, 2.5, 3.0, 2.0, 1.5], [], baseline_values=[1.0, 2.0, 3.0, 2.5, 1.2])
    assert alike["verdict"] == "underpowered" and alike["seeds for the paper's effect"] == "more than 10"
    strong = claims.Claim("w", "B varies far less", "variance", "std B / std A", 0.1)
    assert claims.judge(strong, [1.0, 2.5, 3.0, 2.0, 1.5], [], baseline_values=[1.0, 2.0, 3.0, 2.5, 1.2])["verdict"] == "not shown"


def test_a_claim_whose_runs_were_not_trained_gets_a_not_tested_row_that_passes_the_audit():
    from sre_repro.chapters import board

    claim = claims.Claim("x", "A beats B", "superiority", "A - B", 1.0)
    row = claims.not_run(claim, "not in this call's grids")
    assert row["verdict"] == "not tested: not in this call's grids" and row["ours"] is None and row["n seeds"] == 0
    assert board.audit([row]) == []
    geometry = claims.Claim("g", "A is more isotropic than the PLM", "geometry", "A's anisotropy", None)
    assert claims.not_run(geometry, "no PLM analysis")["verdict"] == "not tested: no PLM analysis"
