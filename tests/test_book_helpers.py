"""The small functions the chapters use to turn run records into tables and figures."""
import numpy as np
import pytest

from sre_repro import book


def _run(cos=None, dev=0.0, importance=None):
    return {"metrics": {"stsb_test_cosine": cos, "stsb_dev_best": dev, "token_importance": importance}}


def test_same_budget_keeps_the_number_of_training_sentences():
    base = book.same_budget("cpu", "sarcse", 64)
    assert base["max_steps"] == 100
    assert book.same_budget("cpu", "sarcse", 32)["max_steps"] == 200
    big = book.same_budget("cpu", "sarcse", 512)
    assert big["max_steps"] == 12 and big["batch_size"] == 512 and 1 <= big["eval_steps"] <= 12


def test_cosine_spread_is_the_within_group_variance():
    gold = np.array([0.5, 0.7, 1.5, 4.5, 5.0, 4.2])
    cos = np.array([0.1, 0.3, 0.5, 0.9, 0.7, 0.8])
    table = book.cosine_spread({"m": _run(cos.tolist())}, gold)
    assert table.loc["m", "0-1"] == pytest.approx(np.var([0.1, 0.3]))
    assert table.loc["m", "4-5"] == pytest.approx(np.var([0.9, 0.7, 0.8]))  # 5.0 belongs to the last group
    assert np.isnan(table.loc["m", "2-3"])


def test_importance_rows_scale_each_sentence_and_invert_errors():
    run = _run(importance={"err": [[("a", 2.0), ("b", 4.0), ("c", 3.0)]]})
    rows = book.importance_rows(run, "err", "x", invert=True)
    assert rows == {"x #1": [("a", 1.0), ("b", 0.0), ("c", 0.5)]}


def test_best_by_dev_picks_the_setting_with_the_best_dev_score():
    grid = {32: {"A": _run(dev=70.0)}, 64: {"A": _run(dev=72.5)}, 128: {"A": _run(dev=71.0)}}
    assert book.best_by_dev(grid, "A") == 64
