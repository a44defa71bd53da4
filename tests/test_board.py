"""The verdict board: it lists exactly the verdict rows the chapters wrote, "not yet run" for the rest."""
import numpy as np

from sre_repro import report
from sre_repro.chapters import board


def test_board_lists_the_rows_a_chapter_wrote_and_marks_the_rest_not_yet_run():
    rows = [report.paper_effect(report.verdict([1.0, 2.0, 3.0], "A & B beat C"), np.float64(1.52), [42, 43, 44]),
            report.variance_verdict([1.0, 2.0, 4.0], [1.0, 1.1, 1.2], "B has a lower seed variance")]
    report.save_verdicts("sarcse", "smoke", rows[:1], rows[1:])
    frame = board.board("smoke")
    sarcse = frame[frame["chapter"] == "sarcse"]
    assert list(sarcse["claim"]) == ["A & B beat C", "B has a lower seed variance"]
    first = sarcse.iloc[0]
    assert (first["paper effect"], first["ours"], first["95% interval"]) == (1.52, 2.0, "[-0.48, 4.48]")
    assert first["seeds"] == "42, 43, 44" and first["scale"] == "smoke"
    # a chapter that has not run at this scale: one "not yet run" row; nothing read from another scale
    others = frame[frame["chapter"].isin([c for c in board.CHAPTERS if c != "sarcse"])]
    assert len(others) == len(board.CHAPTERS) - 1 and set(others["verdict"]) == {board.NOT_YET_RUN}
    assert set(board.board("cpu")["verdict"]) == {board.NOT_YET_RUN}
    # the chapters still to come (none since PaSeR's): their headline claims with the paper's effect
    pending = frame[frame["chapter"].str.startswith("issue")]
    assert len(pending) == sum(len(claims) for _, claims in board.PENDING.values()) == 0
    assert list(sarcse["verdict"].str[:10]) == ["not shown ", "holds at t"]  # F-test: variances 2.33 vs 0.01
    assert board.summary(frame) == {"claims": len(frame), "holds": 1, "not tested": 0,
                                    "not yet run": len(board.CHAPTERS) - 1 + len(pending)}


def test_board_html_links_each_chapter_and_escapes_claims():
    report.save_verdicts("byop", "smoke", [report.verdict([1.0, 2.0], "A <& B")])
    page = board.as_html(board.board("smoke"))
    assert '<a href="byop.html#verdicts-at-this-scale">BYOP</a>' in page and "A &lt;&amp; B" in page
    assert '<a href="paser.html#verdicts-at-this-scale">PaSeR</a>' in page


def test_effects_parse_our_interval_and_keep_rows_with_an_effect():
    assert board.interval_ends("[-0.48, 4.48]") == (-0.48, 4.48)
    assert all(np.isnan(board.interval_ends(v)).all() for v in (None, float("nan"), "–"))
    report.save_verdicts("sarcse", "smoke", [report.paper_effect(report.verdict([1.0, 2.0, 3.0], "A"), 1.5, [1, 2, 3]),
                                             report.variance_verdict([1.0, 2.0, 4.0], [1.0, 1.1, 1.2], "B")])
    effects = board.effects(board.board("smoke"))
    row = effects[effects["label"] == "SARCSE: A"].iloc[0]
    assert (row["ours"], row["low"], row["high"], row["paper"]) == (2.0, -0.48, 4.48, 1.5)
    assert "SARCSE: B" not in set(effects["label"])  # a variance verdict has no difference to plot
    assert effects["paper"].notna().sum() >= sum(len(claims) for _, claims in board.PENDING.values())
