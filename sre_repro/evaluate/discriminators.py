"""How well SLT-FAI's two discriminators (methods/slt_fai.py) separate their classes on held-out sentences, judged
by measures a base rate cannot fake. The similarity discriminator's labels are 93 % HIGH / 7 % LOW on the word
tokens, so its plain accuracy sits at the majority share whether it learned or not; the ROC AUC (0.5: no
separation, whatever the base rate) and the balanced accuracy (the mean of the per-class recalls, 0.5 for any
constant answer) are read instead, beside the majority share. protocol.engaged("classifier") judges either (the
AUC where a discriminator ranks its rare class without its probability crossing 0.5).

similarity     the last layer's token states of the sentence as it is (eval mode, no augmentation) -> P(LOW) per
               word token (special tokens and padding aside, as Eq. 4's positions), against the token's label
information   the sentence's vector and its incomplete copy's (ISF's rule and rate, a fixed generator) -> P(copy),
               over the sentences whose copy differs from them (an unchanged copy cannot be told apart)
"""
from __future__ import annotations

import numpy as np
import torch
from sklearn.metrics import balanced_accuracy_score, roc_auc_score

from ..encoder import pool

MASK_SEED = 0  # the held-out copies' masks: fixed, so a record is reproducible


def separation(probabilities, labels) -> dict:
    """{"auc", "balanced_accuracy", "majority", "n"} of P(class 1) against 0/1 labels (the prediction: p > 0.5)."""
    p, y = np.asarray(probabilities, dtype=float), np.asarray(labels, dtype=int)
    share = float(y.mean()) if len(y) else float("nan")
    both = len(np.unique(y)) == 2
    return {"auc": float(roc_auc_score(y, p)) if both else float("nan"),
            "balanced_accuracy": float(balanced_accuracy_score(y, p > 0.5)) if both else float("nan"),
            "majority": max(share, 1 - share), "n": int(len(y))}


@torch.no_grad()
def discriminator_separation(method, sentences: list[str], batch_size: int = 64) -> dict:
    """{"similarity": separation(...), "information": separation(...)} of a trained SLT-FAI `method` (each
    discriminator whose loss weight is above 0) on `sentences`."""
    from ..methods.slt_fai import isf_mask

    was_training = method.training
    method.eval()
    generator = torch.Generator().manual_seed(MASK_SEED)
    sim_p, sim_y, info_p, info_y = [], [], [], []
    for start in range(0, len(sentences), batch_size):
        batch = method.encoder.tokenize(sentences[start:start + batch_size], method.cfg["max_len"])
        ids, mask = batch["input_ids"], batch["attention_mask"]
        hidden = method.encoder.forward_hidden(batch)
        if method.cfg["alpha"] > 0:
            positions = mask.bool() & ~method.special[ids]
            probability = method.similarity_discriminator(hidden[-1]).float().softmax(-1)[..., 1]
            sim_p.append(probability[positions].cpu().numpy())
            sim_y.append(method.labels[ids][positions].cpu().numpy())
        if method.cfg["beta"] > 0:
            masked = isf_mask(ids, mask, method.labels, method.special, method.cfg["isf_mask"], method.isf_rate,
                              method.encoder.tokenizer.mask_token_id, generator)
            changed = (masked != ids).any(1)
            copy = method.encoder.forward_hidden({**batch, "input_ids": masked})
            vectors = [pool(method.train_pooler, h, mask, method.encoder.mlp).float()[changed] for h in (hidden, copy)]
            probability = method.information_discriminator(torch.cat(vectors)).float().softmax(-1)[:, 1]
            info_p.append(probability.cpu().numpy())
            info_y.append(np.repeat([0, 1], int(changed.sum())))
    method.train(was_training)
    out = {}
    if sim_p:
        out["similarity"] = separation(np.concatenate(sim_p), np.concatenate(sim_y))
    if info_p:
        out["information"] = separation(np.concatenate(info_p), np.concatenate(info_y))
    return out
