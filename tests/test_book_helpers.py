"""The small functions the chapters use to turn run records into tables and figures."""
import numpy as np
import pytest

from sre_repro import book, config, report
from sre_repro.chapters import sarcse as sarcse_chapter, byop as byop_chapter
from sre_repro.errors import SreError


def _run(cos=None, dev=0.0, importance=None):
    return {"metrics": {"stsb_test_cosine": cos, "stsb_dev_best": dev, "token_importance": importance}}


def test_same_budget_keeps_the_number_of_training_sentences():
    with config.cpu_recipe("fixed-budget"):  # the SARCSE chapter's until it is recomputed
        base = sarcse_chapter.same_budget("cpu", "sarcse", 64)
        assert base["max_steps"] == 100
        assert sarcse_chapter.same_budget("cpu", "sarcse", 32)["max_steps"] == 200
        big = sarcse_chapter.same_budget("cpu", "sarcse", 512)
        assert big["max_steps"] == 12 and big["batch_size"] == 512 and 1 <= big["eval_steps"] <= 12
    assert sarcse_chapter.same_budget("cpu", "sarcse", 32)["max_steps"] == 1200  # the converged recipe's cap, 600
    # the patience window holds 200 steps of batch 64 = 12,800 sentences: 25 steps (5 evaluations) at batch 512
    assert sarcse_chapter.same_budget("cpu", "sarcse", 512) == {"batch_size": 512, "max_steps": 75, "eval_steps": 5,
                                                                "patience": 5}
    assert sarcse_chapter.same_budget("cpu", "sarcse", 64)["patience"] == 40  # the preset's own: the same record


def test_cosine_spread_is_the_within_group_variance():
    gold = np.array([0.5, 0.7, 1.5, 4.5, 5.0, 4.2])
    cos = np.array([0.1, 0.3, 0.5, 0.9, 0.7, 0.8])
    table = report.cosine_spread({"m": [{**_run(cos.tolist()), "seed": 7}]}, gold)
    total = np.var(cos)
    assert table.loc["m (seed 7)", "total variance"] == pytest.approx(total)
    assert table.loc["m (seed 7)", "0-1"] == pytest.approx(np.var([0.1, 0.3]) / total)
    assert table.loc["m (seed 7)", "4-5"] == pytest.approx(np.var([0.9, 0.7, 0.8]) / total)  # 5.0 is in the last group
    assert np.isnan(table.loc["m (seed 7)", "2-3"])


def test_gold_levels_are_half_open_but_the_top_one_keeps_5():
    from sre_repro.plots import GOLD_GROUPS, gold_level
    gold = [0.0, 0.99, 1.0, 3.5, 4.0, 5.0]
    assert gold_level(gold, 0, 1).tolist() == [True, True, False, False, False, False]
    assert gold_level(gold, 1, 2).tolist() == [False, False, True, False, False, False]
    assert gold_level(gold, 4, 5).tolist() == [False, False, False, False, True, True]
    assert sum(gold_level(gold, lo, hi).sum() for lo, hi in GOLD_GROUPS) == len(gold)  # every pair in one level


def test_importance_rows_scale_each_sentence_and_invert_errors():
    run = _run(importance={"err": [[("a", 2.0), ("b", 4.0), ("c", 3.0)]]})
    rows = sarcse_chapter.importance_rows(run, "err", "x", invert=True)
    assert rows == {"x #1": [("a", 1.0), ("b", 0.0), ("c", 0.5)]}


def test_best_by_dev_picks_the_setting_with_the_best_dev_score():
    grid = {32: {"A": _run(dev=70.0)}, 64: {"A": _run(dev=72.5)}, 128: {"A": _run(dev=71.0)}}
    assert book.best_by_dev(grid, "A") == 64


def test_per_run_reads_one_record_for_each_run_of_the_method_once():
    run = lambda method, h: {"config": {"method": method}, "config_hash": h}  # noqa: E731
    groups = {"a": [run("slt_fai", "h1"), run("slt_fai", "h2")], "b": [run("consert", "h3")], "c": [run("slt_fai", "h1")]}
    read = []
    got = book.per_run(groups, "slt_fai", lambda r, data_dir: read.append(r["config_hash"]) or {"of": r["config_hash"]})
    assert got == {"h1": {"of": "h1"}, "h2": {"of": "h2"}} and read == ["h1", "h2"]


def test_grids_follow_the_scale_unless_chosen():
    assert sarcse_chapter.grid("sarcse_batch_sizes", "cpu") == [32, 64, 512]
    assert sarcse_chapter.grid("sarcse_batch_sizes", "paper") == [32, 64, 128, 192, 256, 512]
    assert sarcse_chapter.grid("sarcse_batch_sizes", "smoke") == [4, 8]
    assert byop_chapter.grid("ifm_margins", "paper", [0.02]) == [0.02]
    with pytest.raises(book.SreError, match="unknown grid"):
        sarcse_chapter.grid("margins", "cpu")


def test_rankcse_teachers_are_the_simcse_runs_of_the_other_seeds():
    from sre_repro.config import resolve
    from sre_repro.methods.rankcse import teacher_cfg

    assert byop_chapter.leave_one_out_teachers([42, 43, 44]) == {42: {"teachers": "simcse:43,simcse:44"},
                                                         43: {"teachers": "simcse:42,simcse:44"},
                                                         44: {"teachers": "simcse:42,simcse:43"}}
    assert byop_chapter.leave_one_out_teachers([1, 2]) == {1: {"teachers": "simcse:2"}, 2: {"teachers": "simcse:1"}}
    assert byop_chapter.leave_one_out_teachers([5, 6, 7, 8])[5] == {"teachers": "simcse:6,simcse:7"}  # RankCSE mixes two
    assert byop_chapter.leave_one_out_teachers([42]) == {42: {}}  # no other seed: the method's default teachers
    # fewer students than SimCSE runs (Table 3 at cpu): each student still learns from two other seeds
    assert byop_chapter.leave_one_out_teachers([42, 43], pool=[42, 43, 44]) == {42: {"teachers": "simcse:43,simcse:44"},
                                                                        43: {"teachers": "simcse:42,simcse:44"}}
    assert byop_chapter.rankcse_seeds("cpu", [42, 43, 44, 45, 46]) == [42, 43, 44]  # the secondary claims' three
    assert byop_chapter.rankcse_seeds("paper", [42, 43, 44, 45, 46]) == [42, 43, 44, 45, 46]
    assert byop_chapter.rankcse_seeds("cpu", [42, 43, 44], "[44]") == [44]  # papermill's -p rankcse_seeds "[44]"
    with pytest.raises(book.SreError, match="rankcse_seeds must be a list"):
        byop_chapter.rankcse_seeds("cpu", [42, 43, 44], "44")
    # a teacher is the very run the chapter's SimCSE row made (same resolved config, so the same weights)
    student = resolve(overrides={"method": "rankcse", "scale": "cpu", "seed": 42, "teachers": "simcse:43,simcse:44"})
    assert resolve(overrides=teacher_cfg(student, "simcse", 43)) == resolve(overrides={"method": "simcse", "scale": "cpu", "seed": 43})
    # a teacher follows its student's cpu recipe, whichever recipe is in force when it is resolved
    with config.cpu_recipe("fixed-budget"):
        pinned = resolve(overrides={"method": "rankcse", "scale": "cpu", "seed": 42, "teachers": "simcse:43"})
    assert resolve(overrides=teacher_cfg(pinned, "simcse", 43))["max_steps"] == 100
    assert resolve(overrides=teacher_cfg(student, "simcse", 43), recipe="fixed-budget")["max_steps"] == 600


def test_list_parameters_given_as_text_by_papermill_are_read_as_lists():
    # `papermill -p seeds "[1, 2, 3]"` hands the notebook the string, not a list
    assert book.seeds("cpu", "[1, 2, 3]") == [1, 2, 3]
    assert book.seeds("cpu", "") == book.PROTOCOL_SEEDS["cpu"] == [42, 43, 44, 45, 46]  # the protocol's: five
    with config.cpu_recipe("fixed-budget"):
        assert book.seeds("cpu", "") == [42, 43, 44]  # a chapter not yet recomputed keeps its three
        assert book.seeds("cpu", "", {"cpu": [1, 2]}) == [42, 43, 44]
    # a chapter whose headline needs more seeds names its own; a seed list given still wins
    assert book.seeds("cpu", "", {"cpu": [1, 2]}) == [1, 2] and book.seeds("cpu", "[7]", {"cpu": [1, 2]}) == [7]
    assert book.seeds("smoke", "", {"cpu": [1, 2]}) == [42, 43]
    assert byop_chapter.grid("byopd_perturbations", "cpu", "['n-', 'p+']") == ["n-", "p+"]
    with pytest.raises(book.SreError, match="thetas must be a list"):
        book.as_list("0.1", "thetas")
    with pytest.raises(book.SreError, match="must be a list"):
        book.seeds("cpu", "1 2")
    # `papermill -p seeds 5` hands the notebook an int
    with pytest.raises(book.SreError, match=r"seeds must be a list such as \[1, 2\], got 5: write -p seeds \"\[5\]\""):
        book.seeds("cpu", 5)


def test_quick_mode_caps_every_run_keeps_one_seed_labels_its_tables_and_saves_no_verdict(tmp_path, capsys):
    from sre_repro import runs
    from sre_repro.config import resolve

    full = resolve(overrides={"method": "sarcse", "scale": "cpu"})
    assert (full["max_steps"], full["eval_steps"], full["patience"]) == (600, 5, 40)
    slt_full = {b: resolve(overrides={"method": "slt_fai", "scale": "cpu", "backbone": b}) for b in ("consert", "simcse")}
    book.check_parameters("sarcse", {"scale": "cpu", "quick": True})  # the chapter's parameter puts it in force
    quick = resolve(overrides={"method": "sarcse", "scale": "cpu"})
    # the cap and a coarser evaluation; the recipe's lr, head_lr and rule stay (the cap binds before the rule can)
    assert (quick["max_steps"], quick["eval_steps"]) == (60, 20)
    assert {k: quick[k] for k in ("lr", "head_lr", "patience")} == {"lr": 3e-4, "head_lr": 1e-3, "patience": 40}  # sarcse: converged
    assert resolve(overrides={"method": "simcse", "scale": "cpu", "max_steps": 30})["max_steps"] == 30  # a set knob wins
    # a knob counted in steps keeps its share of the cap: SLT-FAI's discriminators warm up for 5 % (10 % with the
    # SimCSE backbone) of the 60 steps, not all of them
    for backbone, cfg in slt_full.items():
        slt = resolve(overrides={"method": "slt_fai", "scale": "cpu", "backbone": backbone})
        assert slt["aux_warmup_steps"] == round(cfg["aux_warmup_steps"] * 60 / cfg["max_steps"]) < 60
    assert slt_full["simcse"]["aux_warmup_steps"] == 60 and slt["aux_warmup_steps"] == 6
    assert resolve(overrides={"method": "slt_fai", "scale": "cpu", "aux_warmup_steps": 9})["aux_warmup_steps"] == 9
    assert resolve(overrides={"method": "simcse", "scale": "smoke"})["max_steps"] == 6  # smoke is already short
    assert book.seeds("cpu", "") == [42] and book.seeds("cpu", "[7, 8]") == [7]
    assert "QUICK MODE, a class run: one seed, every run capped at 60 steps" in report.scale_banner("cpu", quick, [42])
    report.save_verdicts("sarcse", "cpu", [{"claim": "x", "verdict": "holds"}], root=tmp_path)
    assert not (runs.results_dir(tmp_path) / "verdicts").exists()
    book._not_in_quick_mode("", "raise RuntimeError('a skipped cell must not run')")
    assert capsys.readouterr().out.strip() == book.QUICK_SKIPPED
    book.check_parameters("sarcse", {"scale": "cpu"})  # quick False (its default): full runs again
    assert resolve(overrides={"method": "sarcse", "scale": "cpu"}) == resolve(overrides={"method": "sarcse", "scale": "cpu"}, recipe="converged")
    assert book.seeds("cpu", "") == [42, 43, 44, 45, 46]


def test_time_quick_measures_a_chapter_from_nothing(tmp_path):
    import os
    import subprocess
    import sys

    script = [sys.executable, str(book.REPO_ROOT / "scripts/time_quick.py")]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([*script, "00_baselines", "--scale", "smoke"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    measured = book.quick_times()["smoke"]["00_baselines"]
    assert 0 < measured["seconds"] < 600 and measured["hardware"]["cpu_count"] == os.cpu_count()
    assert book.quick_minutes("00_baselines", "smoke") == f"{measured['seconds'] / 60:.0f} minutes from nothing on " \
        f"{os.cpu_count()} CPU core{'s' if os.cpu_count() != 1 else ''} (measured)"
    assert book.quick_minutes("paser", "smoke") == "not measured yet (scripts/time_quick.py)"
    # the chapter ran in a store of its own: nothing of it reached this one
    assert not [p for p in book.results_dir().rglob("*.json") if p.name != book.QUICK_TIMES]
    wrong = subprocess.run([*script, "99_performance"], env=env, capture_output=True, text=True, timeout=60)
    assert wrong.returncode != 0 and "no quick mode in 99_performance: choose from 00_baselines" in wrong.stderr


NOTEBOOKS = sorted(p.stem for p in (book.REPO_ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_every_notebook_parameter_has_a_type_and_one_line_of_help(notebook):
    """What `papermill --help-notebook` lists (it said "Unknown type" for every parameter before)."""
    import papermill

    params = papermill.inspect_notebook(str(book.REPO_ROOT / "notebooks" / f"{notebook}.ipynb"))
    assert params and all(p["inferred_type_name"] in ("str", "int", "float", "bool", "list") and p["help"]
                          for p in params.values()), params
    assert book.notebook_parameters(notebook) == {name: p["inferred_type_name"] for name, p in params.items()}


def test_an_unknown_notebook_parameter_stops_the_chapter_with_the_known_ones():
    import types
    namespace = {"scale": "cpu", "seeds": [], "In": [], "Out": {}, "_i1": "", "np": np, "display": print,
                 "SreError": SreError, "types": types}
    book.check_parameters("01_simcse", namespace)  # declared parameters, imports and IPython's names pass
    with pytest.raises(SreError, match=r"unknown parameter 'scal' for notebooks/01_simcse.ipynb: the known ones are "
                                       r"scale, model_name, seeds, precision, supervised, data_dir, quick, force"):
        book.check_parameters("01_simcse", {**namespace, "scal": "smoke"})
    # a value of the wrong type: "no" would read as true, "abc" would fail deep in the chapter
    with pytest.raises(SreError, match=r"parameter force of notebooks/01_simcse.ipynb takes True or False, got 'no': "
                                       r"write e.g. -p force True"):
        book.check_parameters("01_simcse", {**namespace, "force": "no"})
    with pytest.raises(SreError, match="parameter supervised_seeds of notebooks/paser.ipynb takes a whole number"):
        book.check_parameters("paser", {"supervised_seeds": "abc"})
    book.check_parameters("paser", {"supervised_seeds": 2, "seeds": "[1, 2]", "force": False, "scale": "smoke"})
    # in a notebook, the error renders as the CLI's one line instead of a traceback
    assert SreError("x")._render_traceback_() == ["sre-repro: error: x"]


def test_byop_variants_are_table_6_rows():
    cpu = byop_chapter.byop_variants("cpu")  # the stand-in takes BERT-base's row, without its batch size and lr
    assert cpu["SimCSE +BYOPC"] == {"method": "byop", "margin_type": "constant", "perturbation": "n-",
                                    "loss_mode": "single", "margin": 0.01}
    assert cpu["SimCSE +BYOPD-M"] == {"method": "byop", "margin_type": "dynamic", "perturbation": "p+n-",
                                      "loss_mode": "multi-task"}
    roberta = byop_chapter.byop_variants("paper", "roberta-base")["SimCSE +BYOPC-M"]
    assert (roberta["perturbation"], roberta["margin"], roberta["batch_size"], roberta["lr"]) == ("n-", 0.005, 128, 1e-5)
    # the notebook's dynamic_margin_axis goes to the BYOPD variants only: a BYOPC run keeps its identity
    column = byop_chapter.byop_variants("cpu", dynamic_margin_axis="column")
    assert column["SimCSE +BYOPD"]["dynamic_margin_axis"] == column["SimCSE +BYOPD-M"]["dynamic_margin_axis"] == "column"
    assert "dynamic_margin_axis" not in column["SimCSE +BYOPC"] and "dynamic_margin_axis" not in column["SimCSE +BYOPC-M"]


def test_the_default_margin_axis_keeps_the_byopd_runs_identity():
    """Passing dynamic_margin_axis=anchor (the notebook's default) names the same run as leaving it out."""
    from sre_repro import runs
    from sre_repro.config import resolve

    plain = byop_chapter.byop_variants("cpu")["SimCSE +BYOPD"]
    anchor = byop_chapter.byop_variants("cpu", dynamic_margin_axis="anchor")["SimCSE +BYOPD"]
    column = byop_chapter.byop_variants("cpu", dynamic_margin_axis="column")["SimCSE +BYOPD"]
    hashes = [runs.config_hash(resolve(overrides={"scale": "cpu", "seed": 42, **v})) for v in (plain, anchor, column)]
    assert hashes[0] == hashes[1] != hashes[2]


def _curve_run(seed, avg, best_step, curve):
    return {"seed": seed, "metrics": {"sts": {"avg": avg}, "best_step": best_step}, "dev_curve": curve}


def test_table_1_cells_say_which_seeds_they_rest_on():
    groups = {"A": [_curve_run(42, 50.0, 0, []), _curve_run(43, 52.0, 0, []), _curve_run(44, 54.0, 0, [])],
              "B": [_curve_run(42, 53.804, 0, [])]}
    assert byop_chapter.labelled_means(groups) == {"A": "52.00 (3 seeds)", "B": "53.80 (seed 42)"}


def test_paper_ablation_puts_the_top_row_under_its_perturbation():
    table = byop_chapter.paper_ablation("BERT-base")  # Table 6: BYOPD is n-, BYOPD-M is p+n-
    assert table.loc["n-", "single (Table 8)"] == 77.45 and table.loc["p+", "single (Table 8)"] == 77.25
    assert table.loc["p+n-", "multi-task (Table 9)"] == 77.35 and table.loc["n-", "multi-task (Table 9)"] == 77.29
    assert list(table.index) == ["p-n-", "p+n-", "p+", "p-", "n-"] and not table.isna().any().any()


def test_geometry_points_take_the_first_kept_and_last_evaluation():
    curve = [{"step": s, "alignment": a, "uniformity": u, **({"train_alignment": a / 2, "train_uniformity": u} if s > 10 else {})}
             for s, a, u in ((10, 0.2, -2.0), (20, 0.25, -2.3), (30, 0.3, -2.4))]
    table = byop_chapter.geometry_points({"r": _curve_run(42, 0.0, 20, curve), "none": _curve_run(42, 0.0, 20, [])})
    assert table.loc["r", ["first step", "kept step", "last step"]].tolist() == [10, 20, 30]
    assert table.loc["r", ["alignment (first)", "alignment (kept)", "alignment (last)"]].tolist() == [0.2, 0.25, 0.3]
    assert table.loc["r", "uniformity (kept)"] == -2.3 and table.loc["none"].isna().all()
    train = byop_chapter.geometry_points({"r": _curve_run(42, 0.0, 99, curve)}, prefix="train_")
    # only the points that have the keys; a kept step not on the curve falls back to the last evaluation
    assert train.loc["r", ["first step", "kept step"]].tolist() == [20, 30]
    assert train.loc["r", "alignment (first)"] == 0.125


def test_perturbation_points_move_along_the_anchor():
    points = byop_chapter.perturbation_points("tiny-random", byop_chapter.FIGURE1_SENTENCES[:4], margin=0.5)
    roles = points["role"].tolist()
    assert roles.count("anchor") == 1 and roles.count("positive") == 1 and roles.count("negative") == 3
    assert len(points) == 5 + 2 + 6  # IFM and BYOP move the positive and each negative
    positive = points[points["role"] == "positive"].iloc[0]
    ifm, byop = (points[points["role"] == f"{m} positive"].iloc[0] for m in ("IFM", "BYOP"))
    assert (ifm["from_x"], ifm["from_y"]) == pytest.approx((positive["x"], positive["y"]))
    # opposite moves of the same length: the two ends are symmetric about the positive
    assert (ifm["x"] + byop["x"]) / 2 == pytest.approx(positive["x"], abs=1e-5)
    assert (ifm["y"] + byop["y"]) / 2 == pytest.approx(positive["y"], abs=1e-5)


def test_total_minutes_counts_each_record_once():
    a = {"kind": "simcse", "config_hash": "a", "wall_seconds": 60.0}
    b = {"kind": "sarcse", "config_hash": "a", "wall_seconds": 120.0}  # same hash, other kind: distinct
    assert book.total_minutes({"x": [a, b]}, [a], {1: {"y": a}}) == pytest.approx(3.0)
    # a run computed on a GPU counts its steps at the CPU runs' seconds per step, of its evaluation interval first
    cpu = {"kind": "simcse", "config_hash": "c", "steps": 100, "wall_seconds": 600.0, "config": {"eval_steps": 20}}
    fine = {**cpu, "config_hash": "f", "wall_seconds": 900.0, "config": {"eval_steps": 5}}
    gpu = {**cpu, "config_hash": "g", "steps": 50, "wall_seconds": 9.0, "hardware": {"cuda": "NVIDIA H200"}}
    assert book.total_minutes([cpu, gpu]) == pytest.approx((600 + 50 * 6) / 60)
    assert book.total_minutes([cpu, fine, {**gpu, "config": {"eval_steps": 5}}]) == pytest.approx((600 + 900 + 50 * 9) / 60)
    assert book.total_minutes([gpu]) == pytest.approx(9 / 60)  # no CPU run of its kind: its own time
    assert [book.on_gpu(r) for r in (cpu, gpu, {**cpu, "hardware": {"cuda": None, "cpu_count": 2}})] == [False, True, False]


def test_the_needs_line_counts_cpu_and_gpu_runs_from_the_records_hardware():
    def run(key, method, minutes, cuda=None, seed=42):
        return {"config_hash": key, "seed": seed, "config": {"method": method}, "wall_seconds": 60.0 * minutes,
                "hardware": {"cuda": cuda} if cuda else {"cpu_count": 2}}

    groups = {"PaSeR": [run("a", "paser", 80), run("b", "paser", 90, seed=43)], "SimCSE": [run("c", "simcse", 5)],
              "again": [run("a", "paser", 80)], "GPU": [run("d", "paser", 3, "NVIDIA H200", seed=44)]}
    assert book.hardware_line(groups, "paser", "a PaSeR") == (
        "3 of its 4 training runs ran on a CPU (a PaSeR run, one core beside a second run: 85 minutes, median), "
        "1 on a GPU (NVIDIA H200: GPU seed 44)")
    assert book.hardware_line(groups, "paser", "a PaSeR", list_up_to=0).endswith("1 on a GPU (NVIDIA H200)")
    assert book.hardware_line({"SimCSE": groups["SimCSE"]}, "paser", "a PaSeR") == "1 of its 1 training runs ran on a CPU"


def test_which_weights_an_evaluation_tested_and_a_run_started_from_are_named():
    same = {"same": True, "weights": {"best_step": 460, "dev": 67.33, "hardware": "CPU"}, "record": None}
    sibling = {"same": False, "weights": {"best_step": 460, "dev": 67.41, "hardware": "CPU"},
               "record": {"best_step": 460, "dev": 67.33, "hardware": "CPU"}}
    gpu_run, cpu = {"hardware": {"cuda": "NVIDIA H200"}}, {"hardware": {}}
    assert book.weights_tested({"weights": same, **cpu}, gpu_run) == (True, "the run's own kept weights")
    own, tested = book.weights_tested({"weights": sibling}, cpu)
    assert not own and tested.startswith("a retrain on CPU, a sibling of the record's weights (kept STS-B dev 67.41")
    own, tested = book.weights_tested(cpu, gpu_run)  # an older evaluation
    assert not own and tested.startswith("a CPU retrain of a record computed on a GPU")
    own, tested = book.weights_tested(gpu_run, gpu_run)
    assert own and tested.startswith("the run's own kept weights, by its hardware")
    own, tested = book.weights_tested({"weights": None, **cpu}, gpu_run)  # an evaluation that could not name them
    assert not own and tested.startswith("a CPU retrain of a record computed on a GPU")

    def sup(seed, weights):
        return {"seed": seed, "starts_from": {"unsupervised": {"config_hash": "x", "created": "t", "weights": weights}}}

    assert book.start_weights([sup(42, same), sup(43, same)], "unsupervised") == "in every seed, the start run's own kept weights"
    assert book.start_weights([sup(42, sibling), sup(43, same)], "unsupervised") == (
        "seed 42: a retrain on CPU, a sibling of the record's weights (kept STS-B dev 67.41 at step 460, the record "
        "67.33 at step 460, on CPU); every other seed, the start run's own kept weights")
    assert book.start_weights([sup(42, same), {"seed": 43}], "unsupervised") == (
        "not recorded for seed 43 (records computed before runs kept it)")


def test_the_pooler_table_names_the_weights_its_rows_test():
    from sre_repro.chapters import paser as paser_chapter

    run = {"config": {"eval_pooler": "avg"}, "hardware": {}}
    sibling = {"same": False, "weights": {"best_step": 480, "dev": 67.0, "hardware": "CPU"},
               "record": {"best_step": 460, "dev": 67.33, "hardware": "CPU"}}
    assert paser_chapter.pooler_weights(run, {"weights": {**sibling, "same": True}}) == "one trained model, the run's own kept weights"
    assert paser_chapter.pooler_weights(run, {"weights": sibling}).startswith(
        "the avg row is the run's record; the other rows test a retrain on CPU, a sibling")


def test_a_verdict_table_rounds_its_numbers_and_is_marked_for_the_wrapping_css():
    from pathlib import Path

    rows = [{"id": "paser_ties_simcse", "claim": "A", "type": "equivalence", "paper effect": -0.09, "ours": 0.4712,
             "interval": "[-0.23, 1.18]", "detectable": 1.2345, "verdict": "not shown", "seeds": "42, 43, 44, 46"},
            {"id": "alignment_below_simcse", "claim": "B", "ours": 0.013149, "verdict": "holds", "seeds": "42, 44"}]
    table = report.verdict_frame(rows)
    shown = table.shown()
    assert list(shown.columns) == report.VERDICT_COLUMNS and table.frame.loc["paser_ties_simcse", "ours"] == 0.4712
    assert shown.loc["paser_ties_simcse", "detectable"] == "1.23" and shown.loc["alignment_below_simcse", "ours"] == "0.0131"
    assert list(shown["seeds"]) == ["42–44, 46", "42, 44"] and table.frame.loc["paser_ties_simcse", "seeds"] == "42, 43, 44, 46"
    assert shown.loc["alignment_below_simcse", "type"] == "–" and 'class="dataframe verdicts"' in table._repr_html_()
    css = (Path(__file__).parents[1] / "_static" / "book.css").read_text()
    assert "table.dataframe.verdicts th, .cell_output table.dataframe.verdicts td { white-space: normal;" in css


def test_the_byop_chapter_at_paper_scale_on_bert_base_is_a_valid_call():
    """`papermill notebooks/byop.ipynb out.ipynb -p scale paper -p model_name bert-base-uncased`: every run the
    chapter would start resolves to a validated config (it needs only the weights and the time to run)."""
    from sre_repro.config import resolve

    assert book.plms("paper", "bert-base-uncased") == ["bert-base-uncased"]
    assert byop_chapter.grid("byopc_margins", "paper") == [round(0.01 * k, 2) for k in range(1, 11)]
    variants = byop_chapter.byop_variants("paper", "bert-base-uncased")
    configs = [resolve(overrides={"method": m, "scale": "paper", "seed": s, "model_name": "bert-base-uncased"})
               for m in ("simcse", "ifm") for s in book.seeds("paper")]
    configs += [resolve(overrides={**settings, "scale": "paper", "model_name": "bert-base-uncased"})
                for settings in variants.values()]
    configs += [resolve(overrides={"method": "byop", "margin_type": "dynamic", "perturbation": p, "scale": "paper",
                                   "model_name": "bert-base-uncased"})
                for p in byop_chapter.grid("byopd_perturbations", "paper")]
    assert {c["model_name"] for c in configs} == {"bert-base-uncased"}
    bert_row = variants["SimCSE +BYOPD"]  # Table 6's BERT-base row: batch 64, lr 3e-5, tau 0.05
    assert (bert_row["batch_size"], bert_row["lr"], bert_row["temperature"]) == (64, 3e-5, 0.05)
    with pytest.raises(SreError, match="unknown scale 'huge'"):
        book.seeds("huge")


def test_byop_variants_are_ranked_on_dev_and_table_10_takes_the_scale_s_number():
    def runs(*dev):
        return [{"metrics": {"stsb_dev_best": d, "sts": {"avg": 99.0 - d}}} for d in dev]  # test scores disagree

    groups = {"SimCSE +BYOPC": runs(60.8, 60.6), "SimCSE +BYOPD": runs(60.9), "SimCSE +BYOPC-M": runs(60.1),
              "SimCSE +BYOPD-M": runs(61.0, 60.0)}  # mean 60.5: below BYOPC's 60.7
    ranked = book.ranked_by_dev(groups)
    assert ranked == ["SimCSE +BYOPD", "SimCSE +BYOPC", "SimCSE +BYOPD-M", "SimCSE +BYOPC-M"]
    assert byop_chapter.transfer_variants("paper", ranked) == ranked
    assert byop_chapter.transfer_variants("cpu", ranked) == ["SimCSE +BYOPD"]
    assert byop_chapter.transfer_variants("cpu", ranked, "['SimCSE +BYOPC-M']") == ["SimCSE +BYOPC-M"]  # papermill text
    with pytest.raises(SreError, match="unknown BYOP variant 'BYOPC' in transfer_variants"):
        byop_chapter.transfer_variants("cpu", ranked, ["BYOPC"])


def test_did_it_train_splits_a_wide_table_into_narrow_ones_that_keep_every_column():
    terms = {f"term{i}": {"first": 2.0, "kept": 1.0, "share_kept": 0.1} for i in range(7)}
    run = {"seed": 42, "metrics": {"best_step": 20, "geometry": {"anisotropy": 0.5}},
           "training": {"loss_first": 3.0, "loss_kept": 2.0, "terms": terms, "moved": {f"m{i}": 0.02 for i in range(6)}}}
    whole = report.training_table({"X": [run], "Y": [run]})
    split = report.did_it_train({"X": [run], "Y": [run]}, width=5)
    assert len(whole.columns) == 3 + 7 + 6 and [len(f.columns) for f in split.frames] == [3, 5, 2, 5, 1]
    assert [c for f in split.frames for c in f.columns] == list(whole.columns)
    assert all(list(f.index) == list(whole.index) for f in split.frames) and "<table" in split._repr_html_()


def test_did_it_train_shows_a_share_only_for_a_loss_term_in_the_loss():
    """SLT-FAI logs statistics beside its losses (weight 0: no share of the loss), and an auxiliary kept before its
    warm-up ends was not in the loss (its "share" is above 100 %)."""
    terms = {"at_accuracy": {"weight": 0.0, "first": 0.35, "kept": 0.93, "share_kept": 0.0},
             "loss_cl": {"weight": 0.15, "first": 4.0, "kept": 0.5, "share_kept": 0.25},
             "loss_at": {"weight": 1.0, "first": 0.75, "kept": 0.7, "share_kept": 93.3}}
    run = {"seed": 42, "metrics": {"best_step": 20, "geometry": {"anisotropy": 0.5}},
           "training": {"loss_first": 3.0, "loss_kept": 0.3, "terms": terms, "moved": {"plm": 0.02}}}
    row = report.training_table({"X": [run]}).loc["X (seed 42)"]
    assert row["loss_cl first → kept (share)"] == "4 → 0.5 (25%)"
    assert row["loss_at first → kept (share)"] == "0.75 → 0.7 (not in the loss then)"
    assert row["at_accuracy first → kept"] == "0.35 → 0.93" and "at_accuracy first → kept (share)" not in row
    split = report.did_it_train({"X": [run]})
    assert list(split.frames[1].columns) == ["loss_cl first → kept (share)", "loss_at first → kept (share)",
                                             "at_accuracy first → kept"]


def test_a_chapter_says_so_while_its_longer_cap_waits_for_its_runs(monkeypatch):
    from sre_repro import book, settings
    from sre_repro.config import cpu_recipe

    monkeypatch.setattr(settings, "CAPS_PENDING", {"byop": {"max_steps": 1200}})  # BYOP's cap is 600
    with cpu_recipe("converged"):
        note = book.pending_cap("byop", "cpu")
        assert "a cap of 1200 steps" in note and "reads its 600-step runs" in note
        assert book.pending_cap("simcse", "cpu") == "" and book.pending_cap("byop", "smoke") == ""
    with cpu_recipe("fixed-budget"):
        assert book.pending_cap("byop", "cpu") == ""
