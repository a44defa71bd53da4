"""The verdict board, the page after the landing page: every claim the chapters judge, with the paper's effect,
ours with its interval, the verdict and the scale. Its rows are the verdict tables each chapter writes when it
runs (`report.save_verdicts`), never typed here; the headline claims of the chapters still to be written appear
as "not yet run", with the paper's effect from its own table."""
from __future__ import annotations

import html
import json
import re

import numpy as np
import pandas as pd

from .. import runs

# chapter notebook -> the paper whose claims it judges, in the book's order
CHAPTERS = {"00b_stand_in_plm": "SimCSE (on the stand-in PLM)", "01_simcse": "SimCSE", "sarcse": "SARCSE", "byop": "BYOP",
            "pt_bert": "PT-BERT", "slt_fai": "SLT-FAI", "paser": "PaSeR"}
SECTION = "verdicts-at-this-scale"  # the anchor of every chapter's "Verdicts at this scale" heading
NOT_YET_RUN = "not yet run"
COLUMNS = ["paper", "claim", "paper effect", "ours", "95% interval", "verdict", "scale", "seeds", "chapter"]


# The headline claims of the chapters not written yet: paper -> (its issue, [(claim, the paper's effect)]).
# A chapter's entry goes when the chapter comes; from then on its own verdict rows stand in its place.
# (Every chapter is written: PaSeR's, the last, came with issue 17.)
PENDING: dict[str, tuple[int, list[tuple[str, float]]]] = {}


def interval_ends(text) -> tuple[float, float]:
    """The two ends of a verdict row's "[low, high]" interval (nan, nan where it has none)."""
    found = re.fullmatch(r"\[(\S+), (\S+)\]", str(text))
    return (float(found[1]), float(found[2])) if found else (float("nan"), float("nan"))


def board(scale: str, root=None) -> pd.DataFrame:
    """One row per claim: each chapter's verdict rows at `scale` as it last wrote them, a "not yet run" row for
    a chapter with none at that scale, and the pending chapters' headline claims."""
    rows = []
    for chapter, paper in CHAPTERS.items():
        path = runs.results_dir(root) / "verdicts" / f"{chapter}.{scale}.json"
        if not path.exists():
            rows.append({"paper": paper, "claim": f"every claim of this chapter (run notebooks/{chapter}.ipynb at {scale})",
                         "verdict": NOT_YET_RUN, "scale": scale, "chapter": chapter})
            continue
        for row in json.loads(path.read_text()):
            rows.append({"paper": paper, "claim": row["claim"], "paper effect": row.get("paper effect"),
                         "ours": row.get("mean difference"), "95% interval": row.get("95% interval"),
                         "verdict": row["verdict"], "scale": scale, "seeds": row.get("seeds"), "chapter": chapter})
    for paper, (issue, claims) in PENDING.items():
        rows += [{"paper": paper, "claim": claim, "paper effect": gain, "verdict": NOT_YET_RUN,
                  "chapter": f"issue {issue}"} for claim, gain in claims]
    return pd.DataFrame(rows).reindex(columns=COLUMNS)


def as_html(frame: pd.DataFrame) -> str:
    """The board as an HTML table; each paper's name links to its chapter's verdict section (a pending
    chapter's name says which issue will bring it)."""
    shown = frame.astype(object).where(frame.notna(), "–")
    shown = shown.map(lambda v: f"{v:.2f}" if isinstance(v, float) else html.escape(str(v)))
    shown["paper"] = [f'<a href="{c}.html#{SECTION}">{html.escape(p)}</a>' if c in CHAPTERS else f"{html.escape(p)} ({c})"
                      for p, c in zip(frame["paper"], frame["chapter"])]
    return shown.drop(columns="chapter").to_html(escape=False, index=False, classes="verdict-board")


def effects(frame: pd.DataFrame) -> pd.DataFrame:
    """The board's effects in numbers, for the forest plot: our mean difference and its interval's ends, and the
    paper's effect, one row per claim that has at least one of them."""
    ends = np.array([interval_ends(v) for v in frame["95% interval"]]).reshape(-1, 2)
    out = pd.DataFrame({"label": frame["paper"] + ": " + frame["claim"],
                        "ours": pd.to_numeric(frame["ours"], errors="coerce"), "low": ends[:, 0], "high": ends[:, 1],
                        "paper": pd.to_numeric(frame["paper effect"], errors="coerce")})
    return out[out["ours"].notna() | out["paper"].notna()].reset_index(drop=True)


def summary(frame: pd.DataFrame) -> dict[str, int]:
    """How many claims the board lists, how many hold, and how many are not yet run."""
    verdicts = frame["verdict"].astype(str)
    return {"claims": len(frame), "holds": int(verdicts.str.startswith("holds").sum()),
            "not tested": int(verdicts.str.startswith("not tested").sum()), "not yet run": int((verdicts == NOT_YET_RUN).sum())}
