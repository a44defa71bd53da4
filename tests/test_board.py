"""The verdict board: it lists exactly the verdict rows the chapters wrote, each declared claim of a chapter
(even one not yet run), "not yet run" for an undeclared chapter with none, and counts that add up."""
import html
import json
import re

import numpy as np
import pytest

from sre_repro import claims, protocol, report
from sre_repro.chapters import board
from sre_repro.chapters import simcse as simcse_chapter


@pytest.fixture(autouse=True)
def undeclared_paser(monkeypatch):
    """These tests write rows for a chapter that declares no claims: PaSeR's rows stand in for one (its module now
    declares them)."""
    declared = board.declared
    monkeypatch.setattr(board, "declared", lambda chapter: {} if chapter == "paser" else declared(chapter))


def test_board_lists_the_rows_a_chapter_wrote_and_marks_the_rest_not_yet_run():
    rows = [report.paper_effect(report.verdict([1.0, 2.0, 3.0], "A & B beat C"), np.float64(1.52), [42, 43, 44]),
            {"claim": "B has a lower seed variance", "type": "variance", "ours": 0.07, "verdict": "holds"}]
    report.save_verdicts("paser", "smoke", rows[:1], rows[1:])
    frame = board.board("smoke")
    paser = frame[frame["chapter"] == "paser"]
    assert list(paser["claim"]) == ["A & B beat C", "B has a lower seed variance"]
    first = paser.iloc[0]
    assert (first["paper effect"], first["ours"], first["interval"]) == (1.52, 2.0, "[-0.48, 4.48]")
    assert first["seeds"] == "42, 43, 44" and first["scale"] == "smoke"
    assert paser.iloc[1]["interval"] != paser.iloc[1]["interval"]  # NaN ("–" on the page): a variance verdict has no interval: shown "–", never "[nan, nan]"
    # a chapter with declared claims lists each of them, not yet run; an undeclared one gets one row
    simcse = frame[frame["chapter"] == "01_simcse"]
    assert list(simcse["claim"]) == [c.text for c in simcse_chapter.CLAIMS.values()]
    assert set(simcse["verdict"]) == {board.NOT_YET_RUN} and simcse["headline"].sum() == 1
    undeclared = [c for c in board.CHAPTERS if c != "paser" and not board.declared(c)]
    assert all((frame["chapter"] == c).sum() == 1 for c in undeclared)
    counts = board.summary(frame)
    assert counts["claims"] == len(frame) == sum(n for word, n in counts.items() if word != "claims")
    # the F-test holds; [1, 2, 3] spans 0, and three seeds of sd 1 detect only ~4.3 points > the paper's 1.52
    assert counts["holds"] == 1 and counts["underpowered"] == 1
    assert paser.iloc[0]["detectable"] == pytest.approx(protocol.detectable_effect(1.0, 3), abs=0.005)


def test_a_declared_claims_row_replaces_its_not_yet_run_line():
    claim = simcse_chapter.CLAIMS["dropout_beats_no_dropout"]
    row = claims.judge(claim, [10.0, 12.0, 11.0], [], {"dropout noise": (True, "")})
    report.save_verdicts("01_simcse", "smoke", [row])
    simcse = board.board("smoke").query("chapter == '01_simcse'").set_index("claim")
    assert simcse.loc[claim.text, "verdict"] == "holds" and simcse.loc[claim.text, "type"] == "superiority"
    assert simcse.loc[claim.text, "detectable"] == row["detectable"]
    assert (simcse["verdict"] == board.NOT_YET_RUN).sum() == len(simcse_chapter.CLAIMS) - 1
    lines = re.findall(r"<li>(.*?)</li>", html.unescape(board.landing_lines(board.board("smoke"))))
    assert lines[1].startswith('<b>SimCSE</b>: headline "unsup SimCSE beats the PLM\'s raw [CLS]": not yet run; 5 claims')


def test_board_html_links_each_chapter_and_escapes_claims():
    report.save_verdicts("paser", "smoke", [report.verdict([1.0, 2.0], "A <& B")])
    page = board.as_html(board.board("smoke"))
    assert '<a href="paser.html#verdicts-at-this-scale">PaSeR</a>' in page and "A &lt;&amp; B" in page
    assert '<a href="byop.html#verdicts-at-this-scale">BYOP</a>' in page and "nan" not in page


def test_effects_parse_our_interval_and_keep_rows_with_a_difference():
    assert board.interval_ends("[-0.48, 4.48]") == (-0.48, 4.48)
    assert all(np.isnan(board.interval_ends(v)).all() for v in (None, float("nan"), "–", "[0.10, ∞)"))
    report.save_verdicts("paser", "smoke", [report.paper_effect(report.verdict([1.0, 2.0, 3.0], "A"), 1.5, [1, 2, 3]),
                                             report.paper_effect(report.verdict([1.0], "C"), 1.0, [1]),
                                             {"claim": "B", "type": "variance", "ours": 0.07, "verdict": "holds"}])
    effects = board.effects(board.board("smoke")).set_index("label")
    assert tuple(effects.loc["A", ["ours", "low", "high", "paper effect"]]) == (2.0, -0.48, 4.48, 1.5)
    assert effects.loc["A", "tested"] and not effects.loc["C", "tested"]  # one seed: drawn hollow, no bar
    assert "B" not in effects.index  # a variance verdict has no difference to plot


def test_the_audit_names_rows_without_a_type_an_unknown_word_or_a_thin_headline():
    good = claims.judge(simcse_chapter.CLAIMS["dropout_beats_no_dropout"], [10.0, 12.0, 11.0], [], {"dropout noise": (True, "")})
    assert board.audit([good]) == []
    old = report.verdict([1.0, 2.0, 3.0], "A beats B")
    thin = {**good, "id": "h", "headline": True, "verdict": "holds"}
    odd = {**good, "id": "o", "verdict": "probably fine"}
    assert board.audit([old, thin, odd]) == ["A beats B: no claim type or detectable effect (judge it with claims.judge)",
                                             "h: a headline verdict on 3 seeds (needs 5; a row saved by older code: rerun the chapter)",
                                             "o: verdict 'probably fine' is none of the board's words"]
    headline = simcse_chapter.CLAIMS["simcse_beats_raw_cls"]
    assert claims.judge(headline, [40.0, 41.0, 42.0], []).get("verdict") == \
        "not tested: a headline claim rests on at least 5 seeds, this on 3"


def test_the_edition_hours_sum_every_record_and_count_a_gpu_run_at_the_cpu_time_per_step(tmp_path):
    from sre_repro import runs

    def record(name, steps, seconds, cuda=None, kind="simcse"):
        path = runs.results_dir(tmp_path) / kind / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"config_hash": name, "kind": kind, "config": {"eval_steps": 20}, "steps": steps,
                                    "wall_seconds": seconds, "hardware": {"cuda": cuda}}))

    record("cpu", 100, 360.0)  # 3.6 s a step on the CPU
    record("gpu", 50, 10.0, cuda="NVIDIA H200")  # counted as 50 x 3.6 s, not its 10 GPU seconds
    record("eval", None, 90.0, kind="eval")  # an evaluation: its wall time
    (runs.results_dir(tmp_path) / "verdicts").mkdir()
    (runs.results_dir(tmp_path) / "verdicts" / "x.cpu.json").write_text("[]")  # not a record
    assert board.edition_hours(tmp_path) == pytest.approx((360 + 180 + 90) / 3600)
