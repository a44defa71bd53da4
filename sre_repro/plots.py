"""The figures the book draws (matplotlib/seaborn); each takes run results and returns the figure."""
from __future__ import annotations

import matplotlib.pyplot as plt
import seaborn as sns


def dev_curves(groups: dict[str, list[dict]], metric: str = "stsb_dev", ylabel: str = "STS-B dev Spearman x 100"):
    """One line per run: `metric` of the dev curve against the training step, coloured by group."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    palette = sns.color_palette("colorblind", len(groups))
    for color, (name, results) in zip(palette, groups.items()):
        for i, r in enumerate(results):
            curve = r["dev_curve"]
            ax.plot([p["step"] for p in curve], [p[metric] for p in curve], color=color, alpha=0.8,
                    marker="o", markersize=3, label=name if i == 0 else None)
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    ax.legend(frameon=False)
    sns.despine(fig)
    fig.tight_layout()
    return fig


def dev_curve_panels(panels: dict[str, dict[str, dict]], metric: str = "stsb_dev", columns: int = 3):
    """One panel per title (a method), one line per run in it (labelled by its setting), a star at each run's kept
    checkpoint: many runs' curves stay readable side by side."""
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.6 * columns, 2.5 * rows), sharex=True, squeeze=False)
    for ax, (title, runs) in zip(axes.flat, panels.items()):
        for color, (label, r) in zip(sns.color_palette("colorblind", len(runs)), runs.items()):
            curve = r["dev_curve"]
            ax.plot([p["step"] for p in curve], [p[metric] for p in curve], color=color, marker="o", markersize=2,
                    linewidth=1, label=label)
            ax.scatter([r["metrics"]["best_step"]], [r["metrics"]["stsb_dev_best"]], color=color, marker="*", s=60)
        ax.set_title(title, fontsize=10)
        ax.legend(frameon=False, fontsize=7)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    fig.supxlabel("training step")
    fig.supylabel("STS-B dev Spearman x 100")
    sns.despine(fig)
    fig.tight_layout()
    return fig


def alignment_uniformity(groups: dict[str, list[dict]], baselines: dict[str, dict] | None = None):
    """Wang & Isola's plane (SimCSE Fig. 2): each run's path through (uniformity, alignment) during training,
    lower-left is better; the arrow's head is the last evaluation. `baselines`: name -> geometry dict."""
    fig, ax = plt.subplots(figsize=(5.2, 4.2))
    palette = sns.color_palette("colorblind", len(groups) + len(baselines or {}))
    for color, (name, results) in zip(palette, groups.items()):
        for i, r in enumerate(results):
            curve = r["dev_curve"]
            xs, ys = [p["uniformity"] for p in curve], [p["alignment"] for p in curve]
            ax.plot(xs, ys, color=color, alpha=0.7, label=name if i == 0 else None)
            ax.scatter(xs[-1:], ys[-1:], color=color, marker=">", s=30)
    for color, (name, geo) in zip(palette[len(groups):], (baselines or {}).items()):
        ax.scatter([geo["uniformity"]], [geo["alignment"]], color=color, marker="s", s=40, label=name)
    ax.set_xlabel(r"$\ell_{uniform}$ (lower is better)")
    ax.set_ylabel(r"$\ell_{align}$ (lower is better)")
    ax.legend(frameon=False, fontsize=8)
    sns.despine(fig)
    fig.tight_layout()
    return fig


def bars(frame, column: str, title: str = ""):
    """Horizontal bars of one column of a table (e.g. average STS per row)."""
    fig, ax = plt.subplots(figsize=(6.4, 0.45 * len(frame) + 1))
    sns.barplot(x=frame[column].astype(float), y=frame.index, ax=ax, color=sns.color_palette("colorblind")[0])
    ax.set_xlabel(column)
    ax.set_ylabel("")
    ax.set_title(title)
    sns.despine(fig)
    fig.tight_layout()
    return fig


def pretraining_curve(log: dict):
    """The stand-in PLM's pretraining: held-out MLM accuracy and STS-B dev (average pooling) per step."""
    curve = log["curve"]
    steps = [p["step"] for p in curve]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
    left.plot(steps, [p["mlm_accuracy"] for p in curve], marker="o", markersize=3, label="held-out")
    left.plot(steps, [100 * p["mlm_train_accuracy"] for p in curve], alpha=0.6, label="training batch")
    left.set_ylabel("MLM accuracy (%)")
    right.plot(steps, [p["stsb_dev_avg"] for p in curve], marker="o", markersize=3, color="C2")
    right.set_ylabel("STS-B dev Spearman x 100 (avg pooling)")
    starts = [before["step"] for p, before in zip(curve[1:], curve) if p.get("stage", 1) != before.get("stage", 1)]
    for ax in (left, right):
        ax.set_xlabel("pretraining step (all stages)" if starts else "pretraining step")
        for start in starts:  # a new stage: fresh optimizer and lr warm-up
            ax.axvline(start, color="grey", linestyle=":", linewidth=1)
    left.legend(frameon=False)
    sns.despine(fig)
    fig.tight_layout()
    return fig


def norm_vs_frequency(frames: dict):
    """Token-embedding norm against BookCorpus frequency (log scale), one panel per model."""
    fig, axes = plt.subplots(1, len(frames), figsize=(4.4 * len(frames), 3.6), squeeze=False)
    for ax, (name, frame) in zip(axes[0], frames.items()):
        ax.scatter(frame["count"], frame["norm"], s=2, alpha=0.25, rasterized=True)
        ax.set_xscale("log")
        ax.set_xlabel("BookCorpus count of the token")
        ax.set_ylabel("input embedding norm")
        ax.set_title(name)
    sns.despine(fig)
    fig.tight_layout()
    return fig


GOLD_GROUPS = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]


def gold_level(gold, low: float, high: float):
    """Boolean mask of the pairs whose gold score lies in the level [low, high), the top level (high = 5)
    closed so that a gold score of 5 counts."""
    import numpy as np

    gold = np.asarray(gold)
    return (gold >= low) & ((gold < high) if high < 5 else (gold <= high))


def cosine_by_gold(runs: dict[str, dict | list[dict]], gold):
    """SARCSE's Figure 3: density of the predicted cosine on STS-B test, one row per gold-score group
    (0-1 ... 4-5), one curve per run (each run's `stsb_test_cosine`); a list of runs (a model's seeds) draws one
    unfilled curve per run in the model's colour."""
    import numpy as np

    gold = np.asarray(gold)
    fig, axes = plt.subplots(len(GOLD_GROUPS), 1, figsize=(6.4, 1.2 * len(GOLD_GROUPS) + 0.8), sharex=True)
    palette = sns.color_palette("colorblind", len(runs))
    for ax, (low, high) in zip(axes, reversed(GOLD_GROUPS)):
        in_group = gold_level(gold, low, high)
        for color, (name, shown) in zip(palette, runs.items()):
            seeds = shown if isinstance(shown, list) else [shown]
            for i, run in enumerate(seeds):
                values = np.asarray(run["metrics"]["stsb_test_cosine"])[in_group]
                sns.kdeplot(x=values, ax=ax, color=color, fill=len(seeds) == 1, alpha=0.25 if len(seeds) == 1 else 0.6,
                            label=name if i == 0 else None, warn_singular=False)
        ax.set_ylabel(f"{low}-{high}", rotation=0, labelpad=18)
        ax.set_yticks([])
    axes[0].legend(frameon=False, fontsize=8)
    axes[-1].set_xlabel("predicted cosine similarity (STS-B test)")
    sns.despine(fig, left=True)
    fig.tight_layout()
    return fig


def token_importance(rows: dict[str, list]):
    """SARCSE's Figure 1: one line of coloured tokens per (label -> [(token, importance in [0, 1])])."""
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 0.4))
    cmap = plt.get_cmap("Blues")
    for line, (label, tokens) in enumerate(rows.items()):
        y = len(rows) - line
        ax.text(0, y, label, ha="right", va="center", fontsize=8)
        x = 0.01
        for token, weight in tokens:
            ax.text(x, y, token, va="center", fontsize=9, color="black" if weight < 0.6 else "white",
                    bbox=dict(boxstyle="round,pad=0.2", facecolor=cmap(0.1 + 0.85 * weight), edgecolor="none"))
            x += 0.012 * (len(token) + 2)
    ax.set_xlim(-0.35, 1.05)
    ax.set_ylim(0.3, len(rows) + 0.7)
    ax.axis("off")
    fig.tight_layout()
    return fig


def geometry_over_training(runs: dict[str, dict], prefix: str = "", title: str = ""):
    """BYOP's Figures 2-4: uniformity and alignment (two panels) against the training step, one line per
    run; `prefix` picks the dev-curve keys ("" = STS-B dev, "train_" = the training views)."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    palette = sns.color_palette("colorblind", len(runs))
    for ax, metric in zip(axes, ("uniformity", "alignment")):
        for color, (name, run) in zip(palette, runs.items()):
            curve = [p for p in run["dev_curve"] if prefix + metric in p]
            ax.plot([p["step"] for p in curve], [p[prefix + metric] for p in curve], color=color, marker="o",
                    markersize=3, label=name)
        ax.set_xlabel("training step")
        ax.set_ylabel(f"{metric} (lower is better)")
    axes[0].legend(frameon=False, fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    sns.despine(fig)
    fig.tight_layout()
    return fig


def perturbation_picture(points):
    """BYOP's Figure 1: anchor, positive and in-batch negatives in 2-D (PCA), with where IFM's and BYOP's
    margins move the positive and the negatives (`points`: book.perturbation_points)."""
    fig, ax = plt.subplots(figsize=(5.2, 4.4))
    colors = sns.color_palette("colorblind", 4)
    style = {"anchor": (colors[0], "*", 160), "positive": (colors[1], "o", 60), "negative": (colors[2], "o", 30)}
    for role, (color, marker, size) in style.items():
        chosen = points[points["role"] == role]
        ax.scatter(chosen["x"], chosen["y"], color=color, marker=marker, s=size, label=role, zorder=3)
    for shift, color, label in (("IFM", colors[3], "IFM (harder)"), ("BYOP", "black", "BYOP (easier)")):
        moved = points[points["role"].str.startswith(shift)]
        for _, row in moved.iterrows():
            ax.annotate("", xy=(row["x"], row["y"]), xytext=(row["from_x"], row["from_y"]),
                        arrowprops=dict(arrowstyle="->", color=color, lw=1))
        ax.plot([], [], color=color, label=label)
    ax.set_xlabel("PC 1")
    ax.set_ylabel("PC 2")
    ax.legend(frameon=False, fontsize=8)
    sns.despine(fig)
    fig.tight_layout()
    return fig


def forest(effects):
    """The verdict board's forest plot, one panel per paper: per claim our mean difference with its 95% interval
    (filled dots and bars where a verdict was reached; hollow grey dots where none was: one seed, a flagged run,
    an idle component) and the paper's own effect (open diamonds), in the claim's points. Labels wrap, whole."""
    import textwrap

    papers = list(dict.fromkeys(effects["paper"]))
    heights = [0.42 * sum(len(textwrap.wrap(l, 60)) for l in effects[effects["paper"] == p]["label"]) + 0.6 for p in papers]
    fig, axes = plt.subplots(len(papers), 1, figsize=(9, sum(heights) + 1.0), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    ours, paper_color = sns.color_palette("colorblind")[0], sns.color_palette("colorblind")[3]
    reach = max(effects[["low", "high", "paper effect", "ours"]].abs().max().max(), 1)
    for ax, name in zip(axes[:, 0], papers):
        rows = effects[effects["paper"] == name].reset_index(drop=True)
        ys = list(range(len(rows)))[::-1]
        tested = rows["tested"].to_numpy()
        y_tested = [y for y, t in zip(ys, tested) if t]
        ax.errorbar(rows["ours"][tested], y_tested, xerr=[(rows["ours"] - rows["low"])[tested].fillna(0),
                                                           (rows["high"] - rows["ours"])[tested].fillna(0)],
                    fmt="o", color=ours, markersize=4, capsize=2, label="ours: mean, 95% interval")
        ax.scatter(rows["ours"][~tested], [y for y, t in zip(ys, tested) if not t], facecolors="none",
                   edgecolors="grey", s=22, label="ours, no verdict (one seed, flagged or idle)")
        ax.scatter(rows["paper effect"], ys, marker="D", facecolors="none", edgecolors=paper_color, s=30,
                   label="the paper", zorder=3)
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_xscale("symlog", linthresh=1)  # effects of 0.1 and of 40 points on one axis: linear within +-1
        ax.set_xlim(-1.6 * reach, 1.6 * reach)
        ax.set_yticks(ys, ["\n".join(textwrap.wrap(label, 60)) for label in rows["label"]], fontsize=7)
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ax.set_title(name, fontsize=9, loc="left")
    axes[-1, 0].set_xlabel("effect: the claim's difference (average STS points unless it says otherwise)\n"
                           "symmetric log scale: linear within ±1")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, frameon=False, fontsize=8, loc="upper center", ncol=3)
    sns.despine(fig)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.5 / (sum(heights) + 1.0)))
    return fig


def attention_map(frames: dict):
    """Attention maps side by side (name -> a frame of weights, rows attend to columns): PT-BERT's pseudo tokens
    (chapters.pt_bert.attention_rows), SLT-FAI's Figure 7 (chapters.slt_fai.figure7_frames)."""
    fig, axes = plt.subplots(1, len(frames), figsize=(5.2 * len(frames), 4.2), squeeze=False)
    for ax, (name, frame) in zip(axes[0], frames.items()):
        sns.heatmap(frame, ax=ax, cmap="Blues", vmin=0, cbar=ax is axes[0][-1], xticklabels=True, yticklabels=True)
        ax.set_title(name, fontsize=9)
        ax.tick_params(labelsize=7)
    fig.tight_layout()
    return fig


def frequency_ranks(counts: dict, thresholds: dict):
    """SLT-FAI's Figure 3 regenerated from the counts: each wordpiece's BookCorpus count against its rank (log-log),
    with the count threshold of each lambda (rate -> threshold) marked."""
    import numpy as np

    values = np.sort(np.asarray([c for c in counts.values() if c > 0]))[::-1]
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.loglog(np.arange(1, len(values) + 1), values, color=sns.color_palette("colorblind")[0])
    palette = sns.color_palette("colorblind", len(thresholds) + 1)[1:]
    for color, (rate, threshold) in zip(palette, thresholds.items()):
        ax.axhline(threshold, color=color, lw=0.9, ls="--", label=f"λ = {rate:g}: LOW below {threshold:,}")
    ax.set_xlabel("rank of the wordpiece (non-zero counts)")
    ax.set_ylabel("count in BookCorpus")
    ax.legend(frameon=False, fontsize=8)
    sns.despine(fig)
    fig.tight_layout()
    return fig


def lambda_curve(frame, xlabel: str = "λ: share of non-zero-count wordpiece types labelled LOW"):
    """SLT-FAI's Figure 4: average STS, STS-B test and STS-B dev (columns of `frame`) against lambda (its index);
    any other grid's curve with its own `xlabel` (PaSeR's Figure 4: decoder layers)."""
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    for color, column in zip(sns.color_palette("colorblind"), frame.columns):
        ax.plot(frame.index, frame[column], marker="o", color=color, label=column)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Spearman x 100")
    ax.legend(frameon=False, fontsize=8)
    sns.despine(fig)
    fig.tight_layout()
    return fig


def embedding_maps(maps: dict, what: str = "tokens"):
    """SLT-FAI's Figures 5 (tokens, coloured by frequency label) and 6 (sentences, coloured by whether they hold
    a LOW word): per model (name -> the `maps` of evaluate.frequency.frequency_analysis) a row of two panels,
    the uncentred truncated SVD and t-SNE."""
    import numpy as np

    fig, axes = plt.subplots(2, len(maps), figsize=(3.2 * len(maps), 6.2), squeeze=False)
    palette = dict(zip(["high", "low", "special", "holds a LOW word", "no LOW word"], sns.color_palette("colorblind")))
    for column, (name, entry) in enumerate(maps.items()):
        points = entry[what]
        labels = points["labels"] if what == "tokens" else ["holds a LOW word" if x else "no LOW word" for x in points["has_low"]]
        for row, projection in enumerate(("svd", "tsne")):
            ax = axes[row][column]
            xy = np.asarray(points[projection])
            for label in dict.fromkeys(labels):
                pick = [i for i, x in enumerate(labels) if x == label]
                ax.scatter(xy[pick, 0], xy[pick, 1], s=3, alpha=0.6, color=palette[label], label=label)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(f"{name}\n{'truncated SVD' if projection == 'svd' else 't-SNE'}", fontsize=8)
    axes[0][0].legend(frameon=False, fontsize=7, markerscale=3)
    fig.tight_layout()
    return fig
