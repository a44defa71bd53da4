"""The verdict board, the page after the landing page: every claim the chapters judge, with the paper's effect,
ours with its interval, the smallest effect our seeds detect, the verdict and the scale. Its rows are the verdict
tables each chapter writes when it runs (`report.save_verdicts`), never typed here; a chapter that declares its
claims (a `CLAIMS` mapping in its module, `claims.Claim`) has every declared claim listed, "not yet run" where
it wrote no row at this scale."""
from __future__ import annotations

import html
import importlib
import json
import re

import numpy as np
import pandas as pd

from .. import runs
from ..report import dashed

# chapter notebook -> (the paper whose claims it judges, its plan module), in the book's order
CHAPTERS = {"00b_stand_in_plm": "SimCSE (on the stand-in PLM)", "01_simcse": "SimCSE", "sarcse": "SARCSE", "byop": "BYOP",
            "pt_bert": "PT-BERT", "slt_fai": "SLT-FAI", "paser": "PaSeR"}
MODULES = {"00b_stand_in_plm": "stand_in", "01_simcse": "simcse", "sarcse": "sarcse", "byop": "byop",
           "pt_bert": "pt_bert", "slt_fai": "slt_fai", "paser": "paser"}
SECTION = "verdicts-at-this-scale"  # the anchor of every chapter's "Verdicts at this scale" heading
NOT_YET_RUN = "not yet run"
COLUMNS = ["paper", "claim", "type", "paper effect", "ours", "interval", "detectable", "seeds for the paper's effect",
           "verdict", "scale", "seeds", "chapter", "headline"]
# what each verdict word means, as the rules (protocol.py, claims.py) apply it; the board's header and counts use it
WORDS = {
    "holds": "the claim's test passed: superiority, its 95% interval lies above 0; parity, both one-sided tests "
             "against the stated margin pass (TOST); \"does not hurt\", the one-sided 95% bound lies above -margin; "
             "\"varies less\", the one-sided F-test on the seed variances passes at 5%",
    "reversed": "the opposite holds at this scale: superiority, the 95% interval lies below 0; parity, the 90% "
                "interval lies wholly outside the margin; \"does not hurt\", the one-sided 95% upper bound lies below "
                "-margin; \"varies less\", the opposite F-test passes",
    "underpowered": "the interval includes 0 and the paper's effect is smaller than the smallest effect these "
                    "seeds detect (80% power; a variance claim: the paper's ratio of standard deviations lies nearer 1 "
                    "than the largest ratio these seeds detect): the seeds could not have seen it",
    "not shown": "the interval includes 0 although the seeds could have seen the paper's effect, or a parity "
                 "claim's tests fail",
    "the PLM's own": "a geometry claim whose value the untrained PLM already has, within the seed spread",
    "better or worse than the PLM": "a geometry claim, beside the untrained PLM's value",
    "not tested": "no verdict: a run was still improving at its cap or kept its first evaluation, or the "
                  "component the claim is about did not engage",
    "one seed": "one seed: the difference is shown, without a verdict",
    "stale": "a record read was computed by code that has changed since: recompute",
    NOT_YET_RUN: "the chapter has not written this row at this scale",
}


def category(verdict) -> str:
    """The WORDS entry a verdict falls under (older rows' "... at this scale" wording included)."""
    text = str(verdict)
    if text.startswith(("better than the PLM", "worse than the PLM")):
        return "better or worse than the PLM"
    if text.startswith("no effect"):
        return "not shown"
    return next((word for word in WORDS if text.startswith(word)), "not tested")


def declared(chapter: str) -> dict:
    """The claims a chapter's module declares (empty for a chapter not yet converted to declarations)."""
    return getattr(importlib.import_module(f".{MODULES[chapter]}", __package__), "CLAIMS", {})


def interval_ends(text) -> tuple[float, float]:
    """The two ends of a verdict row's "[low, high]" interval (nan, nan where it has none)."""
    found = re.fullmatch(r"\[(\S+), (\S+)[\])]", str(text))
    ends = (float(found[1]), float(found[2].replace("∞", "inf"))) if found else (float("nan"), float("nan"))
    return ends if all(np.isfinite(ends)) else (float("nan"), float("nan"))


def _row(paper: str, chapter: str, scale: str, row: dict) -> dict:
    interval = row.get("interval", row.get("95% interval"))
    return {"paper": paper, "claim": row["claim"], "type": row.get("type", "superiority"),
            "paper effect": row.get("paper effect"), "ours": row.get("ours", row.get("mean difference")),
            "interval": None if "nan" in str(interval) else interval, "detectable": row.get("detectable"),
            "seeds for the paper's effect": row.get("seeds for the paper's effect"),
            "verdict": row["verdict"], "scale": scale, "seeds": row.get("seeds"), "chapter": chapter,
            "headline": bool(row.get("headline", False))}


def board(scale: str, root=None) -> pd.DataFrame:
    """One row per claim: each chapter's verdict rows at `scale` as it last wrote them, its declared claims
    without a row as "not yet run", and one "not yet run" row for an undeclared chapter with none."""
    rows = []
    for chapter, paper in CHAPTERS.items():
        path = runs.results_dir(root) / "verdicts" / f"{chapter}.{scale}.json"
        written = json.loads(path.read_text()) if path.exists() else []
        claims = declared(chapter)
        by_id = {row["id"]: row for row in written if "id" in row}
        for claim in claims.values():
            row = by_id.get(claim.id) or {"claim": claim.text, "type": claim.type, "paper effect": claim.paper_effect,
                                          "verdict": NOT_YET_RUN, "headline": claim.headline}
            rows.append(_row(paper, chapter, scale, row))
        rows += [_row(paper, chapter, scale, row) for row in written if row.get("id") not in claims]
        if not written and not claims:
            rows.append({"paper": paper, "claim": f"every claim of this chapter (run notebooks/{chapter}.ipynb at {scale})",
                         "verdict": NOT_YET_RUN, "scale": scale, "chapter": chapter, "headline": False})
    frame = pd.DataFrame(rows).reindex(columns=COLUMNS)
    for column in ("paper effect", "ours", "detectable"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return frame


def as_html(frame: pd.DataFrame) -> str:
    """The board as an HTML table, "–" for what a row lacks; each paper's name links to its chapter's verdict
    section, and the paper's headline claim is in bold."""
    shown = dashed(frame)
    shown = shown.map(lambda v: f"{v:.2f}" if isinstance(v, float) else html.escape(str(v)))
    shown["paper"] = [f'<a href="{c}.html#{SECTION}">{html.escape(p)}</a>' for p, c in zip(frame["paper"], frame["chapter"])]
    shown["claim"] = [f"<b>{c}</b>" if h is True else c for c, h in zip(shown["claim"], frame["headline"])]
    return shown.drop(columns=["chapter", "headline"]).to_html(escape=False, index=False, classes="verdict-board")


def effects(frame: pd.DataFrame) -> pd.DataFrame:
    """The board's effects in numbers, for the forest plot: per claim with a difference of ours, its paper, our
    mean difference and its interval's ends (nan for a one-seed row), the paper's effect, and whether a verdict
    was reached (a tested row) or not (one seed, a flagged run, an idle component)."""
    ends = np.array([interval_ends(v) for v in frame["interval"]]).reshape(-1, 2)
    words = frame["verdict"].map(category)
    out = pd.DataFrame({"paper": frame["paper"], "label": frame["claim"], "ours": frame["ours"], "low": ends[:, 0],
                        "high": ends[:, 1], "paper effect": frame["paper effect"],
                        "tested": ~words.isin(["not tested", "one seed", "stale", NOT_YET_RUN])})
    return out[out["ours"].notna() & ~frame["type"].isin(["geometry", "variance"]).to_numpy()].reset_index(drop=True)


def simcse_scale(frame: pd.DataFrame) -> pd.DataFrame:
    """Chapter 01's SimCSE gains, ours beside the paper's and their ratio: a rough scale for reading how large an
    effect this edition can be expected to show (a claim's paper effect times about this ratio)."""
    simcse = frame[(frame["chapter"] == "01_simcse") & frame["ours"].notna()].set_index("claim")
    table = simcse[["paper effect", "ours"]].assign(**{"ours / paper": (simcse["ours"] / simcse["paper effect"]).round(2)})
    return dashed(table)


def summary(frame: pd.DataFrame) -> dict[str, int]:
    """How many claims the board lists, and how many fall under each verdict word (they add up to the total)."""
    counts = frame["verdict"].map(category).value_counts()
    return {"claims": len(frame), **{word: int(counts.get(word, 0)) for word in WORDS}}


def landing_lines(frame: pd.DataFrame) -> str:
    """One line per paper of what the board says, as an HTML list (for the landing page, which pastes it from the
    board's page): its headline claim's verdict, and how many of its claims fall under each verdict word."""
    lines = []
    for paper, group in frame.groupby("paper", sort=False):
        counts = group["verdict"].map(category).value_counts()
        tally = ", ".join(f"{n} {word}" for word, n in counts.items())
        head = group[group["headline"]]
        lead = f"headline \"{head.iloc[0]['claim']}\": {head.iloc[0]['verdict']}; " if len(head) else ""
        lines.append(f"<li><b>{html.escape(paper)}</b>: {html.escape(lead)}{len(group)} claims ({html.escape(tally)}).</li>")
    return "<ul>" + "".join(lines) + "</ul>"


def audit(rows: list[dict]) -> list[str]:
    """What is wrong with a chapter's declared verdict rows (empty: nothing): each row names its claim type and
    the effect its seeds detect, uses a word of WORDS, and a verdict on a headline claim rests on at least
    claims.HEADLINE_SEEDS seeds. claims.judge issues no such verdict (nor one on a flagged run or an idle
    component); the headline check is here for saved rows that older code wrote."""
    from ..claims import HEADLINE_SEEDS

    problems = []
    for row in rows:
        name = row.get("id", row.get("claim"))
        if "type" not in row or "detectable" not in row:
            problems.append(f"{name}: no claim type or detectable effect (judge it with claims.judge)")
        word = category(row["verdict"])
        if not str(row["verdict"]).startswith(word) and word != "better or worse than the PLM":
            problems.append(f"{name}: verdict {row['verdict']!r} is none of the board's words")
        if row.get("headline") and word in ("holds", "reversed", "not shown", "underpowered") and row["n seeds"] < HEADLINE_SEEDS:
            problems.append(f"{name}: a headline verdict on {row['n seeds']} seeds (needs {HEADLINE_SEEDS}; a row "
                            "saved by older code: rerun the chapter)")
    return problems


def edition_hours(root=None) -> float:
    """The whole edition's compute on 2 CPU cores: the measured wall time of every record in the store (each run,
    evaluation and analysis the chapters read), a GPU-computed run counted at the CPU time per step of its kind
    (book.total_minutes)."""
    from .. import book, fingerprints

    return book.total_minutes(list(fingerprints.records(root).values())) / 60
