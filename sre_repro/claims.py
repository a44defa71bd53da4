"""A paper's claim as its chapter declares it, and the one function that turns the claim's evidence into the row
the chapter shows, saves and the verdict board reads (`judge`). The rules themselves live in protocol.py.

A chapter module declares its claims (`Claim`: id, text, type, the components it is about, its runs, the paper's
effect, the margin of a parity or "does not hurt" claim, whether it is the paper's headline); its notebook
computes the evidence (seed-matched differences, the runs they rest on, each component's engagement) and glues
the row by id. A row never issues a verdict that rests on a flagged run (still improving at the cap, kept its
first evaluation), a component whose mechanism did not engage, a stale record or a single seed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import protocol, runs

HEADLINE_SEEDS = 5  # the fewest seed-matched seeds a paper's headline claim rests on (protocol issue: 5 to 10)


@dataclass(frozen=True)
class Claim:
    id: str                       # stable key: notebooks glue by it, the board lists by it
    text: str                     # the claim as the paper states it
    type: str                     # superiority | equivalence | non-inferiority | geometry | variance (protocol.CLAIM_TYPES)
    runs: str                     # what is compared, e.g. "SARCSE - SimCSE, average STS, seed-matched"
    paper_effect: float | None    # the paper's method minus its baseline, from its table (None: it reports none);
                                  # a variance claim: the ratio of their standard deviations over seeds
    components: tuple[str, ...] = ()  # the mechanisms the claim is about (each must engage for a verdict)
    margin: float | None = None   # points: equivalence and non-inferiority claims test against it
    headline: bool = False        # the paper's main claim: at least HEADLINE_SEEDS seeds
    lower_is_better: bool = True  # geometry claims: the direction of "better"

    def __post_init__(self):
        if self.type not in protocol.CLAIM_TYPES:
            raise ValueError(f"claim {self.id}: unknown type {self.type!r}, choose from {', '.join(protocol.CLAIM_TYPES)}")
        if self.type in ("equivalence", "non-inferiority") and not self.margin:
            raise ValueError(f"claim {self.id}: a {self.type} claim states its margin (points) beside the claim")


def by_seed(group: list[dict], metric: str = "avg") -> dict[int, float]:
    """seed -> a run's number: "avg" (average STS), "stsb_dev" (the kept checkpoint's STS-B dev) or a key of its
    STS-B test geometry ("alignment", "uniformity", "anisotropy")."""
    def value(run):
        m = run["metrics"]
        return m["sts"]["avg"] if metric == "avg" else m["stsb_dev_best"] if metric == "stsb_dev" else m["geometry"][metric]
    return {r["seed"]: value(r) for r in group}


def matched(better: dict[int, float], worse: dict[int, float]) -> list[float]:
    """Seed-matched differences better - worse (the seeds both sides ran, in order)."""
    return [better[s] - worse[s] for s in sorted(set(better) & set(worse))]


def at_shared_seeds(*groups: list[dict]) -> list[dict]:
    """The runs a seed-matched claim rests on: each group's runs at the seeds every group ran (what `matched` pairs),
    whatever order or seed count each group lists."""
    shared = set.intersection(*({r["seed"] for r in group} for group in groups))
    return [r for group in groups for r in group if r["seed"] in shared]


def engaged_in_every(group: list[dict], check, summary=None) -> tuple[bool, str]:
    """A component's engagement over the runs a claim rests on (judge's `engagement` entry): engaged when
    `check(run)` -> (engaged, why), protocol.engaged's reading of one run, holds at every seed; else why names the
    first seed where it did not. `summary`: the text of an engaged reading from the runs' whys (default: each seed's)."""
    if not group:
        return False, "no runs to read it from"
    results = [(r["seed"], *check(r)) for r in group]
    idle = [(seed, why) for seed, ok, why in results if not ok]
    if idle:
        return False, f"seed {idle[0][0]}: {idle[0][1]}" + (f"; and {len(idle) - 1} more seed(s)" if len(idle) > 1 else "")
    whys = [why for _, _, why in results]
    return True, summary(whys) if summary else "; ".join(f"seed {seed}: {why}" for seed, _, why in results)


def convergence_of(run: dict, rule: tuple[int, float] | None = None) -> dict:
    """protocol.convergence of a run's dev curve, read now: by the stopping rule it trained under, or for a
    fixed-budget run by `rule` (patience, min_delta) when given (else it is not judged)."""
    cfg = run["config"]
    patience, min_delta = (cfg["patience"], cfg["min_delta"]) if cfg.get("patience") else (rule or (0, 0.0))
    return protocol.convergence(run["dev_curve"], run["metrics"]["best_step"], cfg["max_steps"] or run["steps"],
                                patience, min_delta)


def run_flag(run: dict, rule: tuple[int, float] | None = None) -> str | None:
    """Why no verdict may rest on this run (None: it may): its flag by convergence_of."""
    flag = convergence_of(run, rule)["flag"]
    return None if flag is None or flag.startswith("fixed budget") else flag


def runs_where(groups: dict[str, list[dict]], mark) -> str:
    """"name (seed s)" for every run of `groups` that mark(run) marks (True, or a reason shown after the seed:
    "name (seed s: reason)"), or "none"."""
    return ", ".join(f"{name} (seed {r['seed']}{'' if why is True else f': {why}'})" for name, group in groups.items()
                     for r in group if (why := mark(r))) or "none"


def flagged_runs(groups: dict[str, list[dict]], rule: tuple[int, float] | None = None) -> str:
    """"name (seed s: flag)" for every run of `groups` that no verdict may rest on (run_flag), or "none"."""
    return runs_where(groups, lambda run: run_flag(run, rule))


def left_the_plm(runs_: list[dict], plm_dev: float | None) -> str | None:
    """"the encoder barely left the PLM" when the runs' kept STS-B dev lies within their seed spread (2 sd, at
    least 0.5 points) of the untrained PLM's with the same pooler (None: it left, or no PLM score is known)."""
    if plm_dev is None or not runs_:
        return None
    values = np.array([r["metrics"]["stsb_dev_best"] for r in runs_])
    spread = max(2 * values.std(ddof=1), 0.5) if len(values) > 1 else 0.5
    return "the encoder barely left the PLM" if values.mean() - plm_dev <= spread else None


def judge(claim: Claim, differences, runs_: list[dict] = (), engagement: dict | None = None,
          rule: tuple[int, float] | None = None, plm_value: float | None = None, tested: list[dict] = (),
          plm_dev: float | None = None, baseline_values=()) -> dict:
    """The verdict row of `claim` from its seed-matched `differences` (method minus baseline, one per seed; for a
    geometry claim the method's values; for a variance claim the method's values, its baseline's in
    `baseline_values`), the runs they rest on (both sides), each component's engagement
    ({component: (engaged, why)}, protocol.engaged) and the untrained PLM's value (a geometry claim's reference;
    beside any other claim about a quantity the PLM has too). With
    the `tested` encoder's runs and the untrained PLM's STS-B dev (same pooler), a verdict on an encoder that
    barely left the PLM says so."""
    values = np.asarray(differences, dtype=float)
    seeds = sorted({r["seed"] for r in runs_})
    row = {"id": claim.id, "claim": claim.text, "type": claim.type + (f" (±{claim.margin:g})" if claim.margin else ""),
           "paper effect": None if claim.paper_effect is None else round(float(claim.paper_effect), 2),
           "ours": round(float(values.mean()), 2) if len(values) else None, "interval": "–",
           "detectable": None, "seeds for the paper's effect": None, "n seeds": len(values),
           "seeds": ", ".join(map(str, seeds)), "headline": claim.headline}
    sd = float(values.std(ddof=1)) if len(values) > 1 else float("nan")
    if claim.type == "variance":  # the ratio of standard deviations, and the largest ratio these seeds detect
        base = np.asarray(baseline_values, dtype=float)
        row["ours"] = round(float(sd / base.std(ddof=1)), 2) if len(values) > 1 and len(base) > 1 else None
        detectable = protocol.detectable_sd_ratio(len(base), len(values))
        row["detectable"] = None if math.isnan(detectable) else round(detectable, 2)
        row["seeds for the paper's effect"] = (None if claim.paper_effect is None else
                                               _seeds_word(protocol.seeds_needed_for_ratio(claim.paper_effect)))
    elif claim.type != "geometry" and len(values) > 1:
        detectable = protocol.detectable_effect(sd, len(values))
        row["detectable"] = None if math.isnan(detectable) else round(detectable, 2)
        row["seeds for the paper's effect"] = seeds_for(sd, claim.paper_effect)
    if plm_value is not None:  # beside any claim about a quantity the untrained PLM has too (geometry, spread)
        row["untrained PLM"] = round(float(plm_value), 3)
    row["verdict"] = _word(claim, values, runs_, engagement or {}, rule, plm_value, row, baseline_values)
    if note := left_the_plm(list(tested), plm_dev):
        row["verdict"] += f"; {note}"
    return row


def not_run(claim: Claim, why: str) -> dict:
    """The row of a declared claim whose runs this call did not train (e.g. a grid value outside the scale's grid)."""
    return {**judge(claim, []), "verdict": f"not tested: {why}"}


def seeds_for(sd: float, paper_effect: float | None) -> str | None:
    """How many seed-matched seeds would detect the paper's effect (80 % power) at the spread `sd` these seeds
    show: a number up to 10, "more than 10", or None (no paper effect, or no spread to judge by)."""
    if paper_effect is None or not paper_effect or not sd > 0:
        return None
    return _seeds_word(protocol.seeds_needed(sd, paper_effect))


def _seeds_word(needed: int | None) -> str:
    return "more than 10" if needed is None else str(needed)


def _word(claim, values, runs_, engagement, rule, plm_value, row, baseline_values) -> str:
    result = None
    if claim.type == "geometry":  # (no values or no PLM value: a row not run, claims.not_run)
        result = (protocol.geometry_verdict(values, plm_value, claim.lower_is_better)
                  if len(values) and plm_value is not None else None)
    elif claim.type == "variance":
        result = protocol.variance_verdict(baseline_values, values)
        result = None if result["verdict"].startswith("one seed") else result
    elif len(values) > 1:  # the interval is shown whatever the verdict
        result = protocol.claim_verdict(values, claim.type, claim.margin)
        # superiority: the two-sided 95 % interval; equivalence: the 90 % one (TOST); non-inferiority: one-sided 95 %
        low, high = result.get("interval", (result.get("lower bound"), math.inf))
        row["interval"] = f"[{low:.2f}, {high:.2f}]" if claim.type != "non-inferiority" else f"[{low:.2f}, ∞)"
    if runs.SERVED_STALE:
        return f"stale: recompute ({len(set(runs.SERVED_STALE))} stale record(s) read)"
    flagged = {r["seed"]: flag for r in runs_ if (flag := run_flag(r, rule))}
    if flagged:
        seed, flag = next(iter(flagged.items()))
        return f"not tested: {flag} (seed {seed}{' and others' if len(flagged) > 1 else ''})"
    unknown = [c for c in claim.components if c not in engagement]
    if unknown:
        return f"not tested: no evidence that {' or '.join(unknown)} engaged"
    idle = [f"{c} did not engage ({why})" for c, (ok, why) in engagement.items() if not ok]
    if idle:  # every component that did not, so that a reader knows all that would need mending
        return f"not tested: {'; '.join(idle)}"
    if result is None:
        return "one seed: difference shown, no verdict"
    if claim.headline and len(values) < HEADLINE_SEEDS:
        return f"not tested: a headline claim rests on at least {HEADLINE_SEEDS} seeds, this on {len(values)}"
    word = result["verdict"]
    if word == "not shown":  # could these seeds have seen the paper's effect?
        power = (protocol.ratio_power_word(claim.paper_effect, row["detectable"]) if claim.type == "variance" else
                 protocol.power_word(claim.paper_effect, row["detectable"] or math.nan))
        word = power or word
    return word
