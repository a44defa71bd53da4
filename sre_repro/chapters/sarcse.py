"""The SARCSE chapter's plan: its grids, the batch-size budget, the rows its figures derive from runs, its claims
with the paper's effects, and whether the reconstruction engaged (protocol.engaged) in a run."""
from __future__ import annotations

import pandas as pd

from .. import book, protocol
from ..claims import Claim
from ..evaluate.cached import cached

# The cpu edition runs a subset of the appendix grids so that the chapter stays within its time: the ends of
# each range and the preset (batch 64, theta 0.1); the list parameters (`-p batch_sizes`, `-p thetas`) run the rest.
GRIDS = {
    "sarcse_batch_sizes": {"smoke": [4, 8], "cpu": [32, 64, 512], "default": [32, 64, 128, 192, 256, 512]},
    "sarcse_thetas": {"smoke": [0.1, 0.5], "cpu": [0.0, 0.1, 0.6], "default": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6]},
}


def grid(name: str, scale: str, chosen=None) -> list:
    return book.grid(GRIDS, name, scale, chosen)


SECONDARY_SEEDS = 3  # the ablations and the largest batch: the protocol's fewest for a claim that is not a headline


def same_budget(scale: str, method: str, batch_size: int) -> dict:
    """Overrides that train with `batch_size` on as many sentences as the scale's preset does (SARCSE's
    batch-size table keeps the data fixed): steps = preset steps x preset batch / batch_size. Under a stopping
    rule its patience is held fixed in sentences too (batch 512 waits 25 steps where batch 64 waits 200), so a
    larger batch can converge within its smaller number of steps, and is flagged when it cannot."""
    from ..config import resolve

    preset = resolve(overrides={"method": method, "scale": scale})
    if not preset["max_steps"]:
        return {"batch_size": batch_size}  # epoch-based presets: the data budget is the corpus already
    scale_by = preset["batch_size"] / batch_size
    steps = max(1, round(preset["max_steps"] * scale_by))
    eval_steps = max(1, min(preset["eval_steps"], steps // 5 or 1))
    out = {"batch_size": batch_size, "max_steps": steps, "eval_steps": eval_steps}
    if preset.get("patience"):
        out["patience"] = max(1, round(preset["patience"] * preset["eval_steps"] * scale_by / eval_steps))
    return out


def stsb_test_gold(data_dir=None, run: dict | None = None):
    """STS-B test gold scores, of the pairs `run` was scored on (smoke runs score an evenly spaced subset)."""
    from ..evaluate.sts import stsb_test

    return stsb_test(data_dir, (run or {}).get("config", {}).get("eval_max_pairs", 0)).gold


def plm_cosines(plm: str, pooler: str, data_dir=None, run: dict | None = None) -> dict:
    """Figure 3's reference: the untrained PLM as a run-like record, its STS-B test cosines with `pooler` on the
    pairs `run` was scored on (computed here: one encoding pass over them, seconds for sre-bert)."""
    from ..encoder import load_encoder
    from ..evaluate.sts import stsb_test_cosines

    encoder = load_encoder(plm, pooler, device="cpu")
    max_pairs = (run or {}).get("config", {}).get("eval_max_pairs", 0)
    cosines = stsb_test_cosines(lambda sentences: encoder.encode(sentences, pooler=pooler), data_dir, max_pairs)
    return {"metrics": {"stsb_test_cosine": cosines.tolist()}}


def importance_rows(run: dict, key: str, label: str, invert: bool = False) -> dict[str, list]:
    """Token-importance lines of a run's probe pairs, scaled to [0, 1] per sentence (for plots.token_importance).
    `invert`: lower values are more important (reconstruction error: lower = better preserved)."""
    rows = {}
    for i, tokens in enumerate(run["metrics"]["token_importance"][key]):
        values = [v for _, v in tokens]
        low, high = min(values), max(values)
        scaled = [(v - low) / (high - low) if high > low else 0.0 for v in values]
        rows[f"{label} #{i + 1}"] = [(t, 1 - x if invert else x) for (t, _), x in zip(tokens, scaled)]
    return rows


# The paper's effects (RoBERTa-base, average STS): SARCSE against SimCSE at SARCSE's own batch, 64, as Table 2 runs
# both and as the book trains them (Table 1's +1.52, Sec. 3.2, sets SARCSE at batch 64 against SimCSE at 512); the
# ablations from Table 1, against Table 2's SimCSE at batch 64 where SimCSE is the baseline; the batch claim from
# Table 2 (512 against 64); alignment from Table 4.
def _paper_effects() -> dict[str, float]:
    from ..papers.sarcse import TABLE1_BASE, TABLE2_BATCH, TABLE4_GEOMETRY

    t1 = {name: row[-1] for name, row in TABLE1_BASE.items()}
    at = {b: {m: TABLE2_BATCH[b][m][-1] for m in ("SimCSE", "SARCSE")} for b in (64, 512)}
    return {"sarcse": at[64]["SARCSE"] - at[64]["SimCSE"], "wo_sal": t1["SARCSE w/o SAL"] - at[64]["SimCSE"],
            "sal": t1["SARCSE-RoBERTa-base"] - t1["SARCSE w/o SAL"],
            "decoder": t1["SARCSE w/o SAL"] - t1["SARCSE w/o SAL & decoder"],
            "head": at[64]["SimCSE"] - t1["SARCSE w/o SAL & decoder"],
            "batch": (at[512]["SimCSE"] - at[64]["SimCSE"]) - (at[512]["SARCSE"] - at[64]["SARCSE"]),
            "alignment": TABLE4_GEOMETRY["SimCSE"]["alignment"] - TABLE4_GEOMETRY["SARCSE"]["alignment"]}


_EFFECT = _paper_effects()
RECONSTRUCTION = "the reconstruction"  # the component the paper credits its gains to (Sec. 3, Appendix A, Table 4)
CLAIMS = {c.id: c for c in [
    Claim("sarcse_beats_simcse", "SARCSE beats SimCSE on average STS", "superiority",
          "SARCSE - SimCSE, average STS, seed-matched (Table 2, batch 64)", _EFFECT["sarcse"], headline=True),
    Claim("wo_sal_beats_simcse", "SARCSE w/o SAL (plain MSE) beats SimCSE", "superiority",
          "w/o SAL - SimCSE, average STS, seed-matched (Table 1's w/o SAL, Table 2's SimCSE at batch 64)",
          _EFFECT["wo_sal"], components=(RECONSTRUCTION,)),
    Claim("sal_helps", "the self-adaptive loss helps over plain MSE", "superiority",
          "SARCSE - w/o SAL, average STS, seed-matched (Table 1)", _EFFECT["sal"], components=(RECONSTRUCTION,)),
    Claim("decoder_helps", "the decoder (plain reconstruction) helps", "superiority",
          "w/o SAL - w/o SAL & decoder, average STS, seed-matched (Table 1)", _EFFECT["decoder"],
          components=(RECONSTRUCTION,)),
    Claim("head_alone_below_simcse", "the TextCNN head alone (w/o SAL & decoder) falls below SimCSE", "superiority",
          "SimCSE - w/o SAL & decoder, average STS, seed-matched (Table 2's SimCSE at batch 64, Table 1)", _EFFECT["head"]),
    Claim("smaller_batch", "SARCSE needs a smaller batch: batch 512 over 64 helps SimCSE more than SARCSE",
          "superiority", "(SimCSE 512 - 64) - (SARCSE 512 - 64), average STS, seed-matched (Table 2)", _EFFECT["batch"],
          components=(RECONSTRUCTION,)),
    Claim("alignment_below_simcse", "SARCSE aligns paraphrases more closely than SimCSE (lower alignment loss)",
          "superiority", "SimCSE - SARCSE alignment on STS-B test, seed-matched (Table 4)", _EFFECT["alignment"],
          components=(RECONSTRUCTION,)),
]}


def reconstruction_check(run: dict, data_dir=None, force: bool = False) -> dict:
    """The kept decoder's reconstruction loss on STS-B dev's sentences beside the constant guess's (a record of
    kind "reconstruction": evaluate/cached.py), from the run's kept weights (trained once where this machine
    lacks them: train.kept_checkpoint)."""
    from ..config import resolve

    cfg = resolve(overrides=run["config"])  # as many sentences as the run's STS evaluation reads (0: all)
    return cached("reconstruction", {"run": cfg, "max_sentences": 2 * cfg["eval_max_pairs"]}, data_dir, force,
                  allow_stale=True)


def reconstruction_engaged(run: dict, data_dir=None, held_out: dict | None = None) -> tuple[bool, str]:
    """protocol.engaged for one run's reconstruction: its loss term fell by protocol.LOSS_FALL from the first
    step to the kept one, and the kept decoder reconstructs held-out sentences better than the constant guess
    (`held_out`: the run's reconstruction_check metrics, where the caller has read them)."""
    term = run["training"]["terms"]["reconstruction"]
    held_out = held_out or reconstruction_check(run, data_dir)["metrics"]["reconstruction"]
    return protocol.engaged("reconstruction", first=term["first"], kept=term["kept"], baseline=held_out["constant"],
                            compared=held_out["decoder"])


def engagement_table(groups: dict[str, list[dict]], data_dir=None) -> pd.DataFrame:
    """Per run with a decoder: the reconstruction term first -> kept, its share of the loss at the kept step, the
    held-out loss of the kept decoder and of the constant guess, and protocol.engaged's reading."""
    rows = []
    for name, group in groups.items():
        for run in group:
            term = run["training"]["terms"]["reconstruction"]
            held_out = reconstruction_check(run, data_dir)["metrics"]["reconstruction"]
            ok, why = reconstruction_engaged(run, data_dir, held_out)
            rows.append({"run": name, "seed": run["seed"], "first": round(term["first"], 4), "kept": round(term["kept"], 4),
                         "share of the loss, kept": f"{100 * term['share_kept']:.2f}%",
                         "held out: decoder": round(held_out["decoder"], 4), "held out: constant": round(held_out["constant"], 4),
                         "engaged": "yes" if ok else "no", "why": why})
    return pd.DataFrame(rows).set_index(["run", "seed"])
