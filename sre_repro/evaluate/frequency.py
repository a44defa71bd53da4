"""SLT-FAI's frequency labels (Sec. 3.5) and what its Figures 5-7 look at, as numbers a picture cannot give.

Labels (the official `get_label`): sort the BookCorpus count of every wordpiece of the vocabulary; z = the
number of zero counts; threshold = sorted[z + int((V - z) * rate)]; label 1 (LOW) when count < threshold.
So the rate is a quantile of the non-zero TYPES, not of occurrences, and [PAD]/[CLS]/[SEP]/[MASK] (count 0)
are LOW.

`frequency_analysis` encodes a seeded sample of the unlabelled STS corpus (the paper draws 10,000 sentences
"randomly"; the official testGRL.py takes the first 10,000) with a model as it is, and returns:
  tokens     the last layer's word tokens, high vs low (special tokens apart): anisotropy (mean pairwise
             cosine) overall (about 93 % of the word tokens are high) and per label; the separation of the two
             label centroids (their distance over the root-mean-square distance of the tokens to their own
             label's centroid: scale-free, and not pushed up by the common direction of an anisotropic space as
             the centroids' cosine is); each label's spread (mean cosine distance to its own
             centroid); and a balanced logistic probe's accuracy at predicting the label, 5-fold with the folds
             grouped by wordpiece (a probe tested on wordpieces it never saw cannot succeed by recognising them):
             a space without a frequency direction gives a probe near 0.5
  sentences  mean-pooled sentence vectors: anisotropy and uniformity
  maps       2-D maps of a stratified token sample and a sentence sample: the official script's uncentred
             TruncatedSVD(2) (fit on every token) and t-SNE (the paper's word "2-dimensional"; init pca)
  attention  the last layer's attention (mean over heads) received by [SEP], [CLS], content words (not an
             NLTK stopword) and low-frequency words, averaged over query rows and sentences; and the per-head
             attention map of Figure 7's sentence
The labels of the analysis are always those at rate 0.5 (the paper's), so that runs at other rates compare.
"""
from __future__ import annotations

import random

import numpy as np
import torch

from ..errors import SreError

ANALYSIS_RATE = 0.5
FIGURE7_SENTENCE = "a man is playing a bamboo flute"
MAP_TOKENS = {"high": 400, "low": 400, "special": 200}
MAP_SENTENCES = 500
PROBE_TOKENS = 20_000
PAIR_SAMPLE = 2000


def low_threshold(counts: dict[str, int], rate: float) -> int:
    """The count below which a wordpiece is LOW at `rate` (a quantile of the non-zero counts)."""
    if not 0 < rate < 1:
        raise SreError(f"low_rate (lambda) must lie in (0, 1), got {rate}")
    values = sorted(counts.values())
    zeros = sum(1 for v in values if v == 0)
    return values[zeros + int((len(values) - zeros) * rate)]


def frequency_labels(counts: dict[str, int], vocab: dict[str, int], rate: float) -> tuple[torch.Tensor, int]:
    """(label per vocabulary id, threshold): 1 = LOW frequency. The counts must be of the tokenizer's vocabulary."""
    missing = [token for token in vocab if token not in counts]
    if missing or len(counts) != len(vocab):
        raise SreError(f"the frequency counts cover {len(counts)} wordpieces and miss {len(missing)} of the tokenizer's "
                       f"{len(vocab)} (e.g. {missing[:3]}): they are for another vocabulary; use a model with "
                       "bert-base-uncased's WordPiece vocabulary or a counts file made with its tokenizer")
    threshold = low_threshold(counts, rate)
    labels = torch.zeros(len(vocab), dtype=torch.long)
    for token, index in vocab.items():
        labels[index] = int(counts[token] < threshold)
    return labels, threshold


def label_statistics(counts: dict[str, int], rates) -> list[dict]:
    """Figure 3's statistic per rate: the threshold count, how many types are LOW, and the share of BookCorpus
    occurrences that fall on LOW types."""
    total = sum(counts.values())
    rows = []
    for rate in rates:
        threshold = low_threshold(counts, rate)
        low = [c for c in counts.values() if c < threshold]
        rows.append({"rate": rate, "threshold": threshold, "low_types": len(low),
                     "low_share_of_occurrences": sum(low) / total})
    return rows


def analysis_sample(n: int, data_dir=None, seed: int = 0) -> list[str]:
    """A seeded sample of n deduplicated sentences of the unlabelled STS corpus."""
    from ..data.corpora import unlabeled_sts

    sentences = unlabeled_sts(data_dir, deduplicate=True)
    return random.Random(seed).sample(sentences, min(n, len(sentences)))


def _stopwords(data_dir=None) -> set[str]:
    from nltk.corpus import stopwords

    from ..data.corpora import nltk_data

    with nltk_data(data_dir):
        return set(stopwords.words("english"))


def _mean_pairwise_cosine(x: np.ndarray, rng: np.random.Generator) -> float:
    if len(x) < 2:
        return float("nan")
    x = x[rng.choice(len(x), min(len(x), PAIR_SAMPLE), replace=False)]
    x = x / np.linalg.norm(x, axis=1, keepdims=True).clip(1e-12)
    sims = x @ x.T
    return float((sims.sum() - np.trace(sims)) / (len(x) * (len(x) - 1)))


def _separation(a: np.ndarray, b: np.ndarray) -> float:
    """||mean(a) - mean(b)|| over the root-mean-square distance of the points to their own group's mean."""
    within = np.concatenate([a - a.mean(0), b - b.mean(0)])
    return float(np.linalg.norm(a.mean(0) - b.mean(0)) / max(np.sqrt((within ** 2).sum(1).mean()), 1e-12))


def _spread(x: np.ndarray) -> float:
    centroid = x.mean(0)
    x = x / np.linalg.norm(x, axis=1, keepdims=True).clip(1e-12)
    return float(1 - (x @ centroid / max(np.linalg.norm(centroid), 1e-12)).mean())


def _probe_accuracy(high: np.ndarray, low: np.ndarray, rng: np.random.Generator, high_ids=None, low_ids=None) -> float:
    """Balanced 5-fold accuracy of a logistic probe separating high from low tokens (chance 0.5); with the
    tokens' ids, the folds are grouped by id (no wordpiece in both a training and a test fold)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold, StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    per_class = min(len(high), len(low), PROBE_TOKENS // 2)
    if per_class < 10:
        return float("nan")
    pick_high, pick_low = rng.choice(len(high), per_class, replace=False), rng.choice(len(low), per_class, replace=False)
    x = np.concatenate([high[pick_high], low[pick_low]])
    y = np.repeat([0, 1], per_class)
    probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
    if high_ids is None:
        return float(cross_val_score(probe, x, y, cv=StratifiedKFold(5, shuffle=True, random_state=0)).mean())
    groups = np.concatenate([np.asarray(high_ids)[pick_high], np.asarray(low_ids)[pick_low]])
    return float(cross_val_score(probe, x, y, cv=GroupKFold(5), groups=groups).mean())


def _maps(points: np.ndarray, fit_on: np.ndarray) -> dict:
    """{"svd": uncentred TruncatedSVD(2) fit on `fit_on`, "tsne": t-SNE (init pca)} coordinates of `points`."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.manifold import TSNE

    svd = TruncatedSVD(2, random_state=0).fit(fit_on)
    tsne = TSNE(2, init="pca", random_state=0, perplexity=min(30.0, (len(points) - 1) / 3))
    return {"svd": np.round(svd.transform(points), 3).tolist(), "tsne": np.round(tsne.fit_transform(points), 3).tolist()}


@torch.no_grad()
def frequency_analysis(encoder, n_sentences: int, data_dir=None, batch_size: int = 128) -> dict:
    """The analyses above for `encoder` (an Encoder: its model and tokenizer) as it is now."""
    from ..data.corpora import bookcorpus_token_counts

    sentences = analysis_sample(n_sentences, data_dir)
    labels, _ = frequency_labels(bookcorpus_token_counts(data_dir), encoder.tokenizer.get_vocab(), ANALYSIS_RATE)
    stop = _stopwords(data_dir)
    tokenizer, model = encoder.tokenizer, encoder.model
    special = set(tokenizer.all_special_ids)
    states = {"high": [], "low": [], "special": []}
    token_ids = {"high": [], "low": [], "special": []}
    sentence_vectors, has_low = [], []
    mass = {"[SEP]": [], "[CLS]": [], "content words": [], "low-frequency words": []}
    was_training, implementation = model.training, model.config._attn_implementation
    model.eval()
    model.set_attn_implementation("eager")  # sdpa kernels do not return attention weights
    try:
        order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
        for start in range(0, len(order), batch_size):
            batch = encoder.tokenize([sentences[i] for i in order[start:start + batch_size]])
            out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_attentions=True)
            last, attention = out.last_hidden_state.float().cpu(), out.attentions[-1].float().mean(1).cpu()
            for ids, mask, h, a in zip(batch["input_ids"].cpu(), batch["attention_mask"].cpu(), last, attention):
                n = int(mask.sum())
                ids, h = ids[:n].tolist(), h[:n].numpy()
                tokens = tokenizer.convert_ids_to_tokens(ids)
                kind = ["special" if i in special else ("low" if labels[i] else "high") for i in ids]
                for name in states:
                    rows = [j for j, k in enumerate(kind) if k == name]
                    if rows:
                        states[name].append(h[rows])
                        token_ids[name] += [ids[j] for j in rows]
                sentence_vectors.append(h.mean(0))
                has_low.append("low" in kind)
                received = a[:n, :n].mean(0).numpy()  # attention each key receives, averaged over the query rows
                word = [t.removeprefix("##") for t in tokens]
                mass["[SEP]"].append(received[[j for j, t in enumerate(tokens) if t == tokenizer.sep_token]].sum())
                mass["[CLS]"].append(received[[j for j, t in enumerate(tokens) if t == tokenizer.cls_token]].sum())
                mass["content words"].append(received[[j for j, (k, w) in enumerate(zip(kind, word))
                                                       if k != "special" and w.isalpha() and w not in stop]].sum())
                mass["low-frequency words"].append(received[[j for j, k in enumerate(kind) if k == "low"]].sum())
        figure7 = encoder.tokenize([FIGURE7_SENTENCE])
        out = model(input_ids=figure7["input_ids"], attention_mask=figure7["attention_mask"], output_attentions=True)
        figure7_heads = out.attentions[-1][0].float().cpu().numpy()
    finally:
        model.set_attn_implementation(implementation)
        model.train(was_training)

    rng = np.random.default_rng(0)
    high, low, spec = (np.concatenate(states[k]) if states[k] else np.zeros((0, encoder.hidden_size))
                       for k in ("high", "low", "special"))
    sentence_vectors = np.stack(sentence_vectors)
    normed = sentence_vectors / np.linalg.norm(sentence_vectors, axis=1, keepdims=True).clip(1e-12)
    pick = rng.choice(len(normed), min(len(normed), PAIR_SAMPLE), replace=False)
    sq = ((normed[pick, None] - normed[None, pick]) ** 2).sum(-1)
    off = ~np.eye(len(pick), dtype=bool)
    token_sample = {name: x[rng.choice(len(x), min(len(x), MAP_TOKENS[name]), replace=False)]
                    for name, x in (("high", high), ("low", low), ("special", spec))}
    map_points = np.concatenate(list(token_sample.values()))
    sentence_pick = rng.choice(len(sentence_vectors), min(len(sentence_vectors), MAP_SENTENCES), replace=False)
    return {
        "n_sentences": len(sentences), "n_tokens": {"high": len(high), "low": len(low), "special": len(spec)},
        "tokens": {"anisotropy": _mean_pairwise_cosine(np.concatenate([high, low]), rng),
                   "anisotropy_high": _mean_pairwise_cosine(high, rng), "anisotropy_low": _mean_pairwise_cosine(low, rng),
                   "centroid_separation": _separation(high, low) if len(high) and len(low) else float("nan"),
                   "spread_high": _spread(high) if len(high) else float("nan"),
                   "spread_low": _spread(low) if len(low) else float("nan"),
                   "probe_accuracy": _probe_accuracy(high, low, rng, token_ids["high"], token_ids["low"])},
        "sentences": {"anisotropy": _mean_pairwise_cosine(sentence_vectors, rng),
                      "uniformity": float(np.log(np.exp(-2 * sq[off]).mean()))},
        "attention_received": {k: float(np.mean(v)) for k, v in mass.items()},
        "maps": {"tokens": {"labels": [name for name, x in token_sample.items() for _ in range(len(x))],
                            **_maps(map_points, np.concatenate([high, low, spec]))},
                 "sentences": {"has_low": [bool(has_low[i]) for i in sentence_pick],
                               **_maps(sentence_vectors[sentence_pick], sentence_vectors)}},
        "figure7": {"tokens": tokenizer.convert_ids_to_tokens(figure7["input_ids"][0].tolist()),
                    "heads": np.round(figure7_heads, 4).tolist()},
    }
