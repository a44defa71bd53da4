"""The SLT-FAI chapter's plan: Table 1's two blocks (each backbone, + SLT-FAI and its two ablations), the two
readings of the paper and the code, the study that trains AT's discriminator, the lambda grid of Figure 4, the
frequency analyses behind Figures 3 and 5-7 (the untrained PLM's from a cached record of its own, the trained
models' from their run records), the held-out discriminator checks every AT or ISF verdict is gated on, and the
claims it judges with the paper's effects."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import book, claims, protocol
from ..claims import Claim
from ..config import resolve
from ..errors import SreError
from ..evaluate.cached import cached

# AT's similarity discriminator: the settings tried so that it learns (class weights and the reversal's schedule:
# neither the paper nor the code sets them, methods/slt_fai.py; the rate: the book trains the discriminators at
# head_lr, the code with the encoder's optimiser and rate; head_lr sets both discriminators' rate), ConSERT block,
# seed 42, the cpu recipe; chosen on STS-B dev among those that engaged
AT_CODE_RATE = "plain CE, GRL 1, discriminators at the encoder's rate (code)"  # the official code's optimiser
AT_TRAINING = {"plain CE, GRL 1, discriminators at 1e-3 (the book's)": {},
               "balanced CE, GRL 1": {"at_class_weights": "balanced"},
               "plain CE, DANN's GRL ramp": {"grl_schedule": "dann"},
               "balanced CE, DANN's GRL ramp": {"at_class_weights": "balanced", "grl_schedule": "dann"},
               AT_CODE_RATE: {"head_lr": None},
               "plain CE, GRL 1, discriminators at 1e-4": {"head_lr": 1e-4},
               "plain CE, GRL 1, discriminators at 1e-2": {"head_lr": 1e-2}}
# chosen_at_training's choice on the study's committed cpu records (tests/test_slt_fai.py checks it against them):
# the book's SLT-FAI rows train with it
AT_CHOSEN = "plain CE, GRL 1, discriminators at 1e-3 (the book's)"

GRIDS = {
    "low_rates": {"smoke": [0.3, 0.5], "default": [0.1, 0.3, 0.5, 0.7, 0.9]},
    "figure3_rates": {"default": [0.1, 0.3, 0.5, 0.7, 0.9]},
    # AT_TRAINING's settings the study runs beside the chosen one (whose run is Table 1's; the first seed)
    "at_settings": {"smoke": [], "default": [name for name in AT_TRAINING if name != AT_CHOSEN]},
}
# How many seeds each part runs (the first n of the edition's): Table 1's backbones and SLT-FAI rows are the
# headlines (every seed, at least claims.HEADLINE_SEEDS); the ablations of both blocks, the two readings and the
# lambda grid carry claims of their own, at three
SEED_COUNTS = {"secondary": {"smoke": 1, "default": 3}, "lambda": {"smoke": 1, "default": 3}}
BACKBONE_NAMES = {"consert": "ConSERT", "simcse": "SimCSE"}
# The book's SLT-FAI is the method's defaults: the paper's AT (each sentence's tokens, Linear-ReLU-Linear) and
# the code's ISF rule (high-frequency tokens, p = 0.5). The variants run beside it, ConSERT backbone:
VARIANTS = {
    # the official code's components (the AT discriminator on every position, padding included; the code's
    # discriminators with a ReLU on their logits; ISF's original = the feature-cutoff view; at paper scale its
    # every-epoch warm-up), with the book's optimiser (the discriminators at head_lr) and, at cpu, warm-up in steps
    "code reading": {"discriminator": "code", "at_positions": "all", "isf_original": "view1", "warmup_rule": "every_epoch"},
    # ISF as the paper writes it: low-frequency words, epsilon = 0.2
    "the paper's ISF rule": {"isf_mask": "low"},
}
# the mechanisms a claim rests on (each must engage, by its held-out discriminator check) and the loss weight that
# switches each on
AT, ISF = "similarity discriminator", "information discriminator"
COMPONENT_WEIGHTS = {AT: "alpha", ISF: "beta"}


def grid(name: str, scale: str, chosen=None) -> list:
    return book.grid(GRIDS, name, scale, chosen)


def seed_count(part: str, scale: str, chosen: int = 0) -> int:
    return chosen or SEED_COUNTS[part].get(scale, SEED_COUNTS[part]["default"])


def block(backbone: str, scale: str) -> dict[str, tuple[str, dict]]:
    """Table 1's rows of one block: name -> (method, overrides). The backbone is its own method (`consert`,
    `simcse`); at paper scale the SimCSE baseline trains at the paper's batch of 32, as SLT-FAI does. Every row
    with AT trains its discriminator with the setting AT_TRAINING's study chose (AT_CHOSEN)."""
    if backbone not in BACKBONE_NAMES:
        raise SreError(f"unknown backbone {backbone!r}: choose from {', '.join(BACKBONE_NAMES)}")
    name, at = BACKBONE_NAMES[backbone], AT_TRAINING[AT_CHOSEN]
    extra = {} if backbone == "consert" else {"backbone": "simcse"}
    base = {"batch_size": 32} if backbone == "simcse" and scale == "paper" else {}
    return {name: (backbone, base), f"{name} + SLT-FAI": ("slt_fai", {**extra, **at}),
            f"{name} + SLT-FAI w/o ISF": ("slt_fai", {**extra, "beta": 0.0, **at}),
            f"{name} + SLT-FAI w/o AT": ("slt_fai", {**extra, "alpha": 0.0})}


def rate_row(rate: float) -> str:
    return f"λ = {rate:g}"


def plan(scale: str, seed_list: list[int], low_rates=None, secondary_seeds: int = 0) -> dict[str, tuple[str, list[int], dict]]:
    """Every training run the chapter shows: group name -> (method, seeds, overrides). Table 1's backbones and
    SLT-FAI rows run every seed; the ablations, the two readings (ConSERT block; the code reading keeps the code's
    AT) and each lambda of Figure 4 besides the preset's (whose row is Table 1's) the first few."""
    few = seed_list[:seed_count("secondary", scale, secondary_seeds)]
    at = AT_TRAINING[AT_CHOSEN]
    groups = {name: (method, few if " w/o " in name else seed_list, overrides)
              for backbone in BACKBONE_NAMES for name, (method, overrides) in block(backbone, scale).items()}
    groups.update({f"ConSERT + SLT-FAI ({name})": ("slt_fai", few, {**overrides, **({} if name == "code reading" else at)})
                   for name, overrides in VARIANTS.items()})
    groups.update({f"AT study: {name}": ("slt_fai", seed_list[:1], at_setting(name, scale))
                   for name in grid("at_settings", scale) if name != AT_CHOSEN})
    preset = resolve(overrides={"method": "slt_fai", "scale": scale})["low_rate"]
    by_rate = seed_list[:min(len(few), seed_count("lambda", scale))]
    groups.update({rate_row(rate): ("slt_fai", by_rate, {"low_rate": float(rate), **at})
                   for rate in grid("low_rates", scale, low_rates) if float(rate) != preset})
    return groups


def at_setting(name: str, scale: str) -> dict:
    """AT_TRAINING[name]'s overrides with the encoder's rate (head_lr None) written out: a plan's unset knobs fall
    back to the recipe's (book.train_seeds), which sets head_lr."""
    overrides = AT_TRAINING[name]
    if "head_lr" in overrides and overrides["head_lr"] is None:
        return {**overrides, "head_lr": resolve(overrides={"method": "slt_fai", "scale": scale})["lr"]}
    return overrides


def at_study_runs(runs: dict[str, list[dict]]) -> dict[str, dict]:
    """AT_TRAINING's study: setting -> its run at the first seed (the chosen setting's is Table 1's SLT-FAI row)."""
    found = {name.removeprefix("AT study: "): group[0] for name, group in runs.items() if name.startswith("AT study: ")}
    found[AT_CHOSEN] = runs["ConSERT + SLT-FAI"][0]
    return {name: found[name] for name in AT_TRAINING if name in found} if len(found) > 1 else {}


def rate_groups(runs: dict[str, list[dict]]) -> dict[float, list[dict]]:
    """Figure 4: lambda -> its runs (the preset's lambda is Table 1's SLT-FAI row at the grid's seeds), in order."""
    grid_rows = {r[0]["config"]["low_rate"]: r for name, r in runs.items() if name.startswith("λ = ")}
    if not grid_rows:
        return {}
    seeds = max(len(group) for group in grid_rows.values())
    full = runs["ConSERT + SLT-FAI"]
    return dict(sorted({**grid_rows, full[0]["config"]["low_rate"]: full[:seeds]}.items()))


def rate_frame(groups: dict[float, list[dict]]) -> pd.DataFrame:
    """Figure 4's numbers per lambda (mean over its seeds): average STS and STS-B test, as the paper plots them,
    and STS-B dev at the kept step, on which alone a lambda may be chosen."""
    frame = pd.DataFrame({rate: {"avg. STS (test)": np.mean([r["metrics"]["sts"]["avg"] for r in g]),
                                 "STS-B (test)": np.mean([r["metrics"]["sts"]["STSBenchmark"] for r in g]),
                                 "STS-B dev (kept)": np.mean([r["metrics"]["stsb_dev_best"] for r in g]),
                                 "seeds": ", ".join(str(r["seed"]) for r in g)} for rate, g in groups.items()}).T
    return frame.infer_objects().round(2)


def plm_frequency(model_name: str, n_sentences: int, data_dir=None, force: bool = False, allow_stale: bool = True) -> dict:
    """The untrained PLM's frequency analyses (the "BERT" panel of Figures 5-7), a cached record of kind
    "frequency" with its wall time."""
    return cached("frequency", {"model_name": model_name, "n_sentences": n_sentences}, data_dir, force,
                  allow_stale=allow_stale)


def frequency_numbers(groups: dict[str, list[dict]]) -> pd.DataFrame:
    """What the 2-D maps cannot show, per model (mean over its records): token anisotropy overall and per
    label, the separation of the label centroids, each label's spread, the grouped probe's accuracy,
    sentence anisotropy and uniformity."""
    rows = {}
    for name, records in groups.items():
        analyses = [r["metrics"]["frequency"] for r in records]
        tokens = {k: np.mean([a["tokens"][k] for a in analyses]) for k in analyses[0]["tokens"]}
        rows[name] = {"token anisotropy": tokens["anisotropy"], "anisotropy (high)": tokens["anisotropy_high"],
                      "anisotropy (low)": tokens["anisotropy_low"], "centroid separation": tokens["centroid_separation"],
                      "spread (high)": tokens["spread_high"], "spread (low)": tokens["spread_low"],
                      "label probe accuracy": tokens["probe_accuracy"],
                      "sentence anisotropy": np.mean([a["sentences"]["anisotropy"] for a in analyses]),
                      "sentence uniformity": np.mean([a["sentences"]["uniformity"] for a in analyses]),
                      "seeds": ", ".join(str(r.get("seed", "–")) for r in records)}
        rows[name] = {k: round(float(v), 3) if k != "seeds" else v for k, v in rows[name].items()}
    return pd.DataFrame(rows).T


def attention_numbers(groups: dict[str, list[dict]]) -> pd.DataFrame:
    """Figure 7's substitute over many sentences: the last layer's attention received by [SEP], [CLS], content
    words and low-frequency words (mean over heads, query rows and sentences; mean over a group's records)."""
    rows = {}
    for name, records in groups.items():
        received = [r["metrics"]["frequency"]["attention_received"] for r in records]
        rows[name] = {k: round(float(np.mean([x[k] for x in received])), 4) for k in received[0]}
        rows[name]["seeds"] = ", ".join(str(r.get("seed", "–")) for r in records)
    return pd.DataFrame(rows).T


def figure7_frames(records: dict[str, dict], head: int | None = None) -> dict[str, pd.DataFrame]:
    """The last layer's attention map of Figure 7's sentence per model: one head, or the mean over heads."""
    frames = {}
    for name, record in records.items():
        entry = record["metrics"]["frequency"]["figure7"]
        heads = np.asarray(entry["heads"])
        matrix = heads.mean(0) if head is None else heads[head]
        frames[name] = pd.DataFrame(matrix, index=entry["tokens"], columns=entry["tokens"])
    return frames


def figure7_heads(record: dict) -> dict[str, pd.DataFrame]:
    """One model's last-layer attention map of Figure 7's sentence, head by head."""
    entry = record["metrics"]["frequency"]["figure7"]
    return {f"head {h}": pd.DataFrame(np.asarray(m), index=entry["tokens"], columns=entry["tokens"])
            for h, m in enumerate(entry["heads"])}


def kept_point(run: dict) -> dict:
    """The run's dev-curve point at its kept step (`best_step`), else its last evaluation."""
    return next((p for p in run["dev_curve"] if p["step"] == run["metrics"]["best_step"]), run["dev_curve"][-1])


def discriminator_margins(records: list[dict]) -> dict[str, float]:
    """Mean over runs, at the kept step: the similarity discriminator's accuracy minus the majority share of its
    positions, and the information discriminator's accuracy (chance 0.5)."""
    kept = [kept_point(r) for r in records]
    margins = {}
    if all("at_accuracy" in p for p in kept):
        margins["at_margin"] = float(np.mean([p["at_accuracy"] - p["at_majority"] for p in kept]))
    if all("isf_accuracy" in p for p in kept):
        margins["isf_accuracy"] = float(np.mean([p["isf_accuracy"] for p in kept]))
    return margins


# The held-out discriminator check's size: SNLI premises that neither block trains on
DISCRIMINATOR_SENTENCES = {"smoke": 64, "cpu": 2000, "paper": 10000}


def discriminator_check(run: dict, data_dir=None, force: bool = False, allow_stale: bool = True) -> dict:
    """How well a run's kept discriminators separate their classes on held-out sentences (ROC AUC, balanced
    accuracy, the majority share: evaluate/discriminators.py), a record of kind "discriminators" (trained once
    where this machine lacks the weights)."""
    cfg = resolve(overrides=run["config"])
    key = {"run": cfg, "max_sentences": DISCRIMINATOR_SENTENCES[cfg["scale"]]}
    return cached("discriminators", key, data_dir, force, allow_stale=allow_stale)


def at_training_table(runs: dict[str, dict], checks: dict[str, dict]) -> pd.DataFrame:
    """AT_TRAINING's study, a row per setting (name -> its run; name -> its discriminator_check metrics): STS-B dev
    at the kept step (the choice is made on it), the held-out similarity discriminator (ROC AUC, balanced accuracy
    and whether it engaged by the protocol's rule, read on the AUC), its training loss over the kept interval beside
    the best constant guess's (balanced CE: ln 2; plain CE: the labels' entropy at the pooled majority share, which
    Eq. 4's per-sentence average only approximates), how well a fresh probe still reads frequency from the
    token states, and whose weights the check read (a record computed on a GPU is checked on a CPU retrain, a
    sibling that may keep another step: train.kept_checkpoint)."""
    rows = {}
    for name, run in runs.items():
        held, kept = checks[name]["similarity"], kept_point(run)
        engaged, _ = protocol.engaged("classifier", auc=held["auc"])  # plain CE on 7 % LOW labels rarely crosses 0.5
        m = kept["at_majority"]
        guess = math.log(2) if run["config"]["at_class_weights"] == "balanced" else -(m * math.log(m) + (1 - m) * math.log(1 - m))
        rows[name] = {"STS-B dev (kept)": round(run["metrics"]["stsb_dev_best"], 2), "kept step": run["metrics"]["best_step"],
                      "held-out AUC": round(held["auc"], 3), "held-out balanced accuracy": round(held["balanced_accuracy"], 3),
                      "engaged": "yes" if engaged else "no", "AT loss (kept interval)": round(kept["loss_at"], 3),
                      "constant guess": round(guess, 3),
                      "frequency probe on the token states": round(run["metrics"]["frequency"]["tokens"]["probe_accuracy"], 3),
                      "check's weights": "a CPU retrain (record on GPU)" if book.on_gpu(run) else "the run's"}
    return pd.DataFrame(rows).T


def chosen_at_training(table: pd.DataFrame) -> str:
    """The book's default (the table's first row: the paper's and the code's loss and reversal, at the book's rate)
    where its discriminator engaged and no engaged setting beats its STS-B dev by protocol.DEV_TOLERANCE (a smaller
    gain at one seed is no real change); else the engaged setting with the best dev; the default where none engaged."""
    engaged = table[table["engaged"] == "yes"]
    if not len(engaged):
        return str(table.index[0])
    dev = engaged["STS-B dev (kept)"].astype(float)
    default = table.index[0]
    if default in dev.index and dev.max() - dev[default] < protocol.DEV_TOLERANCE:
        return str(default)
    return str(dev.idxmax())


def discriminator_table(groups: dict[str, list[dict]]) -> pd.DataFrame:
    """Did the discriminators learn? Per run: each discriminator's accuracy over the first evaluation interval
    (which includes the warm-up) and over the interval ending at the kept step, the majority-label share that
    the similarity discriminator's accuracy must clear, the share of incomplete copies that differ from their
    sentence, and how far each discriminator moved."""
    rows = {}
    for name, records in groups.items():
        for r in records:
            first, kept = r["dev_curve"][0], kept_point(r)
            row = {}
            if "at_accuracy" in first:
                row["AT accuracy first → kept"] = f"{first['at_accuracy']:.3f} → {kept['at_accuracy']:.3f}"
                row["majority share"] = f"{kept['at_majority']:.3f}"
                row["AT loss first → kept"] = f"{first['loss_at']:.3f} → {kept['loss_at']:.3f}"
            if "isf_accuracy" in first:
                row["ISF accuracy first → kept"] = f"{first['isf_accuracy']:.3f} → {kept['isf_accuracy']:.3f}"
                row["ISF loss first → kept"] = f"{first['loss_isf']:.3f} → {kept['loss_isf']:.3f}"
                row["copies changed"] = f"{kept['isf_changed']:.2f}"
            for module, moved in (r.get("training") or {}).get("moved", {}).items():
                if module != "plm":
                    row[f"moved: {module}"] = f"{100 * moved:.2f}%"
            rows[f"{name} (seed {r['seed']})"] = row
    return pd.DataFrame.from_dict(rows, orient="index").fillna("–")


def effects_over_backbone(runs: dict[str, list[dict]], backbone: str) -> pd.DataFrame:
    """Each row of a block minus its backbone (average STS), seed-matched: the mean of the per-seed differences
    over the seeds both ran (a three-seed ablation against the same three seeds of its five-seed backbone), ours
    beside the paper's (Table 1; rows the paper does not have: none)."""
    from ..papers.slt_fai import TABLE1

    name = BACKBONE_NAMES[backbone]
    base = claims.by_seed(runs[name])
    rows = {}
    for row, group in runs.items():
        if not row.startswith(f"{name} +"):
            continue
        mine = claims.by_seed(group)
        rows[row] = {"backbone": name,
                     "ours: minus the backbone": round(float(np.mean(claims.matched(mine, base))), 2),
                     "paper: minus the backbone": round(TABLE1[row][-1] - TABLE1[name][-1], 2) if row in TABLE1 else np.nan,
                     "seeds": ", ".join(str(s) for s in sorted(set(mine) & set(base)))}
    return pd.DataFrame(rows).T


def label_statistics_table(rates, data_dir=None) -> pd.DataFrame:
    """Figure 3's numbers: per lambda the threshold count, the LOW types and their share of BookCorpus."""
    from ..data.corpora import bookcorpus_token_counts
    from ..evaluate.frequency import label_statistics

    rows = label_statistics(bookcorpus_token_counts(data_dir), rates)
    frame = pd.DataFrame(rows).set_index("rate")
    frame.index = [f"λ = {r:g}" for r in frame.index]
    frame["low_share_of_occurrences"] = (100 * frame["low_share_of_occurrences"]).round(2)
    return frame.rename(columns={"threshold": "threshold (count)", "low_types": "LOW types",
                                 "low_share_of_occurrences": "LOW share of occurrences (%)"})


def corpus_low_statistics(rates, n_sentences: int = 5000, data_dir=None) -> pd.DataFrame:
    """On the unlabelled STS corpus (a seeded sample): per lambda, the share of word tokens labelled LOW and of
    sentences holding none, which is what the paper's ISF rule (mask LOW words) can act on."""
    from ..data.corpora import bookcorpus_token_counts
    from ..encoder import load_tokenizer
    from ..evaluate.frequency import analysis_sample, frequency_labels

    tokenizer = load_tokenizer("sre-bert")
    sentences = analysis_sample(n_sentences, data_dir)
    ids = tokenizer(sentences, add_special_tokens=False)["input_ids"]
    counts = bookcorpus_token_counts(data_dir)
    rows = {}
    for rate in rates:
        labels, _ = frequency_labels(counts, tokenizer.get_vocab(), rate)
        low = [[int(labels[i]) for i in sentence] for sentence in ids]
        rows[f"λ = {rate:g}"] = {"LOW word tokens (%)": round(100 * sum(map(sum, low)) / sum(map(len, low)), 1),
                                 "sentences without a LOW word (%)": round(100 * np.mean([sum(x) == 0 for x in low]), 1)}
    return pd.DataFrame(rows).T


def paper_gains() -> dict[str, float]:
    """The paper's own effect for each verdict of the chapter (Table 1, average STS)."""
    from ..papers.slt_fai import TABLE1

    avg = {name: row[-1] for name, row in TABLE1.items()}
    gains = {}
    for name in ("ConSERT", "SimCSE"):
        gains[f"{name}: slt_fai"] = avg[f"{name} + SLT-FAI"] - avg[name]
        gains[f"{name}: isf"] = avg[f"{name} + SLT-FAI"] - avg[f"{name} + SLT-FAI w/o ISF"]
        gains[f"{name}: at"] = avg[f"{name} + SLT-FAI"] - avg[f"{name} + SLT-FAI w/o AT"]
        gains[f"{name}: at_over_isf"] = avg[f"{name} + SLT-FAI w/o ISF"] - avg[f"{name} + SLT-FAI w/o AT"]
    return gains


# ----- engagement -------------------------------------------------------------------------------------------------

def run_engaged(run: dict, check: dict, component: str) -> tuple[bool, str]:
    """A component's engagement in one run: none where the run kept a checkpoint from before the auxiliary losses
    switched on (its discriminators never trained, whatever a random one scores), else discriminator_engaged."""
    if not kept_point(run).get("aux_on", 1):
        return False, f"kept step {run['metrics']['best_step']}, before the auxiliary losses switched on"
    return discriminator_engaged(check, component)


def discriminator_engaged(check: dict, component: str) -> tuple[bool, str]:
    """protocol.engaged for one kept discriminator (`check`: its run's discriminator_check metrics): its held-out
    ROC AUC (a discriminator of 7 % LOW labels ranks without its probability crossing 0.5, so the AUC is read,
    never its accuracy against the base rate)."""
    part = "similarity" if component == AT else "information"
    if part not in check:
        return False, f"no held-out check of the {component}"
    return protocol.engaged("classifier", auc=check[part]["auc"])


def engagement(group: list[dict], components, checks: dict[str, dict]) -> dict[str, tuple[bool, str]]:
    """claims.judge's engagement entry: each component engaged (run_engaged) in every SLT-FAI run of `group` that
    trains it (its loss weight above 0; a backbone run or an ablation without it does not count)."""
    return {c: claims.engaged_in_every([r for r in group if r["config"]["method"] == "slt_fai" and r["config"][COMPONENT_WEIGHTS[c]] > 0],
                                       lambda run, c=c: run_engaged(run, checks[run["config_hash"]]["metrics"], c))
            for c in components}


def engagement_table(runs: dict[str, list[dict]], checks: dict[str, dict]) -> pd.DataFrame:
    """Per SLT-FAI run: its kept step and whether the auxiliary losses were on by then, each kept discriminator on
    held-out sentences (ROC AUC, balanced accuracy, the majority share a plain accuracy would sit at) and
    protocol.engaged's reading."""
    rows = []
    for name, group in runs.items():
        for run in group:
            if run["config"]["method"] != "slt_fai":
                continue
            check, kept = checks[run["config_hash"]]["metrics"], kept_point(run)
            row = {"run": name, "seed": run["seed"], "kept step": run["metrics"]["best_step"],
                   "auxiliaries on at the kept step": "yes" if kept.get("aux_on", 1) else "no"}
            for component, part in ((AT, "similarity"), (ISF, "information")):
                if part in check:
                    ok, _ = discriminator_engaged(check, component)
                    row[f"{part}: AUC"] = round(check[part]["auc"], 3)
                    row[f"{part}: balanced accuracy"] = round(check[part]["balanced_accuracy"], 3)
                    row[f"{part}: majority share"] = round(check[part]["majority"], 3)
                    row[f"{part}: engaged"] = "yes" if ok else "no"
            rows.append(row)
    return pd.DataFrame(rows).set_index(["run", "seed"]).fillna("–")


def dev_before_after(group: list[dict]) -> dict[str, float]:
    """Mean over the runs of the best STS-B dev up to the step the auxiliary losses switch on ("before") and after
    it ("after"); nan where no run evaluated on that side."""
    sides = {"before": [], "after": []}
    for run in group:
        start = run["config"]["aux_warmup_steps"]
        for side, points in (("before", [p for p in run["dev_curve"] if p["step"] <= start]),
                             ("after", [p for p in run["dev_curve"] if p["step"] > start])):
            if points:
                sides[side].append(max(p["stsb_dev"] for p in points))
    return {side: float(np.mean(values)) if values else float("nan") for side, values in sides.items()}


def kept_before_auxiliaries(group: list[dict]) -> list[int]:
    """The seeds whose kept checkpoint comes before the auxiliary losses switched on (the kept step's aux_on = 0)."""
    return [r["seed"] for r in group if not kept_point(r).get("aux_on", 1)]


# ----- claims -----------------------------------------------------------------------------------------------------

PARITY_MARGIN = 0.5  # points of average STS: the book's parity margin (PT-BERT's and PaSeR's chapters use it)
_GAIN = paper_gains()
_FULL, _NO_ISF, _NO_AT = "ConSERT + SLT-FAI", "ConSERT + SLT-FAI w/o ISF", "ConSERT + SLT-FAI w/o AT"
BEST_OTHER_RATE = "the best other λ"  # Figure 4's comparison: the other lambda with the best mean STS-B dev
CLAIMS = {c.id: c for c in [
    Claim("slt_fai_beats_consert", "SLT-FAI improves ConSERT on average STS (Table 1: 73.29 against 71.98)",
          "superiority", "ConSERT + SLT-FAI - ConSERT, average STS, seed-matched", _GAIN["ConSERT: slt_fai"], (AT, ISF),
          headline=True),
    Claim("slt_fai_beats_simcse", "SLT-FAI improves SimCSE on average STS (Table 1: 76.18 against 74.60)",
          "superiority", "SimCSE + SLT-FAI - SimCSE, average STS, seed-matched", _GAIN["SimCSE: slt_fai"], (AT, ISF),
          headline=True),
    Claim("isf_helps_consert", "incomplete-sentence filtering helps: full beats w/o ISF (Table 1, ConSERT block)",
          "superiority", "ConSERT + SLT-FAI - w/o ISF, average STS, seed-matched", _GAIN["ConSERT: isf"], (ISF,)),
    Claim("at_helps_consert", "adversarial tuning helps: full beats w/o AT (Table 1, ConSERT block)", "superiority",
          "ConSERT + SLT-FAI - w/o AT, average STS, seed-matched", _GAIN["ConSERT: at"], (AT,)),
    Claim("at_beats_isf_consert", "AT alone beats ISF alone: w/o ISF beats w/o AT (Table 1, ConSERT block)",
          "superiority", "w/o ISF - w/o AT, average STS, seed-matched", _GAIN["ConSERT: at_over_isf"], (AT, ISF)),
    Claim("at_beats_isf_simcse", "AT alone beats ISF alone: w/o ISF beats w/o AT (Table 1, SimCSE block)",
          "superiority", "w/o ISF - w/o AT, average STS, seed-matched", _GAIN["SimCSE: at_over_isf"], (AT, ISF)),
    Claim("isf_helps_simcse", "incomplete-sentence filtering helps: full beats w/o ISF (Table 1, SimCSE block)",
          "superiority", "SimCSE + SLT-FAI - w/o ISF, average STS, seed-matched", _GAIN["SimCSE: isf"], (ISF,)),
    Claim("at_helps_simcse", "adversarial tuning helps: full beats w/o AT (Table 1, SimCSE block)", "superiority",
          "SimCSE + SLT-FAI - w/o AT, average STS, seed-matched", _GAIN["SimCSE: at"], (AT,)),
    Claim("lambda_half_best", "λ = 0.5 is the best frequency label rate (Figure 4's text: best at 50 %; judged on "
          "STS-B dev, the book's version)", "superiority",
          "λ = 0.5 - the other λ with the best mean STS-B dev, STS-B dev (kept), seed-matched", None, (AT, ISF)),
    Claim("code_reading_matches", "the code reading (the code's AT positions, discriminators and ISF original) "
          "gives the same average STS as the book's reading (the book's question, not the paper's)", "equivalence",
          "ConSERT + SLT-FAI (the book's reading) - the code reading, average STS, seed-matched", None, (AT, ISF),
          margin=PARITY_MARGIN),
    Claim("paper_isf_rule_matches", "the paper's ISF rule (mask LOW words, ε = 0.2) gives the code's (mask HIGH "
          "tokens, p = 0.5) (the book's question)", "equivalence",
          "ConSERT + SLT-FAI (the code's rule) - the paper's ISF rule, average STS, seed-matched", None, (ISF,),
          margin=PARITY_MARGIN),
    Claim("beats_wiki_baselines", "STS-trained ConSERT + SLT-FAI beats most wiki-trained baselines (Table 1)",
          "superiority", "absolute average STS against transcribed baselines", None),
    Claim("at_hides_frequency", "AT reduces the frequency information in the token states: a fresh probe reads the "
          "label less well from CL + AT than from CL (the paper: 'frequency-invariant', Figure 5)", "superiority",
          "CL - CL + AT (ConSERT - w/o ISF), label probe accuracy x 100, seed-matched", None, (AT,)),
    Claim("cl_isotropic", "contrastive learning makes the token space more isotropic than the PLM's (Sec. 4.3.2: it "
          "'gradually becomes isotropic by applying contrastive learning')", "geometry",
          "CL (ConSERT)'s token anisotropy (mean cosine x 100), each seed, against the untrained PLM's", None),
    Claim("at_joins_centroids", "AT brings the HIGH and LOW tokens together (Figure 5)", "superiority",
          "CL - CL + AT, HIGH-LOW centroid separation x 100, seed-matched", None, (AT,)),
    Claim("at_lowers_token_anisotropy", "AT makes the token space more isotropic (Figure 5)", "superiority",
          "CL - CL + AT, token anisotropy (mean cosine x 100), seed-matched", None, (AT,)),
    Claim("isf_lowers_token_anisotropy", "ISF makes the token space more isotropic still (Figure 5; the code's masking rule)", "superiority",
          "CL + AT - CL + AT + ISF, token anisotropy (mean cosine x 100), seed-matched", None, (ISF,)),
    Claim("at_lowers_sentence_anisotropy", "AT spreads the sentence embeddings (Figure 6)", "superiority",
          "CL - CL + AT, sentence anisotropy (mean cosine x 100), seed-matched", None, (AT,)),
    Claim("isf_lowers_sentence_anisotropy", "ISF spreads the sentence embeddings further (Figure 6; the code's masking rule)", "superiority",
          "CL + AT - CL + AT + ISF, sentence anisotropy (mean cosine x 100), seed-matched", None, (ISF,)),
    Claim("isf_attends_content", "ISF moves the last layer's attention to content words (Figure 7; the code's masking rule)", "superiority",
          "full - w/o ISF, attention received by content words x 100, seed-matched", None, (ISF,)),
    Claim("isf_leaves_sep", "ISF moves the last layer's attention away from [SEP] (Figure 7; the code's masking rule)", "superiority",
          "w/o ISF - full, attention received by [SEP] x 100, seed-matched", None, (ISF,)),
    Claim("isf_attends_low", "ISF emphasises the informative low-frequency words (Sec. 3.3; the code's masking rule, "
          "which masks high-frequency ones)", "superiority",
          "full - w/o ISF, attention received by LOW words x 100, seed-matched", None, (ISF,)),
    Claim("slt_fai_highest", "SLT-FAI achieves the highest average STS of all Table 1's methods (Sec. 4.2)",
          "superiority", "absolute average STS against every row of Table 1", None),
    Claim("lambda_30_50", "SLT-FAI performs better when λ is around 30-50 % (Sec. 4.3.1)", "superiority",
          "a range read from Figure 4", None),
]}
# claim id -> (the better row, the worse row, the measure: "avg", "stsb_dev" or a (section, key) of the frequency
# analysis, times 100)
COMPARED = {
    "slt_fai_beats_consert": (_FULL, "ConSERT", "avg"), "slt_fai_beats_simcse": ("SimCSE + SLT-FAI", "SimCSE", "avg"),
    "isf_helps_consert": (_FULL, _NO_ISF, "avg"), "at_helps_consert": (_FULL, _NO_AT, "avg"),
    "at_beats_isf_consert": (_NO_ISF, _NO_AT, "avg"),
    "isf_helps_simcse": ("SimCSE + SLT-FAI", "SimCSE + SLT-FAI w/o ISF", "avg"),
    "at_helps_simcse": ("SimCSE + SLT-FAI", "SimCSE + SLT-FAI w/o AT", "avg"),
    "lambda_half_best": (_FULL, BEST_OTHER_RATE, "stsb_dev"),
    "code_reading_matches": (_FULL, "ConSERT + SLT-FAI (code reading)", "avg"),
    "paper_isf_rule_matches": (_FULL, "ConSERT + SLT-FAI (the paper's ISF rule)", "avg"),
    "at_hides_frequency": ("ConSERT", _NO_ISF, ("tokens", "probe_accuracy")),
    "at_joins_centroids": ("ConSERT", _NO_ISF, ("tokens", "centroid_separation")),
    "at_lowers_token_anisotropy": ("ConSERT", _NO_ISF, ("tokens", "anisotropy")),
    "isf_lowers_token_anisotropy": (_NO_ISF, _FULL, ("tokens", "anisotropy")),
    "at_lowers_sentence_anisotropy": ("ConSERT", _NO_ISF, ("sentences", "anisotropy")),
    "isf_lowers_sentence_anisotropy": (_NO_ISF, _FULL, ("sentences", "anisotropy")),
    "isf_attends_content": (_FULL, _NO_ISF, ("attention_received", "content words")),
    "isf_leaves_sep": (_NO_ISF, _FULL, ("attention_received", "[SEP]")),
    "isf_attends_low": (_FULL, _NO_ISF, ("attention_received", "low-frequency words")),
    "at_beats_isf_simcse": ("SimCSE + SLT-FAI w/o ISF", "SimCSE + SLT-FAI w/o AT", "avg"),
    "cl_isotropic": ("ConSERT", None, ("tokens", "anisotropy")),  # None: a geometry claim, against the untrained PLM
}
# why a declared claim gets no verdict here (claims.not_run)
NOT_JUDGED = {"beats_wiki_baselines": "it compares absolute scores of other methods on another PLM, transcribed "
                                      "only (the wiki-trained baselines are not rerun here)",
              "slt_fai_highest": "it ranks absolute scores against transcribed rows of other methods (not rerun here)",
              "lambda_30_50": "a range read from a figure without numbers; the book tests the one point the text "
                              "states, λ = 0.5 (the row above), and shows the whole grid in Figure 4"}


def by_seed(group: list[dict], measure) -> dict[int, float]:
    """seed -> a run's `measure` (COMPARED's): average STS, kept STS-B dev or 100 x a frequency-analysis number."""
    if measure in ("avg", "stsb_dev"):
        return claims.by_seed(group, measure)
    section, key = measure
    return {r["seed"]: 100 * r["metrics"]["frequency"][section][key] for r in group}


def best_other_rate(runs: dict[str, list[dict]]) -> str | None:
    """The lambda row (not the preset's) with the best mean STS-B dev, the one Figure 4's claim is tested against."""
    rows = [name for name in runs if name.startswith("λ = ")]
    return max(rows, key=lambda n: np.mean([r["metrics"]["stsb_dev_best"] for r in runs[n]]), default=None)


def verdict_rows(runs: dict[str, list[dict]], checks: dict[str, dict], rule=None, plm_dev: float | None = None,
                 plm_analysis: dict | None = None) -> list[dict]:
    """Every declared claim's row (claims.judge): seed-matched differences of COMPARED's rows (a geometry claim: the
    row's values beside the untrained PLM's, from `plm_analysis`, its plm_frequency record), each component's
    engagement read from the discriminator checks; "not tested" with the reason where a row is not run."""
    rows = []
    for claim_id, claim in CLAIMS.items():
        if claim_id in NOT_JUDGED:
            rows.append(claims.not_run(claim, NOT_JUDGED[claim_id]))
            continue
        better, worse, measure = COMPARED[claim_id]
        if worse is None:  # a geometry claim: each seed's value beside the untrained PLM's
            if better not in runs or plm_analysis is None:
                rows.append(claims.not_run(claim, "its row or the untrained PLM's analysis is not run in this mode"))
                continue
            section, key = measure
            rows.append(claims.judge(claim, list(by_seed(runs[better], measure).values()), runs[better],
                                     rule=rule, plm_value=100 * plm_analysis["metrics"]["frequency"][section][key]))
            continue
        worse = best_other_rate(runs) if worse == BEST_OTHER_RATE else worse
        if worse not in runs or better not in runs:
            rows.append(claims.not_run(claim, "a row it compares is not run at this scale or in this mode"))
            continue
        values = {name: by_seed(runs[name], measure) for name in (better, worse)}
        seeds = sorted(set(values[better]) & set(values[worse]))
        shown = [r for name in (better, worse) for r in runs[name] if r["seed"] in seeds]
        rows.append(claims.judge(claim, claims.matched(values[better], values[worse]), shown,
                                 engagement(shown, claim.components, checks), rule=rule,
                                 tested=[r for r in shown if r["config"]["method"] == "slt_fai"], plm_dev=plm_dev))
    return rows
