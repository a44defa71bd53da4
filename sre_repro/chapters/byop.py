"""The BYOP chapter's plan: its grids, BYOP's four variants per PLM, RankCSE's students and teachers,
Figure 1's points and Table 10's transfer protocol; and the small tables behind its prose (Table 1's seed
labels, the paper's Tables 8-9 by perturbation, Figures 2-4's values at the first, kept and last evaluation)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import book, claims, protocol, report
from ..claims import Claim
from ..config import resolve
from ..errors import SreError
from ..evaluate.cached import cached
from ..evaluate.transfer import TRANSFER_TASKS, check_solver

# The cpu edition runs a subset of Appendix B's margin grid and of Tables 8-9's perturbations so that the
# chapter stays within its time; the list parameters (`-p byopc_margins`, `-p perturbations`) run the rest.
GRIDS = {
    "ifm_margins": {"smoke": [0.1], "default": [0.01, 0.05, 0.1]},
    # paper: Appendix B's m in [0.01, 0.10] by 0.01
    # cpu: the range's two ends (0.01 is Table 6's BYOPC margin, so only 0.1 is an extra run)
    "byopc_margins": {"smoke": [0.01], "cpu": [0.01, 0.1], "paper": [round(0.01 * k, 2) for k in range(1, 11)],
                      "default": [0.01, 0.03, 0.05, 0.07, 0.1]},
    # cpu: Table 6's two BYOPD perturbations for BERT-base (n- single, p+n- multi-task), each tried with the other loss
    "byopd_perturbations": {"smoke": ["n-"], "cpu": ["n-", "p+n-"], "default": ["p-n-", "p+n-", "p+", "p-", "n-"]},
}


def grid(name: str, scale: str, chosen=None) -> list:
    return book.grid(GRIDS, name, scale, chosen)


# Table 3's student seeds per scale: the first n of the chapter's seeds (all where a scale is not named). At
# cpu the secondary claims' three (SECONDARY_SEEDS); each is taught by two SimCSE runs of the chapter's seeds.
RANKCSE_STUDENTS = {"cpu": 3}
# the seeds of the claims that are not the paper's headline (BYOPC, the variance, RankCSE + BYOP), and of the
# per-column reading of BYOPD's margin: the first three of the chapter's
SECONDARY_SEEDS = 3


def rankcse_seeds(scale: str, seed_list: list[int], chosen=None) -> list[int]:
    """Table 3's student seeds: `chosen` when given, else the scale's first n of `seed_list`."""
    book._check_scale(scale)
    chosen = book.as_list(chosen, "rankcse_seeds")
    return chosen if chosen else seed_list[:RANKCSE_STUDENTS.get(scale, len(seed_list))]


def leave_one_out_teachers(students: list[int], pool: list[int] | None = None,
                           method: str = "simcse") -> dict[int, dict]:
    """RankCSE's teachers per student seed: the book's `method` runs at the first two other seeds of `pool`
    (default: the students), so the teachers are the chapter's own SimCSE rows and no student is taught by a
    run of its own seed. Where the pool has no other seed: the method's default teachers ({})."""
    others = {s: [t for t in (pool or students) if t != s][:2] for s in students}
    return {s: {"teachers": ",".join(f"{method}:{t}" for t in others[s])} if others[s] else {} for s in students}


def transfer_variants(scale: str, ranked: list[str], chosen=None) -> list[str]:
    """The BYOP variants of Table 10: `chosen` when given, else the scale's number of the best on dev."""
    chosen = book.as_list(chosen, "transfer_variants")
    unknown = [name for name in chosen if name not in ranked]
    if unknown:
        raise SreError(f"unknown BYOP variant {unknown[0]!r} in transfer_variants: choose from {', '.join(ranked)}")
    return chosen or ranked[:TRANSFER_PROTOCOL[scale]["byop_variants"]]


def paper_plm(model_name: str) -> str:
    """The BYOP paper's PLM label whose settings a model uses: its own where it is one of the paper's four,
    BERT-base for the stand-in and anything else (the paper's smallest BERT)."""
    from ..papers.byop import PLMS

    return next((label for label, hub in PLMS.items() if hub == model_name), "BERT-base")


def byop_variants(scale: str, model_name: str = "", dynamic_margin_axis: str | None = None) -> dict[str, dict]:
    """Run overrides of BYOP's four variants from the paper's Table 6 row for the PLM: margin type,
    perturbation, constant margin and loss; at paper scale also its batch size, lr and temperature (the
    smaller editions keep their own presets). `dynamic_margin_axis`, when given, goes to the BYOPD variants
    only (a BYOPC run does not use it, so it keeps its identity whatever the axis)."""
    from ..papers.byop import TABLE6_SETTINGS

    plm = paper_plm(model_name or book.plms(scale)[0])
    out = {}
    for variant, by_plm in TABLE6_SETTINGS.items():
        batch, lr, tau, margin, perturbation = by_plm[plm]
        overrides = {"method": "byop", "margin_type": "constant" if variant.startswith("BYOPC") else "dynamic",
                     "perturbation": perturbation, "loss_mode": "multi-task" if variant.endswith("-M") else "single"}
        if margin is not None:
            overrides["margin"] = margin
        if overrides["margin_type"] == "dynamic" and dynamic_margin_axis is not None:
            overrides["dynamic_margin_axis"] = dynamic_margin_axis
        if scale == "paper":
            overrides.update(batch_size=batch, lr=lr, temperature=tau)
        out[f"SimCSE +{variant}"] = overrides
    return out


def seeds_label(group: list[dict]) -> str:
    """What a cell of mean values rests on: "3 seeds" for several runs, "seed 42" for one."""
    return f"{len(group)} seeds" if len(group) > 1 else f"seed {group[0]['seed']}"


def labelled_means(groups: dict[str, list[dict]]) -> dict[str, str]:
    """Table 1's "ours" cells: each row's average STS, the mean over its runs, labelled with the seeds it
    rests on ("77.10 (3 seeds)", "76.80 (seed 42)"), since Table 2's rows have every seed and the others one."""
    return {name: f"{np.mean([r['metrics']['sts']['avg'] for r in group]):.2f} ({seeds_label(group)})"
            for name, group in groups.items()}


def paper_ablation(plm: str) -> pd.DataFrame:
    """The paper's Tables 8-9 for a PLM by perturbation: the top row of each ("BYOPD", "BYOPD-M") is put
    under the perturbation Table 6 gives that variant, so every row is a perturbation (NaN: not reported)."""
    from ..papers.byop import TABLE6_SETTINGS, TABLE8_SINGLE, TABLE9_MULTI

    columns = {}
    for column, table, variant in (("single (Table 8)", TABLE8_SINGLE, "BYOPD"),
                                   ("multi-task (Table 9)", TABLE9_MULTI, "BYOPD-M")):
        top = TABLE6_SETTINGS[variant][plm][-1]
        columns[column] = {top if name == variant else name: value for name, value in table[plm].items()}
    return pd.DataFrame(columns).reindex(["p-n-", "p+n-", "p+", "p-", "n-"])


def perturbation_share(run: dict, reference: dict | None = None) -> tuple[float, float]:
    """(plain, perturbed): the loss of one batch without and with the run's margin, at the first step (same
    weights, same batch, same dropout). A multi-task run logs both terms; a single-loss run's loss is the
    perturbed one, and the same seed's run without the margin (`reference`: SimCSE for SimCSE + BYOP, RankCSE for
    RankCSE + BYOP) computed the plain one on that very batch (the seed fixes the batches and the masks)."""
    terms = (run.get("training") or {}).get("terms") or {}
    if "loss_plain" in terms and "loss_perturbed" in terms:
        return terms["loss_plain"]["first"], terms["loss_perturbed"]["first"]
    if reference is None or reference["seed"] != run["seed"]:
        raise SreError(f"a single-loss margin run (seed {run['seed']}) is set against the same seed's run without "
                       "the margin: pass it as the reference")
    return reference["training"]["loss_first"], run["training"]["loss_first"]


def margin_readings(with_margin: list[dict], without: list[dict]) -> list[dict]:
    """Seed by seed: the first batch's loss without and with the margin (perturbation_share; `without`: the same
    seeds' runs without it) and protocol.engaged's reading of the change."""
    by_seed = {r["seed"]: r for r in without}
    readings = []
    for run in with_margin:
        plain, perturbed = perturbation_share(run, by_seed.get(run["seed"]))
        ok, why = protocol.engaged("perturbation", plain=plain, perturbed=perturbed)
        readings.append({"seed": run["seed"], "plain": plain, "perturbed": perturbed, "engaged": ok, "why": why})
    return readings


def perturbation_engagement(with_margin: list[dict], without: list[dict]) -> tuple[bool, str]:
    """protocol.engaged for a margin over a claim's runs: at every seed the margin changes the first batch's loss
    by at least protocol.PERTURBATION_SHARE. For RankCSE + BYOP the loss is RankCSE's whole loss, so a margin on
    an InfoNCE term that weighs nothing there does not engage."""
    by_seed = {r["seed"]: (r["engaged"], r["why"]) for r in margin_readings(with_margin, without)}

    def summary(whys):  # each seed's share, read from protocol.engaged's "... by 5.56% ..."
        return f"at every seed ({', '.join(why.split(' by ')[1].split(' ')[0] for why in whys)} of the first batch's loss)"

    return claims.engaged_in_every(with_margin, lambda run: by_seed[run["seed"]], summary)


def margin_table(pairs: dict[str, tuple[list[dict], list[dict]]]) -> pd.DataFrame:
    """margin_readings of each claim's runs (name -> (runs with the margin, the same seeds' runs without))."""
    rows = [{"runs": name, "seed": r["seed"], "loss without the margin": round(r["plain"], 4),
             "with it": round(r["perturbed"], 4), "change": f"{abs(r['perturbed'] - r['plain']) / abs(r['plain']):.2%}",
             "engaged": "yes" if r["engaged"] else "no"}
            for name, (with_margin, without) in pairs.items() for r in margin_readings(with_margin, without)]
    return pd.DataFrame(rows).set_index(["runs", "seed"])


def axis_reading(by_axis: dict[str, list[dict]], simcse: list[dict]) -> pd.DataFrame:
    """BYOPD under each reading of its dynamic margin (name -> runs) beside SimCSE, over the seeds every reading
    ran: each seed's average STS, the mean seed-matched difference over SimCSE and its 95% t-interval."""
    seeds = sorted(set.intersection(*(set(claims.by_seed(g)) for g in [*by_axis.values(), simcse])))
    base = claims.by_seed(simcse)
    rows = {}
    for name, group in {"SimCSE": simcse, **by_axis}.items():
        score = claims.by_seed(group)
        rows[name] = {f"seed {s}": round(score[s], 2) for s in seeds}
        if name != "SimCSE":
            result = protocol.claim_verdict([score[s] - base[s] for s in seeds], "superiority")
            rows[name]["minus SimCSE"] = round(result["mean"], 2)
            rows[name]["95% interval"] = ("[{:.2f}, {:.2f}]".format(*result["interval"]) if "interval" in result else "–")
    return report.dashed(pd.DataFrame.from_dict(rows, orient="index"))


def geometry_points(runs: dict[str, dict], prefix: str = "") -> pd.DataFrame:
    """Figures 2-4 in numbers: per run, alignment and uniformity (dev-curve keys `prefix` + name; "" = STS-B
    dev, "train_" = the training views; both are losses, lower is better) at the first evaluation, at the
    kept step (`best_step`, else the last evaluation) and at the last evaluation. NaN where a run's curve
    lacks the key."""
    columns = ["first step", "kept step", "last step",
               *[f"{m} ({w})" for m in ("alignment", "uniformity") for w in ("first", "kept", "last")]]
    rows = {}
    for name, run in runs.items():
        curve = [p for p in run["dev_curve"] if prefix + "alignment" in p]
        if not curve:
            rows[name] = {}
            continue
        points = {"first": curve[0], "kept": next((p for p in curve if p["step"] == run["metrics"].get("best_step")),
                                                  curve[-1]), "last": curve[-1]}
        rows[name] = {f"{w} step": points[w]["step"] for w in points}
        rows[name].update({f"{m} ({w})": points[w][prefix + m] for m in ("alignment", "uniformity") for w in points})
    return pd.DataFrame.from_dict(rows, orient="index").reindex(index=list(runs), columns=columns)


def at_common_step(runs: dict[str, dict], prefix: str = "") -> pd.DataFrame:
    """Alignment and uniformity (dev-curve keys `prefix` + name, as geometry_points) of every run at the last step
    all of them evaluated, so that runs stopped at different steps are compared at one point of training."""
    curves = {name: {p["step"]: p for p in run["dev_curve"] if prefix + "alignment" in p} for name, run in runs.items()}
    step = max(set.intersection(*(set(c) for c in curves.values())))
    return pd.DataFrame({name: {"step": step, **{m: c[step][prefix + m] for m in ("alignment", "uniformity")}}
                         for name, c in curves.items()}).T


def perturbation_points(model: str, sentences: list[str], margin: float, pooler: str = "avg", seed: int = 0,
                        anchor: int = 0) -> pd.DataFrame:
    """BYOP's Figure 1 in numbers: one batch through the PLM twice with dropout (z, z'), anchor z_i, its
    positive z'_i and negatives z'_j, and where the margins move them. On unit vectors a logit margin is a
    move along the anchor: cos(z_i, z'_i - m z_i) = cos(z_i, z'_i) - m (Robinson et al.), so IFM takes the
    positive to z'_i - m z_i and each negative to z'_j + m z_i; BYOP (p+n-) does the opposite. All points
    are projected on the first two principal components of the unmoved ones."""
    import torch
    from sklearn.decomposition import PCA

    from ..encoder import Encoder

    encoder = Encoder(model, pooler=pooler, device="cpu").train()  # dropout on: the two views differ
    torch.manual_seed(seed)
    with torch.no_grad():
        z1, z2 = encoder.embed(encoder.tokenize(list(sentences) * 2), pooler=pooler).chunk(2)
    z1, z2 = torch.nn.functional.normalize(z1, dim=1), torch.nn.functional.normalize(z2, dim=1)
    a = z1[anchor]
    others = [j for j in range(len(sentences)) if j != anchor]
    base = {"anchor": [a], "positive": [z2[anchor]], "negative": [z2[j] for j in others]}
    moved = {"IFM positive": (z2[anchor], -1), "BYOP positive": (z2[anchor], 1)}
    moved.update({f"IFM negative {j}": (z2[j], 1) for j in others})
    moved.update({f"BYOP negative {j}": (z2[j], -1) for j in others})
    pca = PCA(n_components=2).fit(torch.stack([v for vs in base.values() for v in vs]).numpy())
    rows = []
    for role, vectors in base.items():
        for xy in pca.transform(torch.stack(vectors).numpy()):
            rows.append({"role": role, "x": xy[0], "y": xy[1], "from_x": xy[0], "from_y": xy[1]})
    for role, (start, sign) in moved.items():
        (fx, fy), (x, y) = pca.transform(torch.stack([start, start + sign * margin * a]).numpy())
        rows.append({"role": role, "x": x, "y": y, "from_x": fx, "from_y": fy})
    return pd.DataFrame(rows)


# BYOP's Figure 1 batch: the probe pairs every run records, and four more sentences, written for this book
FIGURE1_SENTENCES = ["A man is driving east on the highway.", "A woman is frying some food in a pan.",
                     "Two children are playing football in the park.", "The stock market fell sharply today.",
                     "A cat is sleeping on the sofa.", "The committee approved the new budget.",
                     "Heavy rain flooded the streets of the town.", "He plays the guitar in a small band."]


# SentEval's transfer protocol per scale: the papers' 10-fold at paper scale; 3 folds on the CPU (the nested
# search fits 6 C values x k inner folds for each of k outer folds: 3 folds cost a quarter of 5), two small
# tasks for smoke. `byop_variants`: how many BYOP variants Table 10 evaluates, the best on STS-B dev first
# (None: all four). `sst2_train`: SST-2 training phrases (0: all 67,349); at cpu a stratified 10,000, since
# encoding and fitting all of them was about 45% of a Table 10 row (on 2 cores a row took about 4 min with
# all of them, 2.5-3 min with the sample).
# smoke: each split cut to 300 evenly spaced examples (max_examples), so the tests' chapter stays short
TRANSFER_PROTOCOL = {"smoke": {"tasks": ["TREC", "MRPC"], "kfold": 2, "sst2_train": 0, "byop_variants": 1,
                               "max_examples": 300},
                     "cpu": {"tasks": None, "kfold": 3, "sst2_train": 10000, "byop_variants": 1},
                     "paper": {"tasks": None, "kfold": 10, "sst2_train": 0, "byop_variants": None}}


def transfer(source: dict, scale: str, data_dir=None, force: bool = False, tasks=None, kfold: int = 0,
             solver: str = "liblinear", allow_stale: bool = True) -> dict:
    """Cached SentEval transfer accuracies (BYOP's Table 10) of a PLM as it is (`source` = {"model_name",
    "pooler"}) or of a training run's kept weights (`source` = the run's overrides, e.g. {"method": "byop",
    "seed": 42, ...}; trained once if its weights are not kept yet, see train.kept_checkpoint)."""
    book._check_scale(scale)
    protocol = TRANSFER_PROTOCOL[scale]
    chosen = list(tasks or protocol["tasks"] or TRANSFER_TASKS)
    if "method" in source:
        run = resolve(overrides={"scale": scale, **source})
        cfg = {"run": run, "model_name": run["model_name"]}
    else:
        cfg = {"model_name": source["model_name"], "pooler": source["pooler"]}
    cfg.update(tasks=chosen, kfold=kfold or protocol["kfold"], sst2_train=protocol["sst2_train"],
               mrpc_features="senteval", solver=solver, max_examples=protocol.get("max_examples", 0))
    check_solver(solver)
    return cached("transfer", cfg, data_dir, force, allow_stale=allow_stale)


def paper_gains(plm: str) -> dict[str, float]:
    """The paper's own effect for each verdict of the chapter (average STS, Tables 1 and 7, the PLM this one
    stands in for): each SimCSE variant and IFM over SimCSE, each RankCSE variant over RankCSE-ListMLE."""
    from ..papers.byop import TABLE1_IFM, TABLE7

    avg = {name: row[-1] for name, row in TABLE7[plm].items()}
    gains = {name: value - avg["SimCSE"] for name, value in avg.items() if name.startswith("SimCSE +")}
    gains["SimCSE +IFM"] = TABLE1_IFM[plm] - avg["SimCSE"]
    if "RankCSE-ListMLE" in avg:
        gains.update({name: value - avg["RankCSE-ListMLE"] for name, value in avg.items() if name.startswith("RankCSE-ListMLE +")})
    return gains


# The claims the chapter judges, with the paper's effects for BERT-base (the PLM sre-bert stands in for): each
# method minus its baseline in average STS (Tables 1 and 7), and the ratio of BYOPD's standard deviation over seeds
# to SimCSE's (Table 2). A margin adds no module: every claim about one needs it to engage (perturbation_engagement).
MARGIN = "the margin"
_GAIN = paper_gains("BERT-base")


def _table2_ratio() -> float:
    from ..papers.byop import TABLE2_SEEDS

    seeds = TABLE2_SEEDS["BERT-base"]
    return seeds["SimCSE +BYOPD"][1] / seeds["SimCSE"][1]


CLAIMS = {c.id: c for c in [
    Claim("byopd_beats_simcse", "SimCSE + BYOPD beats SimCSE on average STS", "superiority",
          "SimCSE + BYOPD - SimCSE, average STS, seed-matched (Table 7)", _GAIN["SimCSE +BYOPD"], (MARGIN,),
          headline=True),
    Claim("ifm_beats_simcse", "IFM improves SimCSE on a base-size PLM", "superiority",
          "SimCSE + IFM - SimCSE, average STS, seed-matched (Table 1)", _GAIN["SimCSE +IFM"], (MARGIN,), headline=True),
    Claim("byopd_beats_ifm", "boosting beats removing: SimCSE + BYOPD beats SimCSE + IFM on average STS", "superiority",
          "SimCSE + BYOPD - SimCSE + IFM, average STS, seed-matched (Tables 1 and 7)",
          _GAIN["SimCSE +BYOPD"] - _GAIN["SimCSE +IFM"], (MARGIN,)),
    Claim("byopc_beats_simcse", "SimCSE + BYOPC beats SimCSE on average STS", "superiority",
          "SimCSE + BYOPC - SimCSE, average STS, seed-matched (Table 7)", _GAIN["SimCSE +BYOPC"], (MARGIN,)),
    Claim("byopd_varies_less", "SimCSE + BYOPD varies less over seeds than SimCSE", "variance",
          "std over seeds of SimCSE + BYOPD / of SimCSE, average STS (Table 2)", _table2_ratio(), (MARGIN,)),
    Claim("rankcse_byopc_helps", "BYOPC helps RankCSE-ListMLE", "superiority",
          "RankCSE-ListMLE + BYOPC - RankCSE-ListMLE, average STS, seed-matched, same teachers (Table 7)",
          _GAIN["RankCSE-ListMLE +BYOPC"], (MARGIN,)),
    Claim("rankcse_byopd_helps", "BYOPD helps RankCSE-ListMLE", "superiority",
          "RankCSE-ListMLE + BYOPD - RankCSE-ListMLE, average STS, seed-matched, same teachers (Table 7)",
          _GAIN["RankCSE-ListMLE +BYOPD"], (MARGIN,)),
]}
