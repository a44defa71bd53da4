"""The evidence rules a verdict rests on, each in one place: when a run has converged, when a component's own
mechanism engaged, how a claim of each type is tested, and the smallest effect a set of seeds could detect.

Convergence. A run evaluates STS-B dev every `eval_steps` and stops once its best has not improved by at least
`min_delta` for `patience` evaluations, or at its cap (`max_steps`); the best dev checkpoint is kept. A run that
reaches the cap while still improving (its best rose by at least `DEV_TOLERANCE` over its last `patience`
evaluations), or keeps its first evaluation, is flagged, and no verdict rests on it. The flag is read from the dev
curve whenever a run is judged (claims.run_flag), so a record is judged by the rule in force, not the one it
was trained under.

Engagement. A component is tested only when its mechanism engaged, judged on the mechanism, never on moving
weights alone: a discriminator or classifier beats chance on its own task (balanced accuracy, or where it ranks
without deciding, as a discriminator trained on rare labels does, ROC AUC, at least 0.5 + `CHANCE_MARGIN`: one at
its majority-class rate is engaged by neither); a reconstruction, decoder or MLM term falls
by at least `LOSS_FALL` of its first value and ends below its trivial baseline (e.g. the unigram entropy); a margin
or perturbation changes the loss of the same batch by at least `PERTURBATION_SHARE`.

Claims. superiority: the 95 % interval of the seed-matched mean difference lies above 0. equivalence ("parity",
"barely matters"): two one-sided t-tests against +-margin, each at 5 % (the 90 % interval inside the margin).
non-inferiority ("does not hurt"): the one-sided 95 % lower bound lies above -margin. geometry: a value beside the
untrained PLM's, "the PLM's own" when within the seed spread of it. variance ("seeds vary less"): the one-sided
F-test that the method's variance over seeds lies below its baseline's, at 5 %; its effect is the ratio of their
standard deviations (method / baseline).

Power. The smallest mean difference a paired test of n seeds detects with 80 % power at two-sided 5 %, from the
observed spread: the d for which the noncentral t with n - 1 degrees of freedom and noncentrality d sqrt(n) / sd
exceeds the critical value with probability 0.8. A verdict whose paper effect is below it reads "underpowered".
For a variance claim, the largest ratio of standard deviations the F-test detects with 80 % power.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats

DEV_TOLERANCE = 0.25      # STS-B dev points: a smaller gain of a run's best is no real change (the appendix's rule
                          # and cap are chosen within it; a run at its cap still gaining this much is still improving)
CHANCE_MARGIN = 0.1       # balanced accuracy (or ROC AUC) above 0.5 + this: the classifier reads its task
LOSS_FALL = 0.10          # a reconstruction-type term must fall by this share of its first value
PERTURBATION_SHARE = 0.01  # a margin must change the same batch's loss by this share
CLAIM_TYPES = ("superiority", "equivalence", "non-inferiority", "geometry", "variance")


# ----- convergence --------------------------------------------------------------------------------------------

def evaluations_without_improvement(values, min_delta: float) -> int:
    """How many evaluations have passed since the best improved by at least `min_delta` (the first counts as one)."""
    best, since = -math.inf, 0
    for value in values:
        if value >= best + min_delta:
            best, since = value, 0
        else:
            since += 1
    return since


def stop_now(values, patience: int, min_delta: float) -> bool:
    """Whether a run with dev scores `values` (one per evaluation, higher is better) stops: its best has not
    improved by `min_delta` for `patience` evaluations. patience 0: never (train to the cap)."""
    return patience > 0 and evaluations_without_improvement(values, min_delta) >= patience


def recent_gain(values, window: int) -> float:
    """How far the best of the last `window` evaluations lies above the best before them (inf: none came before)."""
    if len(values) <= window:
        return math.inf
    return max(values[-window:]) - max(values[:-window])


def convergence(curve: list[dict], kept_step: int, cap: int, patience: int, min_delta: float,
                metric: str = "stsb_dev") -> dict:
    """What a finished run's dev curve says about its budget: whether the stopping rule fired, whether it ran to
    the cap still improving (a gain of at least DEV_TOLERANCE over its last `patience` evaluations), whether it kept
    its first evaluation, and the flag (None: none) that bars a verdict."""
    first_kept = bool(curve) and kept_step == curve[0]["step"]
    if patience == 0:  # a fixed budget: judge its curve with a rule, convergence(curve, ..., patience, min_delta)
        return {"stopped_early": False, "converged": None, "still_improving_at_cap": None,
                "kept_first_evaluation": first_kept,
                "flag": "kept its first evaluation" if first_kept else "fixed budget: convergence not judged"}
    values = [point[metric] for point in curve]
    stopped = stop_now(values, patience, min_delta)
    at_cap = bool(curve) and curve[-1]["step"] >= cap
    still_improving = at_cap and not stopped and recent_gain(values, patience) >= DEV_TOLERANCE
    flag = ("still improving at the cap" if still_improving else
            "kept its first evaluation" if first_kept else None)
    return {"stopped_early": stopped and not at_cap, "converged": stopped or (at_cap and not still_improving),
            "still_improving_at_cap": still_improving,
            "kept_first_evaluation": first_kept, "flag": flag}


# ----- engagement ---------------------------------------------------------------------------------------------

def balanced_accuracy(predictions, labels) -> float:
    """The mean of the per-class recalls (0.5 for any constant guess on two classes)."""
    predictions, labels = np.asarray(predictions), np.asarray(labels)
    return float(np.mean([np.mean(predictions[labels == c] == c) for c in np.unique(labels)]))


def _asked(met: bool, share: float) -> str:
    """Whether one part of the rule was met, in its reason ("at least the 10% asked", "less than the 10% asked")."""
    return f"{'at least' if met else 'less than'} the {share:.0%} asked"


def engaged(kind: str, **evidence) -> tuple[bool, str]:
    """(engaged?, why) for a component's mechanism. kind and its evidence:
    classifier     balanced_accuracy, or auc (ROC AUC: a ranking that a 0.5 cut need not show; judged on it
                   when given)
    reconstruction first, kept (the term's values), baseline (its trivial value, e.g. unigram entropy in nats);
                   compared (optional): the value set against the baseline where the two are measured elsewhere
                   alike (e.g. held-out sentences in eval mode), instead of kept
    perturbation   plain, perturbed (the same batch's loss without and with the margin)"""
    if kind == "classifier":
        name = "ROC AUC" if "auc" in evidence else "balanced accuracy"
        score = evidence["auc"] if "auc" in evidence else evidence["balanced_accuracy"]
        ok = score >= 0.5 + CHANCE_MARGIN
        return ok, f"{name} {score:.3f} {'>=' if ok else '<'} {0.5 + CHANCE_MARGIN:.2f} (chance 0.5)"
    if kind == "reconstruction":
        first, kept, baseline = evidence["first"], evidence["kept"], evidence["baseline"]
        compared = evidence.get("compared", kept)  # the value set against the baseline, measured alike (default kept)
        fell = (first - kept) / abs(first) if first else 0.0
        ok = fell >= LOSS_FALL and compared < baseline
        return ok, (f"fell {fell:.1%} ({_asked(fell >= LOSS_FALL, LOSS_FALL)}) to {kept:.3f}, "
                    + ("" if "compared" not in evidence else f"held out {compared:.3f}, ")
                    + f"{'below' if compared < baseline else 'not below'} its trivial baseline {baseline:.3f}")
    if kind == "perturbation":
        plain, perturbed = evidence["plain"], evidence["perturbed"]
        share = abs(perturbed - plain) / abs(plain) if plain else 0.0
        ok = share >= PERTURBATION_SHARE
        return ok, f"changes the batch's loss by {share:.2%} ({_asked(ok, PERTURBATION_SHARE)})"
    raise ValueError(f"unknown mechanism kind {kind!r}: classifier, reconstruction or perturbation")


# ----- claims -------------------------------------------------------------------------------------------------

def _t(differences):
    d = np.asarray(differences, dtype=float)
    n = len(d)
    return d, n, float(d.mean()), (float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan"))


def claim_verdict(differences, claim_type: str, margin: float | None = None, level: float = 0.05) -> dict:
    """The verdict word and its numbers for seed-matched `differences` (method minus baseline) under a claim
    type; `margin` (points) for equivalence and non-inferiority. One difference: shown, no verdict. The opposite of
    parity is a difference beyond the margin (the 90 % interval wholly outside it), the opposite of "does not hurt"
    a loss beyond it (the one-sided 95 % upper bound below -margin): both read "reversed"."""
    if claim_type not in CLAIM_TYPES[:3]:
        raise ValueError(f"claim type {claim_type!r} is tested on differences: superiority, equivalence or "
                         "non-inferiority (geometry claims: geometry_verdict)")
    if claim_type != "superiority" and not margin:
        raise ValueError(f"a {claim_type} claim needs its margin (points), stated beside the claim")
    d, n, mean, se = _t(differences)
    if n < 2:
        return {"mean": mean, "n": n, "verdict": "one seed: difference shown, no verdict"}
    df = n - 1
    if claim_type == "superiority":
        half = stats.t.ppf(1 - level / 2, df) * se
        low, high = mean - half, mean + half
        word = "holds" if low > 0 else "reversed" if high < 0 else "not shown"
        return {"mean": mean, "n": n, "interval": (low, high), "verdict": word}
    half = stats.t.ppf(1 - level, df) * se  # both margin claims read one-sided bounds (TOST's 90 % interval)
    low, high = mean - half, mean + half
    if claim_type == "equivalence":
        p_low = float(stats.t.sf((mean + margin) / se, df)) if se > 0 else float(mean <= -margin)
        p_high = float(stats.t.cdf((mean - margin) / se, df)) if se > 0 else float(mean >= margin)
        p = max(p_low, p_high)
        # "not shown" names the margin, not "within" it (its interval leaves the margin on at least one side), and
        # says when that interval excludes 0: the seeds then saw a difference, only not one beyond the margin
        word = (f"holds (within ±{margin:g})" if p < level else
                f"reversed (differs by more than ±{margin:g})" if low > margin or high < -margin else
                f"not shown (margin ±{margin:g}" + ("; the interval excludes 0)" if low > 0 or high < 0 else ")"))
        return {"mean": mean, "n": n, "interval": (low, high), "p": p, "margin": margin, "verdict": word}
    # the words name the bound, not "hurt": a "does not help" claim tests the reference minus the method
    word = (f"holds (lower bound above -{margin:g})" if low > -margin else
            f"reversed (upper bound below -{margin:g})" if high < -margin else "not shown")
    return {"mean": mean, "n": n, "lower bound": low, "margin": margin, "verdict": word}


def geometry_verdict(method_values, plm_value: float, lower_is_better: bool = True) -> dict:
    """A geometry claim's row: the method's mean beside the untrained PLM's value; "the PLM's own" when the PLM's
    value lies within the method's seed spread (mean +- 2 sd), so the method cannot be credited with it."""
    values = np.asarray(method_values, dtype=float)
    mean, sd = float(values.mean()), float(values.std(ddof=1)) if len(values) > 1 else 0.0
    own = abs(mean - plm_value) <= 2 * sd
    better = mean < plm_value if lower_is_better else mean > plm_value
    word = "the PLM's own (within the seed spread)" if own else ("better than the PLM" if better else "worse than the PLM")
    return {"mean": mean, "sd": sd, "untrained PLM": plm_value, "verdict": word}


def variance_verdict(base_values, method_values, level: float = 0.05) -> dict:
    """A "varies less over seeds" claim: the one-sided F-test that the method's variance over seeds lies below its
    baseline's ("holds" at p < level, "reversed" when the opposite one-sided test passes), with the ratio of their
    standard deviations (method / baseline). Fewer than two seeds on a side: no verdict."""
    base, method = np.asarray(base_values, dtype=float), np.asarray(method_values, dtype=float)
    if min(len(base), len(method)) < 2:
        return {"ratio": float("nan"), "verdict": "one seed: difference shown, no verdict"}
    f = method.var(ddof=1) / base.var(ddof=1) if base.var(ddof=1) > 0 else math.inf
    p = float(stats.f.cdf(f, len(method) - 1, len(base) - 1))
    word = "holds" if p < level else "reversed" if p > 1 - level else "not shown"
    return {"ratio": math.sqrt(f), "p": p, "verdict": word}


# ----- power --------------------------------------------------------------------------------------------------

def detectable_effect(sd: float, n: int, power: float = 0.8, level: float = 0.05) -> float:
    """The smallest mean difference a paired two-sided t-test of `n` seed-matched differences with standard
    deviation `sd` detects with probability `power` (nan below two seeds or without spread)."""
    if n < 2 or not sd > 0:
        return float("nan")
    df, critical = n - 1, stats.t.ppf(1 - level / 2, n - 1)

    def shortfall(effect):
        nc = effect * math.sqrt(n) / sd
        # P(T > c) + P(T < -c); the lower tail as P(T > c) at -nc (scipy's nct.cdf far in the tail gives nan)
        return stats.nct.sf(critical, df, nc) + stats.nct.sf(critical, df, -nc) - power

    return float(optimize.brentq(shortfall, 1e-9 * sd, 100 * sd))


def power_word(paper_effect: float | None, detectable: float) -> str | None:
    """"underpowered" when the paper's effect is smaller than what these seeds detect (None otherwise)."""
    if paper_effect is None or math.isnan(detectable):
        return None
    return "underpowered" if abs(paper_effect) < detectable else None


def seeds_needed(sd: float, effect: float, power: float = 0.8, level: float = 0.05, most: int = 10) -> int | None:
    """The fewest seeds (2..most) whose detectable effect is below `effect`; None when `most` are not enough."""
    return next((n for n in range(2, most + 1) if detectable_effect(sd, n, power, level) < abs(effect)), None)


def detectable_sd_ratio(n_base: int, n_method: int, power: float = 0.8, level: float = 0.05) -> float:
    """The largest ratio of standard deviations (method / baseline, below 1) that the one-sided F-test of
    variance_verdict detects with probability `power`: under a true ratio r the statistic is r^2 F(n_method - 1,
    n_base - 1), so the power is F.cdf(c / r^2) with c the test's critical value (nan below two seeds a side)."""
    if min(n_base, n_method) < 2:
        return float("nan")
    df = (n_method - 1, n_base - 1)
    return math.sqrt(stats.f.ppf(level, *df) / stats.f.ppf(power, *df))


def ratio_power_word(paper_ratio: float | None, detectable_ratio: float | None) -> str | None:
    """power_word for a ratio of standard deviations: "underpowered" when the paper's ratio lies closer to 1
    than the largest ratio these seeds detect (None otherwise)."""
    if paper_ratio is None or detectable_ratio is None or math.isnan(detectable_ratio):
        return None
    return "underpowered" if paper_ratio > detectable_ratio else None


def seeds_needed_for_ratio(ratio: float, power: float = 0.8, level: float = 0.05, most: int = 10) -> int | None:
    """seeds_needed for a ratio of standard deviations: the fewest seeds a side (2..most) whose detectable ratio
    lies above `ratio`; None when `most` are not enough."""
    return next((n for n in range(2, most + 1) if detectable_sd_ratio(n, n, power, level) > ratio), None)
