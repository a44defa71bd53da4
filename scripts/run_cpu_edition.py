"""Compute every run the cpu edition of the book reads (cached: reruns are free). Used by the developers to
fill results/; `make book` gets the same runs from the cache through the notebooks, which call the same
`sre_repro.book` and `sre_repro.chapters` functions with the same arguments. Groups: recipe baselines simcse
simcse_sup sarcse byop pt_bert_recipe pt_bert slt_fai_recipe slt_fai paser_recipe paser (default: recipe, baselines, simcse, simcse_sup); recipe executes the appendix "The cpu
recipe" (its study decides the cpu presets, so it comes first); sarcse runs in the order of its chapter's tables (Table 1, Table 3, Table 2, then batch 512 with
every seed); byop executes its chapter at cpu scale (papermill, into work/executed/), which runs what it shows;
pt_bert_recipe, slt_fai_recipe and paser_recipe run a method's head_lr study of the recipe appendix alone, pt_bert its
chapter's runs in the order of its tables (Table 3's three-seed rows first); slt_fai and paser execute their chapters at
cpu scale (papermill), as byop. convergence computes the recipe appendix's convergence study: every method at each
learning rate, then each added-module method's head_lr grid at its chosen lr, then each method's chosen setting at
the longer caps or finer evaluation it needs; `convergence 0/2` and
`convergence 1/2` split it between two processes (run each with OMP_NUM_THREADS=1)."""
import sys

from sre_repro import book
from sre_repro.chapters import pt_bert as pt_bert_chapter
from sre_repro.chapters import recipe as recipe_chapter
from sre_repro.chapters import sarcse as sarcse_chapter
from sre_repro.config import use_cpu_recipe

# the chapters filled here keep the recipe they were computed with until they are recomputed (book.CHAPTER_RECIPES);
# the convergence study sets every knob it varies
use_cpu_recipe("fixed-budget")
which = sys.argv[1:] or ["recipe", "baselines", "simcse", "simcse_sup"]
if "recipe" in which:
    import papermill

    papermill.execute_notebook("notebooks/cpu_recipe.ipynb", "work/executed/cpu_recipe.ipynb",
                               parameters={"scale": "cpu"}, kernel_name="python3", progress_bar=False, cwd=".")
if "baselines" in which:
    for name, result in book.baselines(book.baseline_models("cpu"), allow_stale=False).items():
        print(name, result["metrics"]["sts"]["avg"], flush=True)
for method in ("simcse", "simcse_sup"):
    if method in which:
        for r in book.train_seeds(method, "cpu", book.seeds("cpu"), allow_stale=False):
            print(method, r["seed"], r["metrics"]["sts"]["avg"], r["wall_seconds"], flush=True)
if "sarcse" in which:
    seeds = book.seeds("cpu")
    groups = [("sarcse", seeds, {}), ("sarcse", seeds, {"weighting": "plain"}),
              ("sarcse", seeds, {"weighting": "plain", "decoder": False})]
    groups += [("sarcse", seeds[:1], {"theta": theta}) for theta in sarcse_chapter.grid("sarcse_thetas", "cpu")]
    batches = sarcse_chapter.grid("sarcse_batch_sizes", "cpu")
    groups += [(method, seeds[:1], sarcse_chapter.same_budget("cpu", method, batch))
               for batch in batches for method in ("simcse", "sarcse")]
    groups += [(method, seeds, sarcse_chapter.same_budget("cpu", method, max(batches))) for method in ("simcse", "sarcse")]
    for method, seed_list, overrides in groups:
        for r in book.train_seeds(method, "cpu", seed_list, allow_stale=False, **overrides):
            print(method, overrides, r["seed"], r["metrics"]["sts"]["avg"], r["wall_seconds"], flush=True)
for chapter in ("byop", "slt_fai", "paser"):
    if chapter in which:
        import papermill

        papermill.execute_notebook(f"notebooks/{chapter}.ipynb", f"work/executed/{chapter}.ipynb", parameters={"scale": "cpu"},
                                   kernel_name="python3", progress_bar=False, cwd=".")
for method in ("pt_bert", "slt_fai", "paser"):
    if f"{method}_recipe" in which:
        lr, steps = recipe_chapter.chosen_plm(recipe_chapter.plm_runs("cpu"), recipe_chapter.STEP_BUDGET["cpu"])
        for head_lr, r in recipe_chapter.head_runs(method, "cpu", lr, steps, allow_stale=False).items():
            print(method, "head_lr", head_lr, r["metrics"]["stsb_dev_best"], r["training"]["moved"], r["wall_seconds"], flush=True)
if "pt_bert" in which:
    seeds = book.seeds("cpu")
    rows = pt_bert_chapter.variants(pt_bert_chapter.grid("augmentations", "cpu"))
    groups = [("pt_bert", seeds if not name.startswith("MoCo-BERT +") else seeds[:1], overrides) for name, overrides in rows.items()]
    groups += [("simcse", seeds[:1], {"max_len": n}) for n in pt_bert_chapter.grid("simcse_max_lens", "cpu") if n != 32]
    groups += [("pt_bert", seeds[:1], {"pseudo_length": n}) for n in pt_bert_chapter.grid("pseudo_lengths", "cpu") if n != 128]
    groups += [("pt_bert", seeds[:1], {"queue_keys": n}) for n in pt_bert_chapter.grid("queue_sizes", "cpu") if n != 256]
    for method, seed_list, overrides in groups:
        for r in book.train_seeds(method, "cpu", seed_list, allow_stale=False, **overrides):
            print(method, overrides, r["seed"], r["metrics"]["sts"]["avg"], r["wall_seconds"], flush=True)
    for r in book.train_seeds("simcse", "cpu", seeds, allow_stale=False):
        print("simcse hard subset", r["seed"], pt_bert_chapter.hard_subset(r, allow_stale=False)["metrics"]["scores"]["avg"], flush=True)
if "convergence" in which:
    lane = next((a for a in which if "/" in a), "0/1")
    index, lanes = map(int, lane.split("/"))
    plan = recipe_chapter.study_plan("cpu")
    for overrides in plan[index::lanes]:
        r = recipe_chapter.train(overrides, allow_stale=False)
        print(overrides["method"], "lr", overrides["lr"], r["metrics"]["stsb_dev_best"], r["metrics"]["best_step"],
              r["steps"], r["convergence"]["flag"], r["wall_seconds"], flush=True)
    for k, method in enumerate(recipe_chapter.ADDED_MODULE_METHODS):
        if k % lanes == index:
            lr = recipe_chapter.chosen_setting(recipe_chapter.study_lr_runs(method, "cpu", allow_stale=False))
            for head_lr, r in recipe_chapter.study_head_runs(method, "cpu", lr, allow_stale=False).items():
                print(method, "head_lr", head_lr, r["metrics"]["stsb_dev_best"], r["steps"], r["wall_seconds"], flush=True)
    for k, method in enumerate(recipe_chapter.STUDY_METHODS):
        if k % lanes == index:
            for name, r in recipe_chapter.study_budget_runs(method, "cpu", allow_stale=False).items():
                print(name, r["metrics"]["stsb_dev_best"], r["metrics"]["best_step"], r["steps"], r["wall_seconds"],
                      flush=True)
