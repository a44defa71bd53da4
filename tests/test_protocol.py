"""The evidence rules (sre_repro/protocol.py) against hand computations, and the stopping rule in a real run."""
import math

import numpy as np
import pytest
from scipy import stats

from sre_repro import protocol
from sre_repro.train import train

CURVE = [50.0, 52.0, 53.0, 53.05, 53.02, 52.9]  # improvements of >= 0.1 at the first three evaluations only


def test_the_stopping_rule_waits_patience_evaluations_without_a_min_delta_gain():
    assert protocol.evaluations_without_improvement(CURVE, 0.1) == 3  # 53.05 gains 0.05 < 0.1: no improvement
    assert protocol.stop_now(CURVE, patience=3, min_delta=0.1)
    assert not protocol.stop_now(CURVE, patience=4, min_delta=0.1)
    assert not protocol.stop_now(CURVE, patience=3, min_delta=0.0)  # 53.05 counts as a gain without a delta
    assert not protocol.stop_now(CURVE, patience=0, min_delta=0.1)  # 0: train to the cap
    assert not protocol.stop_now(CURVE[:3], patience=1, min_delta=0.1)


def _curve(values, every=10):
    return [{"step": every * (i + 1), "stsb_dev": v} for i, v in enumerate(values)]


def test_convergence_flags_the_cap_and_the_first_evaluation():
    stopped = protocol.convergence(_curve(CURVE), kept_step=40, cap=100, patience=3, min_delta=0.1)
    assert stopped["stopped_early"] and stopped["converged"] and stopped["flag"] is None
    rising = protocol.convergence(_curve([50, 51, 52, 53]), kept_step=40, cap=40, patience=2, min_delta=0.1)
    assert rising["still_improving_at_cap"] and rising["flag"] == "still improving at the cap"
    first = protocol.convergence(_curve([55, 50, 49]), kept_step=10, cap=100, patience=2, min_delta=0.1)
    assert first["converged"] and first["flag"] == "kept its first evaluation"
    # at the cap with its best rising by less than DEV_TOLERANCE over the last `patience` evaluations: converged
    flat = protocol.convergence(_curve([50, 60, 60.1, 60.2]), kept_step=40, cap=40, patience=2, min_delta=0.0)
    assert protocol.DEV_TOLERANCE == 0.25 and protocol.recent_gain([50, 60, 60.1, 60.2], 2) == pytest.approx(0.2)
    assert flat["converged"] and not flat["still_improving_at_cap"] and flat["flag"] is None
    assert protocol.convergence(_curve([50, 60, 60.1, 60.3]), 40, 40, 2, 0.0)["flag"] == "still improving at the cap"
    fixed = protocol.convergence(_curve(CURVE), kept_step=40, cap=60, patience=0, min_delta=0.0)
    assert fixed["converged"] is None and fixed["flag"] == "fixed budget: convergence not judged"


def test_a_run_with_patience_stops_by_the_rule_and_keeps_its_best(tmp_path):
    # min_delta 100: no evaluation after the first can count as a gain, so patience 1 stops at the second
    cfg = {"method": "simcse", "scale": "smoke", "max_steps": 12, "eval_steps": 2, "patience": 1, "min_delta": 100.0}
    run = train(cfg, results_root=tmp_path / "r", work_root=tmp_path / "w")
    assert run["steps"] == 4 and [p["step"] for p in run["dev_curve"]] == [2, 4]
    best = max(run["dev_curve"], key=lambda p: p["stsb_dev"])
    assert run["metrics"]["best_step"] == best["step"] and run["metrics"]["stsb_dev_best"] == best["stsb_dev"]
    assert run["convergence"]["stopped_early"] and run["convergence"]["converged"]
    fixed = train({**cfg, "patience": 0}, results_root=tmp_path / "r", work_root=tmp_path / "w")
    assert fixed["steps"] == 12 and fixed["dev_curve"][:2] == run["dev_curve"]  # the same run up to the stop


def test_a_discriminator_at_its_majority_rate_is_not_engaged_and_one_at_0_7_is():
    labels = np.array([0] * 93 + [1] * 7)  # 7 % LOW tokens
    majority = np.zeros(100, dtype=int)  # accuracy 0.93: its base rate
    assert protocol.balanced_accuracy(majority, labels) == 0.5
    assert not protocol.engaged("classifier", balanced_accuracy=protocol.balanced_accuracy(majority, labels))[0]
    reads = labels.copy()
    reads[:28] = 1  # 28 of 93 HIGH wrong, every LOW right: recalls 65/93 and 7/7
    assert protocol.balanced_accuracy(reads, labels) == pytest.approx((65 / 93 + 1) / 2)
    assert protocol.engaged("classifier", balanced_accuracy=0.7)[0]
    assert not protocol.engaged("classifier", balanced_accuracy=0.59)[0]


def test_a_discriminator_that_ranks_its_rare_class_without_crossing_one_half_is_engaged_on_its_auc():
    from sklearn.metrics import roc_auc_score

    labels = np.array([0] * 93 + [1] * 7)
    p_low = np.where(labels == 1, 0.3, 0.1)  # every LOW token above every HIGH one, none above 0.5
    p_low[:20] = 0.35  # 20 HIGH tokens rank above the LOW ones
    auc = roc_auc_score(labels, p_low)
    assert auc == pytest.approx(73 / 93)  # by hand: each LOW token outranks 73 of the 93 HIGH ones
    assert protocol.balanced_accuracy((p_low > 0.5).astype(int), labels) == 0.5  # the 0.5 cut says nothing
    ok, why = protocol.engaged("classifier", auc=auc, balanced_accuracy=0.5)
    assert ok and why.startswith("ROC AUC 0.785 >= 0.60")
    assert not protocol.engaged("classifier", auc=0.55)[0]


def test_a_reconstruction_term_must_fall_and_end_below_its_trivial_baseline():
    entropy = 6.2  # nats: what predicting the unigram distribution costs
    assert protocol.engaged("reconstruction", first=9.0, kept=5.0, baseline=entropy)[0]
    assert not protocol.engaged("reconstruction", first=9.0, kept=6.5, baseline=entropy)[0]  # fell 28 %, above it
    assert not protocol.engaged("reconstruction", first=5.5, kept=5.2, baseline=entropy)[0]  # below it, fell 5 %
    # the reason says which part of the rule each number met
    assert protocol.engaged("reconstruction", first=9.0, kept=6.5, baseline=entropy)[1] == (
        "fell 27.8% (at least the 10% asked) to 6.500, not below its trivial baseline 6.200")
    assert protocol.engaged("reconstruction", first=5.5, kept=5.2, baseline=entropy)[1].startswith("fell 5.5% (less than the 10% asked)")
    # measured elsewhere alike (held-out sentences): the baseline is set against `compared`, the fall stays the term's
    assert not protocol.engaged("reconstruction", first=0.70, kept=0.60, baseline=0.45, compared=0.52)[0]
    ok, why = protocol.engaged("reconstruction", first=0.70, kept=0.60, baseline=0.45, compared=0.40)
    assert ok and "held out 0.400" in why
    assert protocol.engaged("perturbation", plain=2.0, perturbed=2.05)[0]
    assert not protocol.engaged("perturbation", plain=2.0, perturbed=2.001)[0]


DIFFS = [0.8, 1.4, 0.3, 1.1, 0.9]


def _hand(d):
    d = np.asarray(d)
    return d.mean(), d.std(ddof=1) / math.sqrt(len(d)), len(d) - 1


def test_superiority_is_the_two_sided_95_interval_above_zero():
    mean, se, df = _hand(DIFFS)
    out = protocol.claim_verdict(DIFFS, "superiority")
    half = stats.t.ppf(0.975, df) * se
    assert out["interval"] == pytest.approx((mean - half, mean + half)) and out["verdict"] == "holds"
    assert protocol.claim_verdict([-x for x in DIFFS], "superiority")["verdict"] == "reversed"
    assert protocol.claim_verdict([0.5, -0.4, 0.2], "superiority")["verdict"] == "not shown"
    assert protocol.claim_verdict([0.5], "superiority")["verdict"].startswith("one seed")


def test_equivalence_is_two_one_sided_tests_against_the_margin():
    small = [0.1, -0.2, 0.05, 0.15, -0.1]
    mean, se, df = _hand(small)
    p = max(1 - stats.t.cdf((mean + 0.5) / se, df), stats.t.cdf((mean - 0.5) / se, df))  # H0: <= -m ; H0: >= m
    out = protocol.claim_verdict(small, "equivalence", margin=0.5)
    assert out["p"] == pytest.approx(p) and p < 0.05 and out["verdict"].startswith("holds")
    assert protocol.claim_verdict(small, "equivalence", margin=0.1)["verdict"].startswith("not shown")
    # the 90 % interval of DIFFS, by hand: wholly above 0.5 (the two differ), straddling 1.0 (undecided)
    mean, se, df = _hand(DIFFS)
    low, high = mean - stats.t.ppf(0.95, df) * se, mean + stats.t.ppf(0.95, df) * se
    assert 0.5 < low < 1.0 < high
    assert protocol.claim_verdict(DIFFS, "equivalence", margin=0.5)["verdict"] == "reversed (differs by more than ±0.5)"
    assert protocol.claim_verdict([-x for x in DIFFS], "equivalence", margin=0.5)["verdict"].startswith("reversed")
    assert protocol.claim_verdict(DIFFS, "equivalence", margin=1.0)["verdict"] == "not shown (margin ±1; the interval excludes 0)"
    straddling = [0.3, -0.4, 0.5, -0.2, 0.1]  # a 90 % interval across 0 that leaves a ±0.3 margin
    assert protocol.claim_verdict(straddling, "equivalence", margin=0.3)["verdict"] == "not shown (margin ±0.3)"
    with pytest.raises(ValueError, match="margin"):
        protocol.claim_verdict(small, "equivalence")


def test_non_inferiority_is_the_one_sided_lower_bound_above_minus_the_margin():
    d = [-0.1, 0.2, 0.0, -0.05, 0.1]
    mean, se, df = _hand(d)
    out = protocol.claim_verdict(d, "non-inferiority", margin=0.3)
    assert out["lower bound"] == pytest.approx(mean - stats.t.ppf(0.95, df) * se)
    assert out["verdict"].startswith("holds")
    # worse by about 1 point: its one-sided upper bound lies below -0.3 (it hurts); by about 0.3: undecided
    worse = [x - 1 for x in d]
    mean, se, df = _hand(worse)
    assert mean + stats.t.ppf(0.95, df) * se < -0.3
    assert protocol.claim_verdict(worse, "non-inferiority", margin=0.3)["verdict"] == "reversed (upper bound below -0.3)"
    assert protocol.claim_verdict([x - 0.3 for x in d], "non-inferiority", margin=0.3)["verdict"] == "not shown"


def test_a_geometry_value_inside_the_seed_spread_of_the_untrained_plm_is_the_plms_own():
    # PaSeR's alignment 0.109 against the untrained PLM's 0.122 (chapter PaSeR), with a spread that covers it
    assert protocol.geometry_verdict([0.100, 0.118, 0.109], 0.122)["verdict"].startswith("the PLM's own")
    assert protocol.geometry_verdict([0.050, 0.052, 0.051], 0.122)["verdict"] == "better than the PLM"


def test_the_detectable_effect_has_80_percent_power_by_a_direct_noncentral_t():
    for sd, n in ((1.0, 3), (2.6, 5), (0.7, 10)):
        d = protocol.detectable_effect(sd, n)
        crit, nc = stats.t.ppf(0.975, n - 1), d * math.sqrt(n) / sd
        power = 1 - stats.nct.cdf(crit, n - 1, nc) + (1 - stats.nct.cdf(crit, n - 1, -nc))  # P(T>c) + P(T<-c)
        assert power == pytest.approx(0.8, abs=1e-6)
        assert d > (stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) * sd / math.sqrt(n)  # the t test needs more than z
    assert protocol.detectable_effect(1.0, 5) < protocol.detectable_effect(1.0, 3)
    assert math.isnan(protocol.detectable_effect(1.0, 1))
    assert protocol.power_word(0.5, protocol.detectable_effect(1.0, 3)) == "underpowered"
    assert protocol.power_word(5.0, protocol.detectable_effect(1.0, 3)) is None
    n = protocol.seeds_needed(1.0, 1.5)
    assert protocol.detectable_effect(1.0, n) < 1.5 <= protocol.detectable_effect(1.0, n - 1)
    assert protocol.seeds_needed(1.0, 0.1) is None  # ten seeds are not enough for a tenth of the spread


def test_the_seeds_a_ratio_of_spreads_needs_are_the_fewest_whose_detectable_ratio_lies_above_it():
    ratios = {n: protocol.detectable_sd_ratio(n, n) for n in range(2, 21)}
    assert all(ratios[n] < ratios[n + 1] for n in range(2, 20))  # more seeds detect ratios nearer 1
    target = (ratios[7] + ratios[8]) / 2
    assert protocol.seeds_needed_for_ratio(target) == 8 and protocol.seeds_needed_for_ratio(ratios[3] - 1e-9) == 3
    assert protocol.seeds_needed_for_ratio(ratios[12]) is None  # ten a side are not enough
    assert protocol.ratio_power_word(0.87, 0.25) == "underpowered" and protocol.ratio_power_word(0.1, 0.25) is None
    assert protocol.ratio_power_word(None, 0.25) is None and protocol.ratio_power_word(0.5, float("nan")) is None
