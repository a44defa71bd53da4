"""Does PaSeR's decoder read the sentence embeddings it is given (methods/paser.py)? A decoder trained on phrases
can lower its loss by modelling the phrases alone, whatever the embeddings say; only its dependence on them makes
the generative objective shape the encoder. So, on held-out sentences, views without augmentation and a fixed
seed: the teacher-forced loss with each sentence's own signal against the same decoder fed another sentence's
signal (the memories rolled by one over the whole set), and, beside them, the unigram entropy of the target tokens
(a guess that reads neither the signal nor the prefix). With them, how many training sentences give the decoder
nothing to rebuild (no phrase chosen, or a view of max_len tokens or more: no decoder loss) and what a masked
view looks like.
"""
from __future__ import annotations

import random
from collections import Counter

import torch
from scipy import stats

from ..data.corpora import nltk_data
from ..encoder import evaluating

SEED = 0  # the views' phrase choice and masking: fixed, so a record is reproducible


def _batches(method, sentences: list[str], how: str | None, batch_size: int):
    """(views, the tensors of each batch of `sentences`): PaSeR's own views and decoder inputs."""
    rng = random.Random(SEED)
    for start in range(0, len(sentences), batch_size):
        with nltk_data(method.data_dir):
            views = [method.views(s, rng, how=how) for s in sentences[start:start + batch_size]]
        yield views, method.tensors(*(list(x) for x in zip(*views)))


@torch.no_grad()
def decoder_check(method, held_out: list[str], training: list[str], examples: list[str], batch_size: int = 64) -> dict:
    """{"held_out": own-signal and other-signal loss and accuracy, the targets' unigram entropy, counts;
    "training": the share of `training` sentences without decoder loss (the run's own augmentation);
    "examples": sentence, masked view and target of each of `examples`}."""
    sums = {"loss": 0.0, "loss_shuffled": 0.0, "correct": 0.0, "correct_shuffled": 0.0}
    counts: Counter = Counter()
    with evaluating(method):
        batches = [batch for _, batch in _batches(method, held_out, "none", batch_size)]
        memories = []
        for batch in batches:
            bs = len(batch["labels"])
            z = method.encoder.embed({k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in batch},
                                     pooler=method.cfg["pooler"])
            memories.append(method.memory(z[:bs], z[bs:2 * bs]))
        # another sentence's signal: every memory moved on by one over the whole set (a batch of one included)
        others = torch.cat(memories).roll(1, dims=0).split([len(m) for m in memories])
        for batch, memory, other in zip(batches, memories, others):
            labels = batch["labels"]
            tokens = int((labels != -100).sum())
            for suffix, signal in (("", memory), ("_shuffled", other)):
                loss, correct = method.generative_loss(signal, batch)
                sums["loss" + suffix] += float(loss) * tokens
                sums["correct" + suffix] += float(correct)
            counts.update(labels[labels != -100].tolist())
    total = sum(counts.values())
    entropy = float(stats.entropy(list(counts.values()))) if total else float("nan")  # nats, as the loss
    rows = with_loss = 0
    for _, batch in _batches(method, training, None, batch_size):
        rows += len(batch["labels"])
        with_loss += int((batch["labels"] != -100).any(1).sum())
    shown = [dict(zip(("view", "masked", "target"), views[0]), sentence=s)
             for s in examples for views, _ in _batches(method, [s], "none", 1)]
    mean = {key: value / total if total else float("nan") for key, value in sums.items()}  # per target token
    return {"held_out": {"sentences": len(held_out), "target_tokens": total, "loss": mean["loss"],
                         "loss_shuffled": mean["loss_shuffled"], "accuracy": 100 * mean["correct"],
                         "accuracy_shuffled": 100 * mean["correct_shuffled"], "unigram_entropy": entropy},
            "training": {"sentences": rows, "no_decoder_loss": 1 - with_loss / rows if rows else float("nan")},
            "examples": shown}
