"""PaSeR's generative objective (methods/paser.py; its module doc gives the choices and their sources): the
decoder's memory built from the two sentence embeddings, the BART decoder that reads it, the tokenised batch
with the decoder's inputs and labels, its loss, and greedy decoding (Table 7)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def decoding_signal(z1: torch.Tensor, z2: torch.Tensor, reading: str, m: float, n: float,
                    projection: nn.Module | None = None) -> torch.Tensor:
    """The decoder's memory (bs, 4, d) from the raw view's z1 and the masked view's z2: `code` [n (z1*Wz2),
    m (z1 - Wz2), z1, Wz2] (W = projection), `paper` [z1, z2, m |z1 - z2|, n |z1*z2|]."""
    if reading == "code":
        z2 = projection(z2)
        return torch.stack([n * (z1 * z2), m * (z1 - z2), z1, z2], dim=1)
    return torch.stack([z1, z2, m * (z1 - z2).abs(), n * (z1 * z2).abs()], dim=1)


def build_decoder(hidden: int, cfg: dict, tokenizer) -> nn.Module:
    from transformers import BartConfig
    from transformers.models.bart.modeling_bart import BartDecoder

    config = BartConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.cls_token_id,
                        eos_token_id=tokenizer.sep_token_id, decoder_start_token_id=tokenizer.cls_token_id,
                        forced_eos_token_id=None, d_model=hidden, decoder_layers=cfg["decoder_layers"],
                        decoder_ffn_dim=cfg["decoder_ffn"] or hidden, decoder_attention_heads=cfg["decoder_heads"],
                        max_position_embeddings=512, activation_function="gelu", dropout=cfg["decoder_dropout"],
                        decoder_layerdrop=0.0, scale_embedding=False)
    decoder = BartDecoder(config)
    decoder.embed_tokens = None  # its inputs are the encoder's embeddings (shared), given as inputs_embeds
    return decoder


def decoder_inputs(target_ids: torch.Tensor, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(decoder input, labels) of padded targets "[CLS] ... [SEP] [PAD]...": labels = target[1:] with padding
    -100; input = the labels shifted right with target[0] (the start token [CLS]), -100 back to padding
    (the official code's shift_tokens_right)."""
    labels = target_ids[:, 1:].masked_fill(target_ids[:, 1:] == pad_id, -100)
    shifted = torch.cat([target_ids[:, :1], labels[:, :-1]], dim=1)
    return shifted.masked_fill(shifted == -100, pad_id), labels


def tokenize_with_lengths(tokenizer, rows: list[str], max_len: int) -> tuple[dict, list[int]]:
    """(the padded batch Encoder.tokenize(rows, max_len) gives, each row's untruncated length in tokens) from
    one untruncated call: each row is cut by hand as the tokenizer truncates one sentence (its special tokens
    kept, the content tokens past the limit dropped on the tokenizer's truncation side), then padded."""
    limit = min(max_len or getattr(tokenizer, "model_max_length", 512), 512)
    full = tokenizer(rows, return_special_tokens_mask=True)
    special = full.pop("special_tokens_mask")
    cut = {key: [] for key in full}
    for i, mask in enumerate(special):
        content = [j for j, s in enumerate(mask) if not s]
        keep = max(limit - (len(mask) - len(content)), 0)
        drop = set(content[keep:] if tokenizer.truncation_side == "right" else content[:len(content) - keep])
        for key in full:
            cut[key].append([x for j, x in enumerate(full[key][i]) if j not in drop])
    width = max(len(ids) for ids in cut["input_ids"])
    fill = {"input_ids": tokenizer.pad_token_id, "token_type_ids": tokenizer.pad_token_type_id, "attention_mask": 0}
    pad = (lambda r, n: r + n) if tokenizer.padding_side == "right" else (lambda r, n: n + r)
    batch = {key: torch.tensor([pad(r, [fill[key]] * (width - len(r))) for r in values]) for key, values in cut.items()}
    return batch, [len(ids) for ids in full["input_ids"]]


def decoder_batch(tokenizer, rows: list[str], targets: list[str | None], max_len: int) -> dict:
    """The tokenised rows (the first 2 * len(targets): view 1 and view 2 of each sentence) with the decoder's
    inputs and labels of `targets`; labels are -100 for a sentence without target or with a view of >= max_len
    tokens (the official code's rule). Each row is tokenised once (`tokenize_with_lengths`)."""
    batch, lengths = tokenize_with_lengths(tokenizer, rows, max_len)
    bs = len(targets)
    usable = [t is not None and lengths[i] < max_len and lengths[bs + i] < max_len for i, t in enumerate(targets)]
    target = tokenizer([t or "" for t in targets], padding=True, truncation=True, max_length=max_len, return_tensors="pt")
    decoder_input, labels = decoder_inputs(target["input_ids"], tokenizer.pad_token_id)
    labels[~torch.tensor(usable)] = -100
    batch["decoder_input_ids"], batch["labels"] = decoder_input, labels
    return batch


def token_loss(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean cross-entropy over the labelled tokens (0 if none), number of correctly predicted tokens)."""
    chosen = labels != -100
    if not chosen.any():
        return logits.sum() * 0.0, torch.zeros(())
    correct = (logits[chosen].argmax(-1) == labels[chosen]).sum()
    return F.cross_entropy(logits[chosen], labels[chosen]), correct


def greedy_decode(decode, memory: torch.Tensor, tokenizer, max_tokens: int = 12) -> list[int]:
    """The token ids `decode(memory, ids)` (next-token logits) generates greedily after [CLS], until [SEP]."""
    ids = torch.tensor([[tokenizer.cls_token_id]], device=memory.device)
    for _ in range(max_tokens):
        next_id = decode(memory, ids)[0, -1].argmax()
        if int(next_id) == tokenizer.sep_token_id:
            break
        ids = torch.cat([ids, next_id.view(1, 1)], dim=1)
    return ids[0, 1:].tolist()
