"""The PaSeR chapter's plan: Table 1's trained rows (SimCSE and SimCSE + MLM on the same unlabelled STS
sentences as PaSeR), supervised PaSeR (Table 2), Eq. 2's signal, PaSeR without its MLM term and no augmentation
beside the book's PaSeR, the
ablation grids (decoder depth, augmentation, masking, m and n), QQP retrieval, the pooler comparison and the
decoder check of a run's kept weights (records of their own kinds), the QQP neighbours and decoder
reconstructions shown, and the claims it judges with the paper's effects."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import book, claims, protocol, report
from ..claims import Claim
from ..config import resolve
from ..errors import SreError
from ..evaluate.cached import cached
from ..evaluate.hard_subset import YEARS

# The cpu edition runs the ends of each grid that the claims need; the list parameters run the rest.
GRIDS = {
    "decoder_layers": {"smoke": [1], "default": [1, 2, 3, 4, 5, 7, 8]},   # besides the preset's 6 (Figure 4: 1-8)
    "augments": {"smoke": ["none"], "default": ["none", "rs", "rd", "sr+rd", "sr+rs"]},
    "maskings": {"smoke": ["RAKE top1", "NP+VP"],
                 "default": ["NP", "VP", "NP+VP", "RAKE top1", "RAKE top2", "RAKE top3", "RAKE top4"]},
    "mn": {"smoke": [[1.0, 1.0]], "default": [[0.1, 1.0], [1.0, 1.0], [10.0, 1.0], [10.0, 0.1]]},
    "poolers": {"default": ["cls", "avg", "avg_top2", "avg_first_last", "avg_first_last_emb"]},
    # QQP pairs retrieval is scored on (0: the whole test split; smoke: an evenly spaced subset)
    "qqp_pairs": {"smoke": [1000], "default": [0]},
}
# Table 5's rows: name -> PaSeR overrides (RAKE top-5 is the preset; NP/VP use the syntactic stand-in)
MASKINGS = {"NP": {"phrase_extractor": "syntactic", "syntactic_types": "NP"},
            "VP": {"phrase_extractor": "syntactic", "syntactic_types": "VP"},
            "NP+VP": {"phrase_extractor": "syntactic", "syntactic_types": "NP+VP"},
            **{f"RAKE top{k}": {"mask_top_k": k} for k in range(1, 6)}}
# How many seeds each part runs at each scale (the first n of the edition's seeds): Table 2 is a headline (five,
# claims.HEADLINE_SEEDS); SimCSE + MLM, Eq. 2's signal, PaSeR without MLM and "no augmentation" carry claims that
# are not (three).
# QQP retrieval of the supervised rows reads kept weights (supervised SimCSE's committed cpu records predate it: a
# machine without their weights retrains each once, 15-35 CPU minutes a seed): three seeds
SEED_COUNTS = {"supervised": {"smoke": 1, "default": 5}, "simcse_mlm": {"smoke": 1, "default": 3},
               "secondary": {"smoke": 1, "default": 3}, "qqp_supervised": {"smoke": 1, "default": 3}}
DECODER_MODULES = ["decoder"]
# the masked view's decoder loss, the term a claim about PaSeR's objective rests on
GENERATIVE_TERMS = ["loss_generative"]


def grid(name: str, scale: str, chosen=None) -> list:
    return book.grid(GRIDS, name, scale, chosen)


def seed_count(part: str, scale: str, chosen: int = 0) -> int:
    return chosen or SEED_COUNTS[part].get(scale, SEED_COUNTS[part]["default"])


def masking(name: str) -> dict:
    if name not in MASKINGS:
        raise SreError(f"unknown masking row {name!r}: choose from {', '.join(MASKINGS)}")
    return MASKINGS[name]


def supervised_overrides(scale: str) -> dict:
    """Supervised PaSeR's overrides: NLI triplets with supervised SimCSE's recipe at this scale (learning rate,
    batch, length of training), so that Table 2's two rows differ in PaSeR's generative term and in the checkpoint
    supervised PaSeR starts from (the unsupervised PaSeR run's, as the paper's)."""
    sup = resolve(overrides={"method": "simcse_sup", "scale": scale})
    return {"supervised": True, "train_data": "snli", **{k: sup[k] for k in ("lr", "batch_size", "epochs", "max_steps")}}


def unsupervised_rows() -> dict[str, tuple[str, dict]]:
    """Table 1's trained rows: name -> (method, overrides); all train on the unlabelled STS sentences."""
    return {"SimCSE": ("simcse", {"train_data": "sts_unlabeled"}),
            "SimCSE + MLM": ("simcse_mlm", {"train_data": "sts_unlabeled"}), "PaSeR": ("paser", {})}


def plan(scale: str, seed_list: list[int], decoder_layers=None, augments=None, maskings=None, mn=None,
         supervised_seeds: int = 0, mlm_seeds: int = 0) -> dict[str, tuple[str, list[int], dict]]:
    """Every training run the chapter shows: group name -> (method, seeds, overrides). The grids' rows run
    with the first seed; the preset's own row is PaSeR's."""
    n_sup, n_mlm = seed_count("supervised", scale, supervised_seeds), seed_count("simcse_mlm", scale, mlm_seeds)
    few = seed_list[:seed_count("secondary", scale)]
    groups = {name: (method, seed_list[:n_mlm] if name == "SimCSE + MLM" else seed_list, overrides)
              for name, (method, overrides) in unsupervised_rows().items()}
    groups["PaSeR (Eq. 2 signal)"] = ("paser", few, {"signal": "paper"})
    # Sec. 4.3 (ii): MLM hurts SimCSE but not PaSeR, "naturally combined with MLM"; the paper runs no PaSeR without it
    groups["PaSeR (no MLM)"] = ("paser", few, {"mlm_weight": 0.0})
    groups["SimCSE (supervised)"] = ("simcse_sup", seed_list[:n_sup], {})
    groups["PaSeR (supervised)"] = ("paser", seed_list[:n_sup], supervised_overrides(scale))
    first = seed_list[:1]
    groups.update({f"decoder layers {n}": ("paser", first, {"decoder_layers": int(n)})
                   for n in grid("decoder_layers", scale, decoder_layers)})
    # "no augmentation" carries a claim of its own (Table 4: SR +3.9 over none): the secondary seeds
    groups.update({f"augment {a}": ("paser", few if a == "none" else first, {"augment": a})
                   for a in grid("augments", scale, augments)})
    groups.update({f"masking {name}": ("paser", first, masking(name)) for name in grid("maskings", scale, maskings)})
    groups.update({mn_label((m, n)): ("paser", first, {"m": float(m), "n": float(n)})
                   for m, n in grid("mn", scale, mn)})
    return groups


# ----- evaluations of kept weights ------------------------------------------------------------------------------

def retrieval(source: dict, data_dir=None, map_cutoff="full", force: bool = False, max_pairs: int = 0,
              allow_stale: bool = True) -> dict:
    """QQP retrieval (evaluate/retrieval.py) of a run's kept weights, or of a model as it is
    (`source` = {"model_name": ..., "pooler": ...}): a cached record of kind "retrieval" with its wall time."""
    if "config" in source:
        cfg = resolve(overrides=source["config"])
        key = {"run": cfg, "model_name": cfg["model_name"], "map_cutoff": str(map_cutoff)}
    else:
        key = {"model_name": source["model_name"], "pooler": source["pooler"], "map_cutoff": str(map_cutoff)}
    return cached("retrieval", {**key, "max_pairs": max_pairs}, data_dir, force, allow_stale=allow_stale)


def pooler_scores(run: dict, poolers: list[str], data_dir=None, force: bool = False, allow_stale: bool = True) -> dict:
    """STS of a run's kept weights under each pooler (Table 9; the run's own pooler is its record): a cached
    record of kind "poolers" with its wall time."""
    cfg = resolve(overrides=run["config"])
    return cached("poolers", {"run": cfg, "model_name": cfg["model_name"], "poolers": list(poolers)}, data_dir, force,
                  allow_stale=allow_stale)


# held-out sentences of the decoder check (evaluate/decoder.py), and as many training sentences for its share
DECODER_SENTENCES = {"smoke": 32, "cpu": 1000, "paper": 2000}


def decoder_check(run: dict, data_dir=None, force: bool = False, allow_stale: bool = True) -> dict:
    """Does the kept decoder read the sentence embeddings? Its held-out loss with each sentence's own signal and
    with a neighbour's, the targets' unigram entropy, the training sentences without decoder loss and three
    masked views: a cached record of kind "decoder_check" (trained once where this machine lacks the weights)."""
    cfg = resolve(overrides=run["config"])
    return cached("decoder_check", {"run": cfg, "max_sentences": DECODER_SENTENCES[cfg["scale"]]}, data_dir, force,
                  allow_stale=allow_stale)


# ----- tables -----------------------------------------------------------------------------------------------------

def ablation_row(runs: list[dict]) -> list[float]:
    """[STS12-16 average, STS-B, SICK-R, STS-B dev (kept)] of a group of runs (mean over them)."""
    return [float(np.mean([np.mean([r["metrics"]["sts"][y] for y in YEARS]) for r in runs])),
            float(np.mean([r["metrics"]["sts"]["STSBenchmark"] for r in runs])),
            float(np.mean([r["metrics"]["sts"]["SICKRelatedness"] for r in runs])),
            float(np.mean([r["metrics"]["stsb_dev_best"] for r in runs]))]


def ablation_table(groups: dict[str, list[dict]], paper: dict, reference: str, versus: str = "PaSeR") -> pd.DataFrame:
    """Tables 4, 5, 8 and 9 laid out as the paper does (STS12-16 average, STS-B, SICK-R), ours and STS-B dev beside
    the paper's three columns; each row's difference to `reference` (the book's PaSeR; `versus` names it) in both,
    which is what compares. The paper's rows this call did not run (its BERT-[CLS] row, a grid value left out)
    follow, with ours blank."""
    ours = {name: ablation_row(runs) for name, runs in groups.items()}
    rows = {}
    for name in [*ours, *(n for n in paper if n not in ours)]:
        row, theirs = ours.get(name, [np.nan] * 4), paper.get(name)
        label = mn_label(name) if isinstance(name, tuple) else name  # Table 8's rows: (m, n)
        rows[label] = {"STS12-16 (ours)": row[0], "STS-B (ours)": row[1], "SICK-R (ours)": row[2], "STS-B dev (ours)": row[3],
                       f"STS12-16 minus {versus} (ours)": row[0] - ours[reference][0],
                       **{f"{column} (paper)": theirs[i] if theirs else np.nan for i, column in enumerate(["STS12-16", "STS-B", "SICK-R"])},
                       f"STS12-16 minus {versus} (paper)": theirs[0] - paper[reference][0] if theirs else np.nan,
                       "seeds": ", ".join(str(r["seed"]) for r in groups[name]) if name in groups else "the paper's row, not run"}
    return pd.DataFrame(rows).T.infer_objects().round(2)


def retrieval_table(results: dict[str, list[dict]]) -> pd.DataFrame:
    """Table 3: QQP MAP and MRR@10 per row (mean over its records; rows without records left out)."""
    rows = {}
    for name, records in ((n, r) for n, r in results.items() if r):  # a row without records at this scale is left out
        rows[name] = {"QQP MAP": float(np.mean([r["metrics"]["map"] for r in records])),
                      "QQP MRR@10": float(np.mean([r["metrics"]["mrr@10"] for r in records])),
                      "records": len(records)}
    return pd.DataFrame(rows).T.round(2)


def neighbours(simcse: dict, paser: dict, data_dir=None, count: int = 2) -> list[dict]:
    """Table 6 by a stated rule (the paper's queries are not in the offline split): the first `count` queries,
    in the file's order, whose top-1 neighbours under the two models differ; each with both top-3 lists."""
    from ..evaluate.retrieval import qqp_task

    queries, corpus, relevant = qqp_task("test", data_dir, simcse["metrics"].get("max_pairs", 0))
    shown = []
    for i, (a, b) in enumerate(zip(simcse["metrics"]["top"], paser["metrics"]["top"])):
        if a[0] != b[0]:
            shown.append({"query": queries[i], "SimCSE": [(corpus[j], j in relevant[i]) for j in a],
                          "PaSeR": [(corpus[j], j in relevant[i]) for j in b]})
        if len(shown) == count:
            break
    return shown


def neighbour_frame(case: dict) -> pd.DataFrame:
    mark = lambda pair: f"{pair[0]}{' ✓' if pair[1] else ''}"  # noqa: E731  (✓: a labelled duplicate)
    return pd.DataFrame({"SimCSE": [mark(p) for p in case["SimCSE"]], "PaSeR": [mark(p) for p in case["PaSeR"]]},
                        index=[f"top {i + 1}" for i in range(len(case["SimCSE"]))])


def reconstruction_frame(run: dict) -> pd.DataFrame:
    from ..papers.paser import TABLE7

    paper = {raw: generated for raw, _, generated in TABLE7}
    return pd.DataFrame([{"sentence": r["sentence"], "masked (ours)": r["masked"], "phrase": r["phrase"],
                          "generated (ours)": r["generated"] or "(nothing)", "generated (paper)": paper.get(r["sentence"], "")}
                         for r in run["metrics"]["reconstructions"]])


def reconstruction_table(groups: dict[str, list[dict]]) -> pd.DataFrame:
    """Did the decoder learn? Per run: the reconstruction of STS-B dev sentences (phrases masked, no augmentation;
    the unsupervised runs train on them, so not held out) at the first evaluation and at the kept step (teacher-forced loss and token accuracy), and
    the training decoder loss first -> kept; the decoder's and the PLM's movement."""
    rows = {}
    for name, runs in groups.items():
        for r in runs:
            curve = {p["step"]: p for p in r["dev_curve"]}
            first, kept = r["dev_curve"][0], curve.get(r["metrics"]["best_step"], r["dev_curve"][-1])
            term = r["training"]["terms"].get("loss_generative", {})
            rows[f"{name} (seed {r['seed']})"] = {
                "STS-B dev loss first → kept": f"{first['recon_loss']:.3f} → {kept['recon_loss']:.3f}",
                "STS-B dev accuracy first → kept (%)": f"{first['recon_accuracy']:.1f} → {kept['recon_accuracy']:.1f}",
                "train decoder loss first → kept": f"{term.get('first', np.nan):.3f} → {term.get('kept', np.nan):.3f}",
                "moved: decoder": f"{100 * r['training']['moved']['decoder']:.2f}%",
                "moved: plm": f"{100 * r['training']['moved']['plm']:.2f}%"}
    return pd.DataFrame(rows).T


def level_statistics(groups: dict[str, list[dict]], gold) -> pd.DataFrame:
    """Table 10: mean / variance of the STS-B test cosine within each gold level, per group (mean over runs)."""
    from ..plots import GOLD_GROUPS, gold_level

    gold = np.asarray(gold)
    rows = {}
    for name, runs in groups.items():
        cells = {}
        for lo, hi in GOLD_GROUPS:
            inside = gold_level(gold, lo, hi)
            values = [np.asarray(r["metrics"]["stsb_test_cosine"])[inside] for r in runs]
            cells[f"{lo}-{hi}"] = f"{np.mean([v.mean() for v in values]):.2f} / {np.mean([v.var() for v in values]):.3f}"
        rows[name] = cells
    return pd.DataFrame(rows).T


def level_variances(runs: list[dict], gold, relative: bool = False) -> np.ndarray:
    """Per run, the STS-B test cosine variance in each gold level (runs x levels); `relative`: divided by the
    variance of all the run's cosines, as `report.cosine_spread` (the SARCSE chapter's), which computes both."""

    spread = report.cosine_spread({"": runs}, gold)
    relative_variances = spread.drop(columns="total variance").to_numpy()
    return relative_variances if relative else relative_variances * spread[["total variance"]].to_numpy()


def average_sts(runs: list[dict]) -> np.ndarray:
    return np.array([r["metrics"]["sts"]["avg"] for r in runs])


# ----- claims -----------------------------------------------------------------------------------------------------

PARITY_MARGIN = 0.5  # points of average STS: "comparable" (Table 1's -0.09) holds when both one-sided tests pass
                     # against +-0.5, the book's parity margin (PT-BERT's chapter uses the same), set before these runs
DECODER = "the phrase decoder"  # the component every claim about PaSeR's objective rests on
MLM = "the MLM term"  # the component the claims about adding MLM (to SimCSE, to PaSeR) rest on


def _paper_effects() -> dict[str, float]:
    """The paper's own effect (BERT-base, method minus its baseline) behind each claim: average STS from Tables 1
    and 2, MAP / MRR@10 from Table 3, STS12-16 from Tables 4, 5, 8 and 9, alignment from Figure 6 (App. D)."""
    from ..papers import paser as paper

    avg1, avg2 = ({k: v[-1] for k, v in t.items()} for t in (paper.TABLE1, paper.TABLE2))
    t3u, t3s = paper.TABLE3["unsupervised"], paper.TABLE3["supervised"]
    t4, t5 = paper.TABLE4_AUGMENTATION, paper.TABLE5_MASKING
    levels = {name: np.mean([v for _, v in rows]) for name, rows in paper.TABLE10.items()}
    return {"paser_vs_simcse": avg1["PaSeR-BERT-base"] - avg1["SimCSE-BERT-base"],
            "four_tasks": float(np.mean([paper.TABLE1["PaSeR-BERT-base"][i] - paper.TABLE1["SimCSE-BERT-base"][i]
                                         for i in (0, 1, 3, 5)])),
            "sup": avg2["PaSeR-BERT-base"] - avg2["SimCSE-BERT-base"],
            "mlm_hurts_simcse": avg1["SimCSE-BERT-base"] - avg1["SimCSE-BERT-base + MLM"],
            "paser_vs_simcse_mlm": avg1["PaSeR-BERT-base"] - avg1["SimCSE-BERT-base + MLM"],
            "qqp_map_unsup": t3u["PaSeR-BERT-base"][0] - t3u["SimCSE-BERT-base"][0],
            "qqp_mrr_unsup": t3u["PaSeR-BERT-base"][1] - t3u["SimCSE-BERT-base"][1],
            "qqp_map_sup": t3s["PaSeR-BERT-base"][0] - t3s["SimCSE-BERT-base"][0],
            "qqp_mrr_sup": t3s["PaSeR-BERT-base"][1] - t3s["SimCSE-BERT-base"][1],
            "sr_vs_none": t4["sr"][0] - t4["none"][0], "rs_vs_none": t4["rs"][0] - t4["none"][0],
            "rd_vs_none": t4["rd"][0] - t4["none"][0], "none_vs_plm": t4["none"][0] - t4["BERT-[CLS]"][0],
            "sr_vs_srrd": t4["sr"][0] - t4["sr+rd"][0], "sr_vs_srrs": t4["sr"][0] - t4["sr+rs"][0],
            "rake_vs_syntactic": t5["RAKE top5"][0] - t5["NP+VP"][0], "npvp_vs_np": t5["NP+VP"][0] - t5["NP"][0],
            "npvp_vs_vp": t5["NP+VP"][0] - t5["VP"][0], "top3_vs_top1": t5["RAKE top3"][0] - t5["RAKE top1"][0],
            "top5_vs_top1": t5["RAKE top5"][0] - t5["RAKE top1"][0],
            "mn10_vs_1": paper.TABLE8_MN[(10.0, 10.0)][0] - paper.TABLE8_MN[(1.0, 1.0)][0],
            "cls_vs_avg": paper.TABLE9_POOLER["cls"][0] - paper.TABLE9_POOLER["avg"][0],
            "alignment": paper.FIGURE6_ALIGNMENT["SimCSE"] - paper.FIGURE6_ALIGNMENT["PaSeR"],
            "level_variance": float(1000 * (levels["SimCSE"] - levels["PaSeR"])),
            "paser_vs_cmlm": avg1["PaSeR-BERT-base"] - avg1["CMLM-BERT-base"]}


_EFFECT = _paper_effects()
_ONE_SEED = "the first seed only (a grid row)"
CLAIMS = {c.id: c for c in [
    Claim("paser_ties_simcse", "PaSeR matches unsupervised SimCSE on average STS (Table 1: 76.16 against 76.25; "
          "Sec. 6: 'comparable performance')", "equivalence", "PaSeR - SimCSE, average STS, seed-matched, both on the STS sentences",
          _EFFECT["paser_vs_simcse"], (DECODER,), margin=PARITY_MARGIN, headline=True),
    Claim("paser_four_tasks", "PaSeR beats SimCSE on STS12, STS13, STS15 and STS-B (Table 1, their mean)", "superiority",
          "PaSeR - SimCSE, mean of the four tasks, seed-matched", _EFFECT["four_tasks"], (DECODER,), headline=True),
    Claim("supervised_paser", "supervised PaSeR beats supervised SimCSE on average STS (Table 2)", "superiority",
          "PaSeR (supervised) - SimCSE (supervised), average STS, seed-matched (SNLI dev/test stand-in)",
          _EFFECT["sup"], (DECODER,), headline=True),
    Claim("mlm_hurts_simcse", "adding MLM hurts SimCSE (Table 1)", "superiority",
          "SimCSE - SimCSE + MLM, average STS, seed-matched", _EFFECT["mlm_hurts_simcse"], (MLM,)),
    Claim("paser_beats_simcse_mlm", "PaSeR, which includes MLM, beats SimCSE + MLM (the book's reading of Table 1; "
          "Sec. 4.3's words are that PaSeR is 'naturally combined with MLM')", "superiority",
          "PaSeR - SimCSE + MLM, average STS, seed-matched", _EFFECT["paser_vs_simcse_mlm"], (DECODER,)),
    Claim("mlm_does_not_hurt_paser", "MLM does not hurt PaSeR as it hurts SimCSE (Sec. 4.3 (ii): PaSeR is 'naturally "
          "combined with MLM'; the paper reports no PaSeR without it, so no effect of its own)", "non-inferiority",
          "PaSeR - PaSeR without MLM (mlm_weight=0), average STS, seed-matched", None, (DECODER, MLM), margin=PARITY_MARGIN),
    Claim("qqp_map_unsup", "PaSeR beats SimCSE on QQP MAP, unsupervised (Table 3)", "superiority",
          "PaSeR - SimCSE, QQP MAP, seed-matched", _EFFECT["qqp_map_unsup"], (DECODER,)),
    Claim("qqp_mrr_unsup", "PaSeR beats SimCSE on QQP MRR@10, unsupervised (Table 3)", "superiority",
          "PaSeR - SimCSE, QQP MRR@10, seed-matched", _EFFECT["qqp_mrr_unsup"], (DECODER,)),
    Claim("qqp_map_sup", "PaSeR beats SimCSE on QQP MAP, supervised (Table 3)", "superiority",
          "PaSeR (supervised) - SimCSE (supervised), QQP MAP, seed-matched", _EFFECT["qqp_map_sup"], (DECODER,)),
    Claim("qqp_mrr_sup", "PaSeR beats SimCSE on QQP MRR@10, supervised (Table 3)", "superiority",
          "PaSeR (supervised) - SimCSE (supervised), QQP MRR@10, seed-matched", _EFFECT["qqp_mrr_sup"], (DECODER,)),
    Claim("sr_beats_none", "synonym replacement beats no augmentation (Table 4, STS12-16)", "superiority",
          "PaSeR (SR) - PaSeR without augmentation, STS12-16, seed-matched", _EFFECT["sr_vs_none"], (DECODER,)),
    Claim("rs_beats_none", "random swapping beats no augmentation (Sec. 4.5.2 (iii) on Table 4: 'RS and RD also help, but with a "
          "much smaller effect', STS12-16)", "superiority",
          f"PaSeR (RS) - PaSeR without augmentation, STS12-16, {_ONE_SEED}", _EFFECT["rs_vs_none"], (DECODER,)),
    Claim("rd_beats_none", "random deletion beats no augmentation (Sec. 4.5.2 (iii) on Table 4, STS12-16)", "superiority",
          f"PaSeR (RD) - PaSeR without augmentation, STS12-16, {_ONE_SEED}", _EFFECT["rd_vs_none"], (DECODER,)),
    Claim("none_beats_plm", "without augmentation PaSeR already gains on the untrained PLM (Sec. 4.5.2 (i) on Table 4: 'remarkable "
          "performance gain without any data augmentation')", "superiority",
          "PaSeR without augmentation - the untrained PLM (the runs' test pooler; the paper: BERT-[CLS]), STS12-16, each seed",
          _EFFECT["none_vs_plm"], (DECODER,)),
    Claim("sr_rd_no_gain", "adding RD to SR brings no gain (Table 4, STS12-16; Sec. 4.5.2: 'We do not observe "
          "performance gain when different data augmentation techniques are combined')",
          "non-inferiority", f"PaSeR (SR) - SR + RD, STS12-16, {_ONE_SEED}", _EFFECT["sr_vs_srrd"], (DECODER,),
          margin=PARITY_MARGIN),
    Claim("sr_rs_no_gain", "adding RS to SR brings no gain (Table 4, STS12-16; Sec. 4.5.2: 'We do not observe "
          "performance gain when different data augmentation techniques are combined')",
          "non-inferiority", f"PaSeR (SR) - SR + RS, STS12-16, {_ONE_SEED}", _EFFECT["sr_vs_srrs"], (DECODER,),
          margin=PARITY_MARGIN),
    Claim("rake_beats_syntactic", "RAKE masking beats syntactic NP+VP masking (Table 5, STS12-16)", "superiority",
          f"RAKE top5 - NP+VP (the NLTK stand-in), STS12-16, {_ONE_SEED}", _EFFECT["rake_vs_syntactic"], (DECODER,)),
    Claim("npvp_beats_np", "NP+VP masking beats NP only (Table 5, STS12-16)", "superiority",
          f"NP+VP - NP (the NLTK stand-in), STS12-16, {_ONE_SEED}", _EFFECT["npvp_vs_np"], (DECODER,)),
    Claim("npvp_beats_vp", "NP+VP masking beats VP only (Table 5, STS12-16)", "superiority",
          f"NP+VP - VP (the NLTK stand-in), STS12-16, {_ONE_SEED}", _EFFECT["npvp_vs_vp"], (DECODER,)),
    Claim("top3_beats_top1", "masking RAKE's top 3 phrases beats its top 1 (Table 5, STS12-16)", "superiority",
          f"RAKE top3 - top1, STS12-16, {_ONE_SEED}", _EFFECT["top3_vs_top1"], (DECODER,)),
    Claim("top5_beats_top1", "masking RAKE's top 5 phrases beats its top 1 (Table 5, STS12-16)", "superiority",
          f"RAKE top5 - top1, STS12-16, {_ONE_SEED}", _EFFECT["top5_vs_top1"], (DECODER,)),
    Claim("mn10_beats_mn1", "m = n = 10 beats m = n = 1 (Table 8, STS12-16, where the paper's own gain is 0.1; on "
          "STS-B and SICK-R it is 0.6)", "superiority",
          f"(10, 10) - (1, 1), STS12-16, {_ONE_SEED}", _EFFECT["mn10_vs_1"], (DECODER,)),
    Claim("deep_decoder_beats_one_layer", "a 6-layer decoder beats a 1-layer one (Figure 4: best 'close to 6')",
          "superiority", f"6 layers - 1 layer, average STS, {_ONE_SEED}", None, (DECODER,)),
    Claim("cls_beats_avg", "[CLS] beats average pooling for PaSeR (App. B: 'nearly 1 point' over all STS tasks; "
          "Table 9's STS12-16: 1.5; its SICK-R goes the other way, 65.4 against 65.7)", "superiority",
          "[CLS] - average pooling of one trained model, STS12-16", _EFFECT["cls_vs_avg"]),
    Claim("alignment_below_simcse", "PaSeR aligns STS-B positives more closely than SimCSE (App. D: 0.17 against 0.24)",
          "superiority", "SimCSE - PaSeR alignment on STS-B test, seed-matched", _EFFECT["alignment"], (DECODER,)),
    Claim("alignment_vs_plm", "PaSeR's alignment, beside the untrained PLM's (App. D reads 0.17 as PaSeR's)",
          "geometry", "PaSeR's alignment on STS-B test, each seed, against the untrained PLM's", None, (DECODER,)),
    Claim("uniformity_vs_plm", "PaSeR's uniformity is much better than the untrained BERT's (App. D: 'much better "
          "uniformity' than BERT-[CLS] or BERT-avg; the paper prints no value)", "geometry",
          "PaSeR's uniformity on STS-B test, each seed, against the untrained PLM's (the runs' test pooler)", None,
          (DECODER,)),
    Claim("levels_tighter_than_simcse", "PaSeR's cosines vary less within the STS-B gold levels than SimCSE's, on "
          "average over levels (Table 10: 'almost all' levels; 0-1 is the exception)", "superiority", "SimCSE - PaSeR, within-level cosine variance (mean over levels, x 1000), "
          "seed-matched", _EFFECT["level_variance"], (DECODER,)),
    Claim("levels_tighter_relative", "the same, relative to each model's total cosine variance (the book's control: "
          "tighter levels, not only crowded cosines; the paper makes no such claim)", "superiority", "SimCSE - PaSeR, within-level / total cosine variance (mean over "
          "levels, x 100), seed-matched", None, (DECODER,)),
    Claim("levels_vs_plm", "PaSeR's within-level cosine variance, beside the untrained PLM's (Table 10)", "geometry",
          "PaSeR's within-level variance (mean over levels, x 1000), each seed, against the untrained PLM's",
          None, (DECODER,)),
    Claim("paser_beats_cmlm", "PaSeR beats CMLM (Table 1)", "superiority", "PaSeR - CMLM, average STS",
          _EFFECT["paser_vs_cmlm"]),
]}
# the grid claims: claim id -> (the notebook parameter whose grid holds the rows, the better row, the worse row),
# compared on STS12-16 at the grid's seeds
GRID_COMPARED = {"sr_beats_none": ("augments", "sr", "none"), "rs_beats_none": ("augments", "rs", "none"),
                 "rd_beats_none": ("augments", "rd", "none"), "sr_rd_no_gain": ("augments", "sr", "sr+rd"),
                 "sr_rs_no_gain": ("augments", "sr", "sr+rs"), "rake_beats_syntactic": ("maskings", "RAKE top5", "NP+VP"),
                 "npvp_beats_np": ("maskings", "NP+VP", "NP"), "npvp_beats_vp": ("maskings", "NP+VP", "VP"),
                 "top3_beats_top1": ("maskings", "RAKE top3", "RAKE top1"), "top5_beats_top1": ("maskings", "RAKE top5", "RAKE top1"),
                 "mn10_beats_mn1": ("mn_grid", (10.0, 10.0), (1.0, 1.0))}
# why a declared claim gets no runs here (claims.not_run): CMLM needs what no offline corpus has
CMLM_NOT_BUILT = ("CMLM is not built: it conditions a masked LM on the embeddings of adjacent sentences of the same "
                  "document, and no offline corpus here has documents (the STS and wiki sentences stand alone)")
# why the pooler row gets no verdict: the stand-in PLM's [CLS] never trained (no next-sentence objective)
CLS_UNTRAINED = ("the stand-in PLM's [CLS] was never trained (no next-sentence objective) and the book trains with "
                 "average pooling, so [CLS] here is a pooler the model did not learn through: the difference is shown, "
                 "not judged")


def decoder_engaged(run: dict, check: dict) -> tuple[bool, str]:
    """protocol.engaged for one run's phrase decoder: its training term fell by protocol.LOSS_FALL from the first
    step to the kept one, and the kept decoder's held-out loss (`check`: the run's decoder_check metrics, the
    sentence's own signal) lies below both guesses that ignore the sentence: the targets' unigram entropy and the
    same decoder fed another sentence's signal."""
    term = run["training"]["terms"]["loss_generative"]
    held = check["held_out"]
    ok, why = protocol.engaged("reconstruction", first=term["first"], kept=term["kept"], compared=held["loss"],
                               baseline=min(held["unigram_entropy"], held["loss_shuffled"]))
    return ok, (f"{why} (the lower of the targets' unigram entropy {held['unigram_entropy']:.3f} and another "
                 f"sentence's signal {held['loss_shuffled']:.3f})")


def decoder_engagement(group: list[dict], checks: dict[str, dict]) -> dict[str, tuple[bool, str]]:
    """claims.judge's engagement entry for a claim resting on `group`: the decoder engaged in every PaSeR run of it
    (`checks`: book.per_run's decoder_check records)."""
    paser_runs = [r for r in group if r["config"]["method"] == "paser"]
    return {DECODER: claims.engaged_in_every(paser_runs, lambda run: decoder_engaged(run, checks[run["config_hash"]]["metrics"]))}


def mlm_engaged(run: dict, baseline: float) -> tuple[bool, str]:
    """protocol.engaged for one run's MLM term: it fell by protocol.LOSS_FALL from the first step to the kept one
    and ends below `baseline`, the unigram entropy of the tokens it may mask (book.mlm_baseline). It starts from
    the PLM's pretrained head, so it may sit below the baseline before any training: the fall is what says the
    run's training worked on it."""
    term = run["training"]["terms"]["loss_mlm"]
    return protocol.engaged("reconstruction", first=term["first"], kept=term["kept"], baseline=baseline)


def with_mlm(group: list[dict]) -> list[dict]:
    """The runs of `group` that train an MLM term (SimCSE + MLM, PaSeR with mlm_weight above 0)."""
    return [r for r in group if (r["training"]["terms"].get("loss_mlm") or {}).get("weight")]


def mlm_baseline(run: dict, data_dir=None) -> float:
    """book.mlm_baseline for a run's PLM, training sentences and max_len."""
    cfg = run["config"]
    return book.mlm_baseline(cfg["model_name"], cfg["train_data"], cfg["max_len"], data_dir)


def mlm_engagement(group: list[dict], data_dir=None) -> dict[str, tuple[bool, str]]:
    """claims.judge's engagement entry for a claim about adding MLM: the MLM term engaged in every run of `group`
    that trains one."""
    return {MLM: claims.engaged_in_every(with_mlm(group), lambda run: mlm_engaged(run, mlm_baseline(run, data_dir)))}


def mlm_table(groups: dict[str, list[dict]], data_dir=None) -> pd.DataFrame:
    """Per run with an MLM term: the term first -> kept, its fall, the trivial baseline, protocol.engaged's reading."""
    rows = []
    for name, group in groups.items():
        for run in with_mlm(group):
            term, baseline = run["training"]["terms"]["loss_mlm"], mlm_baseline(run, data_dir)
            ok, why = mlm_engaged(run, baseline)
            rows.append({"run": name, "seed": run["seed"], "MLM term first → kept": f"{term['first']:.3f} → {term['kept']:.3f}",
                         "fell (%)": round(100 * report.loss_drop(run, "loss_mlm"), 1),
                         "unigram entropy of the targets": round(baseline, 3), "MLM engaged": "yes" if ok else "no", "why": why})
    return pd.DataFrame(rows).set_index(["run", "seed"])


def sts12_16_by_seed(group: list[dict]) -> dict[int, float]:
    """seed -> a run's STS12-16 average (the column Tables 4, 5 and 8 compare)."""
    return {r["seed"]: ablation_row([r])[0] for r in group}


def over_plm(group: list[dict], plm_record: dict) -> list[float]:
    """Per run, its STS12-16 average minus the untrained PLM's (`plm_record`: book.raw_counterpart's evaluation
    with the pooler the runs are tested with): Sec. 4.5.2 (i), a trained row against the PLM it started from."""
    plm = float(np.mean([plm_record["metrics"]["sts"][y] for y in YEARS]))
    return [value - plm for value in sts12_16_by_seed(group).values()]


def retrieval_by_seed(group: list[dict], records: list[dict], metric: str) -> dict[int, float]:
    """seed -> `metric` ("map", "mrr@10") of each run's retrieval record (records[i] is group[i]'s)."""
    return {run["seed"]: record["metrics"][metric] for run, record in zip(group, records)}


def unengaged_runs(groups: dict[str, list[dict]], checks: dict[str, dict]) -> str:
    """"name (seed s)" for every run of `groups` whose decoder did not engage (decoder_engaged), or "none"."""
    return claims.runs_where(groups, lambda run: not decoder_engaged(run, checks[run["config_hash"]]["metrics"])[0])


def engagement_table(groups: dict[str, list[dict]], checks: dict[str, dict]) -> pd.DataFrame:
    """Per PaSeR run: the decoder term first -> kept, the kept decoder on held-out sentences (own signal, another
    sentence's, the unigram entropy; token accuracy with each signal), the training sentences without decoder
    loss and protocol.engaged's reading (the MLM term has its own table, mlm_table); `checks`: book.per_run's decoder_check records."""
    rows = []
    for name, group in groups.items():
        for run in group:
            check = checks[run["config_hash"]]["metrics"]
            held, term = check["held_out"], run["training"]["terms"]["loss_generative"]
            ok, why = decoder_engaged(run, check)
            rows.append({"run": name, "seed": run["seed"],
                         "decoder term first → kept": f"{term['first']:.3f} → {term['kept']:.3f}",
                         "held out: own signal": round(held["loss"], 3), "held out: another's signal": round(held["loss_shuffled"], 3),
                         "unigram entropy": round(held["unigram_entropy"], 3),
                         "accuracy own / another's (%)": f"{held['accuracy']:.1f} / {held['accuracy_shuffled']:.1f}",
                         "no decoder loss (train, %)": round(100 * check["training"]["no_decoder_loss"], 1),
                         "decoder engaged": "yes" if ok else "no", "why": why})
    return pd.DataFrame(rows).set_index(["run", "seed"])


def level_variance(runs: list[dict], gold, relative: bool = False) -> dict[int, float]:
    """seed -> the run's within-level STS-B test cosine variance, mean over the gold levels (x 1000; `relative`:
    divided by the run's total cosine variance, x 100)."""
    values = np.nanmean(level_variances(runs, gold, relative), axis=1) * (100 if relative else 1000)  # levels with pairs
    return {r.get("seed", 0): float(v) for r, v in zip(runs, values)}


def cosine_band(runs: list[dict], low: float = 0.88, high: float = 0.94) -> dict[str, float]:
    """Where the runs' STS-B test cosines lie (mean over runs): the share of pairs between `low` and `high` (%) and
    the middle 95 % (the 2.5th and 97.5th percentiles)."""
    cosines = [np.asarray(r["metrics"]["stsb_test_cosine"]) for r in runs]
    return {"share": float(np.mean([100 * np.mean((c >= low) & (c <= high)) for c in cosines])),
            "low": float(np.mean([np.percentile(c, 2.5) for c in cosines])),
            "high": float(np.mean([np.percentile(c, 97.5) for c in cosines]))}


# ----- the notebook's groupings of the plan's runs ------------------------------------------------------------------

def grid_groups(runs: dict[str, list[dict]], prefix: str, preset_label, key=None) -> dict:
    """One ablation's rows: the preset's row (PaSeR's first seed, labelled `preset_label`) and each group whose
    name starts with `prefix`, labelled by what follows it (or by `key(config)`)."""
    rows = {key(group[0]["config"]) if key else name[len(prefix):]: group
            for name, group in runs.items() if name.startswith(prefix)}
    seeds = max((len(group) for group in rows.values()), default=1)  # the preset beside its largest row, seed-matched
    return {preset_label: runs["PaSeR"][:seeds], **rows}


def depth_runs(runs: dict[str, list[dict]]) -> dict[int, dict]:
    """Figure 4: decoder layers -> the first seed's run (the preset's depth is PaSeR's own)."""
    shown = [group[0] for name, group in runs.items() if name == "PaSeR" or name.startswith("decoder layers ")]
    return dict(sorted((r["config"]["decoder_layers"], r) for r in shown))


def depth_frame(depths: dict[int, dict]) -> pd.DataFrame:
    frame = pd.DataFrame({n: {"avg. STS (test)": r["metrics"]["sts"]["avg"], "STS-B dev (kept)": r["metrics"]["stsb_dev_best"],
                              "reconstruction accuracy, STS-B dev (%)": r["metrics"]["reconstruction"]["recon_accuracy"]}
                          for n, r in depths.items()}).T.round(2)
    frame.index.name = "decoder layers"
    return frame


def pooler_groups(run: dict, pooled: dict) -> dict[str, list[dict]]:
    """Table 9's rows: the run's record with the STS scores of each pooler in place of its own."""
    return {p: [{**run, "metrics": {**run["metrics"], "sts": scores}}] for p, scores in pooled["metrics"]["sts"].items()}


def pooler_weights(run: dict, pooled: dict) -> str:
    """Table 9's clause on which weights its rows test: its own pooler's row is the run's record, the others the
    kept weights of this machine (book.weights_tested: the record's, or a retrained sibling)."""
    own, tested = book.weights_tested(pooled, run)
    if own:
        return f"one trained model, {tested}"
    return (f"the {run['config']['eval_pooler']} row is the run's record; the other rows test {tested}, so their "
            "differences from it mix the pooler with the retrain")


def paper_table3() -> pd.DataFrame:
    from ..papers.paser import TABLE3, TABLE3_COLUMNS

    return pd.DataFrame({f"{name} ({setting}, paper)": dict(zip(TABLE3_COLUMNS, row))
                         for setting, rows in TABLE3.items() for name, row in rows.items()}).T


def geometry_frame(groups: dict[str, list[dict]]) -> pd.DataFrame:
    """Figure 6's table: each group's STS-B test alignment, uniformity and anisotropy at its kept checkpoints (mean)."""
    measures = {"alignment (kept, test)": "alignment", "uniformity (kept, test)": "uniformity",
                "anisotropy (kept, test)": "anisotropy"}
    return pd.DataFrame({name: {column: np.mean([r["metrics"]["geometry"][key] for r in g]) for column, key in measures.items()}
                         for name, g in groups.items()}).T.round(3)


def paper_table10() -> pd.DataFrame:
    from ..papers.paser import TABLE10, TABLE10_LEVELS

    return pd.DataFrame({name: [f"{m:.2f} / {v:.3f}" for m, v in rows] for name, rows in TABLE10.items()},
                        index=TABLE10_LEVELS).T


def mn_of(cfg: dict) -> tuple[float, float]:
    """Table 8's row key of a run: its (m, n)."""
    return (cfg["m"], cfg["n"])


def mn_label(mn: tuple[float, float]) -> str:
    """How Table 8 names an (m, n) row: "m = 10, n = 1"."""
    return f"m = {mn[0]:g}, n = {mn[1]:g}"


def task_mean(runs: list[dict], tasks: list[str]) -> np.ndarray:
    """Per run, the mean Spearman over `tasks`."""
    return np.array([np.mean([r["metrics"]["sts"][t] for t in tasks]) for r in runs])
