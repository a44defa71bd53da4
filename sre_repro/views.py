"""ConSERT's views and loss, shared by the methods `consert` and `slt_fai` (SLT-FAI's official code is a
ConSERT fork; their common base, `FrequencyAnalysed`, is in methods/common.py).

Every augmentation acts on the embedding layer's OUTPUT, as ConSERT's bundled modeling_bert does it (l.868-1003):
  shuffle         permutes the position ids of the first n = attention-mask-sum positions ([CLS]/[SEP]
                  included); the tokens stay where they are, so token-level labels stay aligned
  token_cutoff    zeroes int(n * rate) whole token rows among the first n (special tokens can be hit)
  feature_cutoff  zeroes int(d * rate) embedding dimensions at every position (drawn per sentence)
  dropout         zeroes int(n * d * rate) elements among the first n rows
  none            the sentence as it is
The draws use torch's global generator, which the trainer's checkpoints keep (an interrupted run resumes to
the same views). ConSERT draws with Python's `random`; the distributions are the same.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .distributed import gather_rows
from .errors import SreError
from .packing import hidden_states
from .settings import require_choice, require_positive

AUGMENTATIONS = ["none", "shuffle", "token_cutoff", "feature_cutoff", "dropout"]
TRAIN_POOLERS = ["avg", "avg_first_last", "avg_top2"]  # ConSERT pools by averaging; it has no [CLS] head
# ConSERT's recipe besides lr and steps (sentence-transformers' fit: AdamW eps 1e-6, weight decay 0.01, 10 %
# linear warm-up; max_seq_length 64; the unlabelled STS corpus), at every scale; at cpu lr and steps are the
# recipe appendix's; PAPER is the released scripts' (SLT-FAI: batch 32, lr 5e-7, 10 epochs, dev every 200 steps)
CONSERT_RECIPE = dict(train_data="sts_unlabeled", max_len=64, weight_decay=0.01, adam_eps=1e-6, warmup_ratio=0.1,
                      eval_pooler="avg")
CONSERT_PAPER = dict(CONSERT_RECIPE, batch_size=32, epochs=10, max_steps=0, lr=5e-7, eval_steps=200, precision="fp16")


def view_inputs(attention_mask: torch.Tensor, hidden: int, kind: str, rate: float):
    """(position_ids or None, keep or None) of one view of a padded batch: the permuted positions (shuffle)
    and the 0/1 multiplier of the embedding output (the cutoffs), shape (batch, length, hidden)."""
    if kind not in AUGMENTATIONS:
        raise SreError(f"unknown augmentation {kind!r}: choose from {', '.join(AUGMENTATIONS)}")
    rows, length = attention_mask.shape
    lengths = attention_mask.sum(1).tolist()
    if kind == "none":
        return None, None
    if kind == "shuffle":
        positions = torch.arange(length).repeat(rows, 1)
        for row, n in enumerate(lengths):
            positions[row, :n] = torch.randperm(n)
        return positions.to(attention_mask.device), None
    keep = torch.ones(rows, length, hidden)
    for row, n in enumerate(lengths):
        if kind == "token_cutoff":
            keep[row, torch.randperm(n)[: int(n * rate)]] = 0
        elif kind == "feature_cutoff":
            keep[row, :, torch.randperm(hidden)[: int(hidden * rate)]] = 0
        else:  # dropout: elements of the first n rows
            flat = keep[row, :n].reshape(-1)
            flat[torch.randperm(n * hidden)[: int(n * hidden * rate)]] = 0
            keep[row, :n] = flat.view(n, hidden)
    return None, keep.to(attention_mask.device)


def augmented_forward(model: nn.Module, attention_mask, views: list[tuple[torch.Tensor, str, float]], hidden: int,
                      packed: bool = False):
    """All hidden states of several views of one padded batch, each (input_ids, augmentation, rate), in ONE
    forward of len(views) x batch rows (with dropout off, as ConSERT trains, rows do not interact). The views
    are drawn in the padded layout and packed with their sentences when `packed` (the same draws either way)."""
    rows, length = attention_mask.shape
    positions, keeps = [], []
    for _, kind, rate in views:
        pos, keep = view_inputs(attention_mask, hidden, kind, rate)
        positions.append(pos if pos is not None else torch.arange(length, device=attention_mask.device).repeat(rows, 1))
        keeps.append(keep if keep is not None else torch.ones(rows, length, hidden, device=attention_mask.device))
    return hidden_states(model, torch.cat([ids for ids, _, _ in views]), attention_mask.repeat(len(views), 1),
                         position_ids=torch.cat(positions), keep=torch.cat(keeps), packed=packed)


def nt_xent(z1: torch.Tensor, z2: torch.Tensor, temperature: float) -> torch.Tensor:
    """ConSERT's loss: L2-normalised views, logits [z1 z2^T, z1 z1^T - 1e9 I] / tau with target i (intra-view
    negatives included), the same from z2's side, the two cross-entropies SUMMED (ConSERT's loss_a + loss_b).
    Under data parallelism every process's rows take part (gather_rows; the identity in one process)."""
    z1, z2 = gather_rows(z1), gather_rows(z2)
    a, b = F.normalize(z1.float(), dim=-1), F.normalize(z2.float(), dim=-1)  # fp32: -1e9 overflows fp16
    eye = torch.eye(len(a), device=a.device, dtype=a.dtype)
    target = torch.arange(len(a), device=a.device)
    loss_a = F.cross_entropy(torch.cat([a @ b.T, a @ a.T - 1e9 * eye], 1) / temperature, target)
    loss_b = F.cross_entropy(torch.cat([b @ a.T, b @ b.T - 1e9 * eye], 1) / temperature, target)
    return loss_a + loss_b


def set_dropout(model: nn.Module, p: float) -> None:
    """Every dropout of the PLM at probability `p` (hidden and attention: BERT's attention reads its module's p)."""
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = p


def disable_dropout(model: nn.Module) -> None:
    """ConSERT trains and tests with every dropout of the PLM at 0 (`--no_dropout`, issue #1 of its repo)."""
    set_dropout(model, 0.0)


def validate_views(cfg: dict) -> None:
    """The checks of ConSERT's knobs (consert, and slt_fai on the ConSERT backbone)."""
    require_positive(cfg, "temperature", "cl_rate")
    require_choice(cfg, "pooler", TRAIN_POOLERS)
    for view in ("view1", "view2"):
        require_choice(cfg, view, AUGMENTATIONS)
        if cfg[view] not in ("none", "shuffle") and not 0 < cfg[f"{view}_rate"] < 1:
            raise SreError(f"{view}_rate must lie in (0, 1) for {cfg[view]}, got {cfg[f'{view}_rate']}")


def consert_views(cfg: dict, input_ids: torch.Tensor) -> list[tuple[torch.Tensor, str, float]]:
    """ConSERT's two views of a batch, as `augmented_forward` takes them: (ids, view1, view1_rate), (ids, view2, ...)."""
    return [(input_ids, cfg["view1"], cfg["view1_rate"]), (input_ids, cfg["view2"], cfg["view2_rate"])]
