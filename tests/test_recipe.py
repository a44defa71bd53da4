"""The cpu recipe's machinery: parameter groups, what every run records about whether it trained, resuming
with two groups, run identity with later knobs, the smoke subset, and the study's choices."""
import numpy as np
import pytest
import torch

from sre_repro import runs
from sre_repro.config import resolve
from sre_repro.settings import CAPS_PENDING, CPU_RECIPES
from sre_repro.train import Interrupted, parameter_groups, relative_change, train, training_summary

SARCSE = {"method": "sarcse", "scale": "smoke", "head_lr": 1e-2, "head_warmup_ratio": 0.5}


def _sarcse(cfg_overrides=None):
    from sre_repro.methods import get_method
    cfg = resolve(overrides={**SARCSE, **(cfg_overrides or {})})
    return get_method("sarcse").build(cfg, "cpu"), cfg


def test_added_modules_get_head_lr_and_the_plm_gets_lr():
    method, cfg = _sarcse()
    groups = parameter_groups(method, cfg)
    assert [g["name"] for g in groups] == ["plm", "added"]
    plm, added = groups
    assert plm["lr"] == cfg["lr"] == 1e-4 and added["lr"] == 1e-2
    assert {id(p) for p in added["params"]} == {id(p) for p in method.autoencoder.parameters()}
    assert {id(p) for p in plm["params"]} == {id(p) for p in method.encoder.model.parameters()}
    assert added["warmup_ratio"] == 0.5 and plm["warmup_ratio"] == 0.0
    # head_lr unset means lr (the config holds the value); a method without added modules keeps one group
    cfg = resolve(overrides={"method": "sarcse", "scale": "smoke"})
    assert cfg["head_lr"] == cfg["lr"] and cfg["head_warmup_ratio"] == cfg["warmup_ratio"]
    from sre_repro.methods import get_method
    simcse_cfg = resolve(overrides={"method": "simcse", "scale": "smoke", "pooler": "avg", "eval_pooler": "avg"})
    assert [g["name"] for g in parameter_groups(get_method("simcse").build(simcse_cfg, "cpu"), simcse_cfg)] == ["plm"]


def test_each_group_follows_its_own_schedule(tmp_path):
    """After a run the optimiser's groups ran at their own rates: the added group warmed up over half the steps."""
    from sre_repro.train import linear_schedule
    plm, head = linear_schedule(0.0, 6), linear_schedule(0.5, 6)
    assert [plm(s) for s in range(6)] == pytest.approx([1, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6])
    assert [head(s) for s in range(6)] == pytest.approx([0, 1 / 3, 2 / 3, 1, 2 / 3, 1 / 3])


def test_summary_shares_and_movement_equal_a_hand_computation():
    curve = [{"step": 3, "loss": 2.0, "contrastive": 1.0, "reconstruction": 4.0, "moved/cnn": 0.5, "moved/plm": 0.01},
             {"step": 6, "loss": 1.5, "contrastive": 0.5, "reconstruction": 2.0, "moved/cnn": 0.7, "moved/plm": 0.02}]
    first = {"loss": 3.0, "contrastive": 2.0, "reconstruction": 4.0}
    summary = training_summary(curve, 3, first, {"contrastive": 1.0, "reconstruction": 0.25}, ["cnn", "plm"])
    assert summary["kept_step"] == 3 and summary["loss_first"] == 3.0 and summary["loss_kept"] == 2.0
    rec = summary["terms"]["reconstruction"]
    assert (rec["first"], rec["kept"]) == (4.0, 4.0)
    assert rec["share_first"] == pytest.approx(0.25 * 4 / 3) and rec["share_kept"] == pytest.approx(0.25 * 4 / 2)
    assert summary["terms"]["contrastive"]["share_kept"] == pytest.approx(0.5)
    assert summary["moved"] == {"cnn": 0.5, "plm": 0.01}
    a, b = torch.tensor([3.0, 4.0]), torch.tensor([3.0, 5.0])
    assert relative_change(b, a) == pytest.approx(1 / 5)


def test_a_toy_run_records_what_its_modules_did(tmp_path):
    r = train(SARCSE, results_root=tmp_path / "r", work_root=tmp_path / "w")
    t = r["training"]
    assert t["kept_step"] == r["metrics"]["best_step"]
    assert set(t["moved"]) == {"text_cnns", "cnn", "cnn_t", "text_cnns_t", "plm"}
    assert all(v > 0 for v in t["moved"].values())
    # the added modules at 100x the PLM's lr move far more than the PLM
    assert t["moved"]["text_cnns"] > 10 * t["moved"]["plm"]
    kept = next(p for p in r["dev_curve"] if p["step"] == t["kept_step"])
    for name, weight in (("contrastive", 1.0), ("reconstruction", 2.5e-4), ("reconstruction_plus", 2.5e-4)):
        assert t["terms"][name]["weight"] == weight
        assert t["terms"][name]["share_kept"] == pytest.approx(weight * kept[name] / kept["loss"])
    shares = sum(term["share_kept"] for term in t["terms"].values())
    assert shares == pytest.approx(1.0, abs=1e-6)  # the loss is exactly its weighted terms


def test_a_run_with_added_modules_resumes_to_identical_numbers(tmp_path):
    whole = train(SARCSE, results_root=tmp_path / "a", work_root=tmp_path / "wa")
    kwargs = dict(results_root=tmp_path / "b", work_root=tmp_path / "wb")
    with pytest.raises(Interrupted):
        train({**SARCSE, "checkpoint_steps": 2}, interrupt_at_step=4, **kwargs)
    resumed = train({**SARCSE, "checkpoint_steps": 2}, **kwargs)
    assert resumed["metrics"]["sts"] == whole["metrics"]["sts"]
    assert resumed["dev_curve"] == whole["dev_curve"]
    assert resumed["training"] == whole["training"]


def test_a_schema_1_config_migrates_to_the_values_it_ran_with():
    cfg = resolve(overrides={"method": "sarcse", "scale": "smoke"})
    old = {**cfg, "head_lr": 0.0, "head_warmup_ratio": -1.0}
    assert runs.migrate_config("sarcse", old) == cfg
    derived = {"run": old, "run_code": "ab12", "model_name": "x", "map_cutoff": "full"}
    assert runs.migrate_config("retrieval", derived) == {"run": cfg, "model_name": "x", "map_cutoff": "full", "max_pairs": 0}


def test_smoke_scores_a_fixed_evenly_spaced_subset():
    from sre_repro.data.sts import StsPairs
    from sre_repro.evaluate.sts import evenly_spaced
    pairs = StsPairs([f"a{i}" for i in range(10)], [f"b{i}" for i in range(10)], np.arange(10.0))
    sub = evenly_spaced(pairs, 4)
    assert sub.sent1 == ["a0", "a3", "a6", "a9"] and list(sub.gold) == [0, 3, 6, 9]
    assert evenly_spaced(pairs, 0) is pairs and evenly_spaced(pairs, 20) is pairs


def test_the_study_picks_on_dev_and_prefers_the_cheaper_on_ties():
    from sre_repro.chapters import recipe
    run = lambda dev: {"metrics": {"stsb_dev_best": dev}}
    assert recipe.chosen_plm({(3e-5, 100): run(60.0), (1e-4, 100): run(62.3), (1e-4, 300): run(62.3)}) == (1e-4, 100)
    # a longer setting that scores higher is shown but not chosen when it is over the edition's step budget
    grid = {(3e-5, 100): run(60.0), (1e-4, 100): run(62.1), (1e-4, 300): run(62.5)}
    assert recipe.chosen_plm(grid) == (1e-4, 300) and recipe.chosen_plm(grid, max_steps=100) == (1e-4, 100)
    assert recipe.chosen_setting({1e-4: run(50.0), 1e-3: run(51.0), 1e-2: run(51.0)}) == 1e-3


def test_the_cpu_recipes_equal_what_the_committed_studies_chose(monkeypatch):
    """The committed records (results/) decide both cpu recipes: the convergence study the converged one (every
    preset of every method follows it, a cap still waiting for its chapter's runs aside), the earlier fixed-budget
    study the recipe of its own runs. Read them and choose as the appendix does."""
    from sre_repro import config
    from sre_repro.chapters import recipe
    monkeypatch.setenv("SRE_REPRO_RESULTS", str(runs.REPO_ROOT / "results"))  # read only
    beside = recipe.presets_beside_study(recipe.study_records("cpu"), "cpu")
    pending = beside["recompute at the chosen cap"] == "pending"
    assert (beside["follows the study"] | pending).all(), beside[~beside["follows the study"]].to_dict("index")
    # a method waits for its chapter's recompute only at the cap the study chose (every other preset follows it)
    assert set(beside.index[pending]) == set(CAPS_PENDING), beside[pending].to_dict("index")
    assert all(beside.loc[m, "cap"] == f"600 / {knobs['max_steps']}" for m, knobs in CAPS_PENDING.items())
    with config.cpu_recipe("fixed-budget"):
        stored = {key: runs.read("simcse", resolve(overrides=o)) for key, o in recipe.plm_settings("cpu").items()}
        assert all(stored.values()), "results/ lacks study runs: execute notebooks/cpu_recipe.ipynb at cpu"
        lr, steps = recipe.chosen_plm(stored, recipe.STEP_BUDGET["cpu"])
        preset = resolve(overrides={"method": "simcse", "scale": "cpu"})
        assert (preset["lr"], preset["max_steps"], preset["patience"]) == (lr, steps, 0)
        for method in recipe.ADDED_MODULE_METHODS:
            heads = {h: runs.read(method, resolve(overrides=o)) for h, o in recipe.head_settings(method, "cpu", lr, steps).items()}
            assert all(heads.values()), f"results/ lacks the {method} head_lr study runs"
            cfg = resolve(overrides={"method": method, "scale": "cpu"})
            assert (cfg["lr"], cfg["max_steps"], cfg["head_lr"]) == (lr, steps, recipe.chosen_setting(heads))
    # a chapter puts its recipe in force; a config resolved outside one has the converged recipe
    assert resolve(overrides={"method": "simcse", "scale": "cpu"})["max_steps"] == 600


def test_the_pending_recipe_is_the_converged_one_at_each_waiting_methods_chosen_cap():
    """fill_records computes the waiting chapters' runs under the "pending" recipe: a pending method's presets are the
    converged ones at its cap, with the knobs counted in steps at their share of it (recipe.at_cap: SLT-FAI's
    discriminator warm-up, 60 of 1200 steps); every other method, and SLT-FAI's SimCSE block, keep theirs."""
    from sre_repro.chapters import recipe
    from sre_repro.settings import CPU_RECIPES

    assert set(CPU_RECIPES["pending"]) == set(CPU_RECIPES["converged"])  # with no cap waiting, the same recipe
    for method in CPU_RECIPES["converged"]:
        base = {"method": method, "scale": "cpu"}
        converged, pending = resolve(overrides=base, recipe="converged"), resolve(overrides=base, recipe="pending")
        want = recipe.at_cap(converged, CAPS_PENDING[method]["max_steps"]) if method in CAPS_PENDING else converged
        assert pending == want, method
    slt = resolve(overrides={"method": "slt_fai", "scale": "cpu"}, recipe="pending")
    assert slt["aux_warmup_steps"] == round(0.05 * slt["max_steps"])  # its share, wherever its cap stands
    assert recipe.at_cap({"method": "slt_fai", "scale": "cpu"}, 2400) == {"method": "slt_fai", "scale": "cpu", "max_steps": 2400,
                                                                          "aux_warmup_steps": 120}
    simcse_block = {"method": "slt_fai", "scale": "cpu", "backbone": "simcse"}
    assert resolve(overrides=simcse_block, recipe="pending") == resolve(overrides=simcse_block, recipe="converged")


def test_a_schema_2_record_keeps_its_fingerprint_under_its_schema_3_name(tmp_path):
    """Schema 3 adds `packed` (and PaSeR's `supervised`): a record and its variant's fingerprint move to the new
    names together, so the record stays valid exactly while the variant computes what it did."""
    new = resolve(overrides={"method": "simcse", "scale": "smoke"})
    old = {k: v for k, v in new.items() if k != "packed"}
    (old_id,), (new_id,) = runs.variants("simcse", old), runs.variants("simcse", new)
    assert old_id != new_id
    runs.write_json_atomic(runs.fingerprint_path(old_id, tmp_path),
                           {"kind": "simcse", "probe_config": old, "variant": old, "numbers": {}, "fingerprint": "f1"})
    runs.write_json_atomic(runs.run_path("simcse", old, tmp_path),
                           {"kind": "simcse", "config": old, "schema": 2, "fingerprints": {old_id: "f1"},
                            "model_fingerprint": None, "metrics": {"sts": {"avg": 1.0}}})
    runs.migrate_store(tmp_path)
    record = runs.read("simcse", new, tmp_path)
    assert record["schema"] == runs.SCHEMA and record["fingerprints"] == {new_id: "f1"} and record["stale"] is False
    assert runs.committed_fingerprint(new_id, tmp_path) == "f1" and not runs.fingerprint_path(old_id, tmp_path).exists()
    runs.write_json_atomic(runs.fingerprint_path(new_id, tmp_path), {"fingerprint": "f2"})  # packing moved its numbers
    assert runs.read("simcse", new, tmp_path)["stale"] is True
    supervised = resolve(overrides={"method": "paser", "scale": "smoke", "supervised": True, "train_data": "snli"})
    assert runs.migrate_config("paser", {k: v for k, v in supervised.items() if k not in ("packed", "supervised")}) == supervised


def test_the_convergence_study_applies_each_candidate_rule_to_the_curves_prefix():
    from sre_repro.chapters import recipe
    curve = [{"step": 20 * (i + 1), "stsb_dev": v} for i, v in enumerate([50.0, 55.0, 56.0, 56.05, 55.0, 55.5, 57.0, 56.0])]
    # patience 3 at delta 0.1: 56.05 gains only 0.05, so three evaluations after step 60 it stops at step 120
    assert recipe.rule_outcome(curve, 3, 0.1) == (120, 56.05)
    assert recipe.rule_outcome(curve, 2, 0.0) == (120, 56.05)  # 56.05 counts as a gain: stops two later
    assert recipe.rule_outcome(curve, 10, 0.0) == (160, 57.0)  # never fires: the whole curve
    run = {"dev_curve": curve, "metrics": {"stsb_dev_best": 57.0}, "config_hash": "a"}
    table = recipe.rule_table({"a": run})
    short = table[(table["patience"] == 3) & (table["min_delta"] == 0.1)].iloc[0]
    assert short["largest shortfall"] == 0.95 and not short["within tolerance"] and short["mean steps"] == 120
    # only the rules that reach step 140 keep 57; all of them train the whole curve: the most patient is chosen
    assert recipe.chosen_rule(table) == (10, 0.0)
    assert recipe.chosen_rule(recipe.rule_table({"a": {**run, "metrics": {"stsb_dev_best": 56.2}}})) == (3, 0.1)
    # a run the study names twice (an lr run at the prior head_lr is also its head_lr grid's run) counts once
    flat = {"dev_curve": [{**p, "stsb_dev": 50.0} for p in curve], "metrics": {"stsb_dev_best": 50.0}, "config_hash": "b"}
    twice = recipe.rule_table({"a": run, "a, head_lr": run, "b": flat})
    assert twice[(twice["patience"] == 3) & (twice["min_delta"] == 0.1)].iloc[0]["mean steps"] == (120 + 80) / 2
    overrides = recipe.study_overrides("sarcse", "cpu", 3e-5)
    assert overrides["head_lr"] == recipe.PRIOR_HEAD_LR["cpu"]["sarcse"] and overrides["patience"] == 10
    assert "head_lr" not in recipe.study_overrides("simcse", "cpu", 3e-5)
    assert recipe.chosen_setting({1e-4: run, 3e-5: {"metrics": {"stsb_dev_best": 57.0}}}) == 3e-5  # ties: smaller


def test_the_appendix_tables_keep_their_own_columns():
    """The fixed-budget grid's table (loss, movement, test average) and the convergence study's (flag) are distinct."""
    from sre_repro.chapters import recipe
    record = {"metrics": {"stsb_dev_best": 61.234, "best_step": 40, "geometry": {"anisotropy": 0.51234},
                          "sts": {"avg": 55.555}}, "steps": 100,
              "training": {"loss_first": 2.0, "loss_kept": 0.5, "moved": {"plm": 0.0123}},
              "config": {"max_steps": 100, "patience": 2, "min_delta": 0.0},
              "dev_curve": [{"step": 20 * (i + 1), "stsb_dev": v} for i, v in enumerate([50, 51, 52, 53, 54])]}
    stopped = {**record, "dev_curve": record["dev_curve"][:1] + [{"step": 40, "stsb_dev": 55}, {"step": 60, "stsb_dev": 54},
                                                                 {"step": 80, "stsb_dev": 53}]}
    grid = recipe.study_table({"a": record})
    assert list(grid.columns) == ["STS-B dev (kept)", "kept step", "of steps", "loss first → kept", "moved: plm",
                                  "anisotropy (STS-B test)", "avg STS test (not used to choose)"]
    assert grid.loc["a", "loss first → kept"] == "2 → 0.5" and grid.loc["a", "moved: plm"] == "1.23%"
    study = recipe.convergence_table({"a": record, "b": stopped})
    assert list(study.columns) == ["STS-B dev (best)", "kept step", "steps trained", "flag"]
    assert list(study["flag"]) == ["still improving at the cap", "–"] and study.loc["a", "STS-B dev (best)"] == 61.23


def test_the_budget_check_lengthens_a_run_still_improving_and_evaluates_finer_one_that_kept_its_first(tmp_path, monkeypatch):
    import json
    from pathlib import Path

    from sre_repro import protocol
    from sre_repro.chapters import recipe

    def record(best, still_improving, cap=600):
        # at the cap, patience 10: a best 0.5 above the best before the last ten evaluations is still improving, 0.1 is not
        values = ([best - 0.5] * (cap // 20 - 10) + [best - 0.3] * 9 if still_improving else [best - 0.1] * (cap // 20 - 1))
        values.append(best)
        curve = [{"step": 20 * (i + 1), "stsb_dev": v} for i, v in enumerate(values)]
        return {"config": {"max_steps": cap, "patience": 10, "min_delta": 0.0}, "steps": cap, "dev_curve": curve,
                "metrics": {"stsb_dev_best": best, "best_step": cap}}

    def first_kept(best, every=20, patience=10, at=None):
        # best at the first evaluation (or at step `at`), then falling: the rule stops `patience` evaluations later
        values = [best - 1 - 0.1 * i for i in range(patience + 1)]
        values[0 if at is None else at // every - 1] = best
        curve = [{"step": every * (i + 1), "stsb_dev": v} for i, v in enumerate(values)]
        return {"config": {"max_steps": 600, "patience": patience, "min_delta": 0.0, "eval_steps": every},
                "steps": curve[-1]["step"], "dev_curve": curve,
                "metrics": {"stsb_dev_best": best, "best_step": at or every}}

    def chain(store):
        return recipe.budget_chain(recipe.study_overrides("simcse_sup", "cpu", 3e-4),
                                   lambda o: store.get((o["max_steps"], o["eval_steps"])))

    assert recipe.STUDY_CAPS["cpu"] == [600, 1200] and protocol.DEV_TOLERANCE == 0.25
    assert len(chain({(600, 20): record(60.0, False), (1200, 20): record(70.0, False)})) == 1
    assert recipe.chosen_budget(chain({(600, 20): record(60.0, False)})) == (600, 20)  # the rule stopped it
    assert recipe.chosen_budget(chain({(600, 20): record(60.0, True)})) is None  # still improving: waits for 1200
    assert recipe.chosen_budget(chain({(600, 20): record(60.0, True), (1200, 20): record(60.2, False, 1200)})) == (600, 20)
    assert recipe.chosen_budget(chain({(600, 20): record(60.0, True), (1200, 20): record(60.3, False, 1200)})) == (1200, 20)
    longest = chain({(600, 20): record(60.0, True), (1200, 20): record(61.0, True, 1200)})
    assert recipe.chosen_budget(longest) == (1200, 20) and recipe.budget_labels(longest) == ("1200 (still improving)", "20")
    # kept its first evaluation: waits for the run evaluated every 5 steps (patience 40: the same 200 steps), then
    # evaluates that often, saying so when that run too kept its first evaluation
    assert recipe.finer_evaluation(recipe.study_overrides("sarcse", "cpu", 1e-4))["patience"] == 40
    assert recipe.chosen_budget(chain({(600, 20): first_kept(58.0)})) is None
    finer = chain({(600, 20): first_kept(58.0), (600, 5): first_kept(58.5, every=5, patience=40, at=15)})
    assert recipe.chosen_budget(finer) == (600, 5) and recipe.budget_labels(finer) == ("600", "5")
    assert recipe.evaluated_finer({"config": recipe.finer_evaluation(recipe.study_overrides("sarcse", "cpu", 1e-4))})
    assert not recipe.evaluated_finer({"config": recipe.study_overrides("sarcse", "cpu", 1e-4)})
    still_first = chain({(600, 20): first_kept(58.0), (600, 5): first_kept(58.5, every=5, patience=40)})
    assert recipe.budget_labels(still_first) == ("600", "5 (kept its first evaluation)")
    # the appendix's table: the cap beside the lr, named as study_records names the runs
    lrs = {1e-4: 72.7, 3e-5: 72.5, 3e-4: 73.2}
    records = {f"simcse_sup, lr {lr:g}": record(best, lr != 3e-5) for lr, best in lrs.items()}
    assert recipe.study_choices(records, "cpu").loc["simcse_sup", "chosen cap"] == "pending"
    records["simcse_sup, lr 0.0003, cap 1200"] = record(73.9, True, 1200)
    row = recipe.study_choices(records, "cpu").loc["simcse_sup"]
    assert (row["chosen lr"], row["chosen cap"]) == ("0.0003", "1200 (still improving)")
    assert recipe.study_name({**recipe.study_overrides("paser", "cpu", 1e-4, 1e-2), "max_steps": 1200},
                             head=True) == "paser, lr 0.0001, head_lr 0.01, cap 1200"
    panels = recipe.study_panels({"paser, lr 0.0001, head_lr 0.01, cap 1200": records["simcse_sup, lr 0.0001"],
                                  "simcse_sup, lr 0.0003": records["simcse_sup, lr 0.0003"]})
    assert {m: list(p) for m, p in panels.items()} == {"paser": ["lr 0.0001, head_lr 0.01, cap 1200"],
                                                       "simcse_sup": ["lr 0.0003"]}
    # the presets in force beside the choices: pending until every method's grids are in, then compared
    assert row["evaluate every"] == "20"
    beside = recipe.presets_beside_study(records, "cpu")
    assert beside.loc["simcse_sup", "lr"] == "0.0003 / 0.0003" and beside.loc["simcse_sup", "cap"] == "1200 / 1200"
    assert beside.loc["simcse", "lr"] == "0.0001 / pending" and beside.loc["simcse", "patience"] == "40 / pending"
    assert beside.loc["paser", "head_lr"] == "0.001 / pending" and beside.loc["simcse", "head_lr"] == "–"
    assert not beside["follows the study"].any()
    # another seed of the same setting that kept its first evaluation (a chapter's run) asks for the finer run too
    overrides = recipe.study_overrides("simcse_sup", "cpu", 3e-4)
    assert recipe.flagged_at_other_seeds(overrides, "kept_first_evaluation") == []
    for seed, at in ((43, None), (44, 100)):
        runs.save("simcse_sup", resolve(overrides={**overrides, "seed": seed}), first_kept(58.0, at=at))
    assert recipe.flagged_at_other_seeds(overrides, "kept_first_evaluation") == [43]
    # ... or a chapter's variant of the method on the same schedule (any knob of its own), not another schedule's run
    runs.save("simcse_sup", resolve(overrides={**overrides, "seed": 45, "temperature": 0.1}), first_kept(58.0))
    runs.save("simcse_sup", resolve(overrides={**overrides, "seed": 46, "lr": 1e-4}), first_kept(58.0))
    log = tmp_path / "read.log"  # the records it reads by folder are logged for scripts/unread_results.py
    monkeypatch.setenv("SRE_REPRO_READ_LOG", str(log))
    assert recipe.flagged_at_other_seeds(overrides, "kept_first_evaluation") == [43, 45]
    assert sorted(int(json.loads(Path(line).read_text())["config"]["seed"]) for line in log.read_text().split()) == [43, 44, 45]
    monkeypatch.delenv("SRE_REPRO_READ_LOG")
    assert recipe.flagged_at_other_seeds(overrides, "still_improving_at_cap") == []
    assert [o["eval_steps"] for o, _ in chain({(600, 20): record(60.0, False), (600, 5): first_kept(58.5, every=5, patience=40, at=15)})] == [20, 5]
    # a knob counted in steps keeps its share of the cap (SLT-FAI's auxiliary warm-up: 5 %)
    slt_fai = recipe.study_overrides("slt_fai", "cpu", 1e-4)
    assert slt_fai["aux_warmup_steps"] == 30 and recipe.at_cap(slt_fai, 1200)["aux_warmup_steps"] == 60


def test_another_seed_still_improving_at_the_cap_lengthens_the_cap_whatever_the_study_seed_gains(monkeypatch):
    """The budget check's cap, asked for by a chapter's run at another seed (PaSeR's seed 44 at 600 steps): the
    next cap is chosen even when the study's own seed gains nothing there, because its gain does not answer the
    other seed's curve; the study's own run still improving alone keeps the tolerance rule."""
    from sre_repro.chapters import recipe

    def record(best, still_improving, cap):
        values = ([best - 0.5] * (cap // 20 - 10) + [best - 0.3] * 9 if still_improving else [best - 0.1] * (cap // 20 - 1))
        values.append(best)
        curve = [{"step": 20 * (i + 1), "stsb_dev": v} for i, v in enumerate(values)]
        return {"config": {"max_steps": cap, "patience": 10, "min_delta": 0.0}, "steps": cap, "dev_curve": curve,
                "metrics": {"stsb_dev_best": best, "best_step": cap}}

    overrides = recipe.study_overrides("paser", "cpu", 3e-4, 1e-3)
    store = {600: record(60.0, False, 600), 1200: record(60.1, False, 1200)}
    chain = lambda: recipe.budget_chain(overrides, lambda o: store.get(o["max_steps"]) if o["eval_steps"] == 20 else None)
    assert [o["max_steps"] for o, _ in chain()] == [600] and recipe.chosen_budget(chain()) == (600, 20)
    assert recipe.budget_reasons(chain()) == "–"
    # a variant at another seed on the same schedule, still improving at 600 (one at seed 42 counts not; one at 1200
    # counts at 1200, the last cap, where it is shown and lengthens nothing)
    runs.save("paser", resolve(overrides={**overrides, "seed": 44, "augment": "none"}), record(61.0, True, 600))
    runs.save("paser", resolve(overrides={**overrides, "seed": 42, "augment": "rs"}), record(61.0, True, 600))
    runs.save("paser", resolve(overrides={**overrides, "seed": 43, "max_steps": 1200}), record(61.0, True, 1200))
    assert recipe.flagged_at_other_seeds(overrides, "still_improving_at_cap") == [44]
    assert [o["max_steps"] for o, _ in chain()] == [600, 1200]
    assert recipe.chosen_budget(chain()) == (1200, 20)  # a gain of 0.1 at seed 42, under the tolerance, does not undo it
    assert recipe.budget_reasons(chain()) == ("seed 44 still improving at cap 600, eval every 20; "
                                              "seed 43 still improving at cap 1200, eval every 20")
    del store[1200]
    assert recipe.chosen_budget(chain()) is None  # waits for the study's run at the longer cap
    # the study's records as the appendix names them: the reason shows beside the choice
    records = {f"paser, lr {lr:g}": record(60.0 - (lr != 3e-4), False, 600) for lr in (1e-4, 3e-5, 3e-4)}
    records.update({f"paser, lr 0.0003, head_lr {h:g}": record(60.0 - (h != 1e-3), False, 600) for h in (1e-3, 1e-2, 1e-4)})
    records["paser, lr 0.0003, head_lr 0.001, cap 1200"] = record(60.1, False, 1200)
    row = recipe.study_choices(records, "cpu").loc["paser"]
    assert row["chosen cap"] == "1200" and row["other seeds' runs"].startswith("seed 44 still improving at cap 600")
    beside = recipe.presets_beside_study(records, "cpu")
    assert beside.loc["paser", "cap"] == "1200 / 1200"  # the preset at the study's cap
    with monkeypatch.context() as m:  # before it moved: the preset's cap beside the study's, not following it
        m.setitem(CPU_RECIPES["converged"], "paser", {**CPU_RECIPES["converged"]["paser"], "max_steps": 600})
        beside = recipe.presets_beside_study(records, "cpu")
        assert beside.loc["paser", "cap"] == "600 / 1200" and not beside.loc["paser", "follows the study"]
