"""Packed forwards: a padded batch's sentences laid end to end in rows, so the encoder computes real tokens only.

A batch of B sentences padded to L becomes rows of `row_len` slots (the batch's own L unless given), each
holding whole sentences (first fit, longest first; a sentence is never split). Position ids and token types
restart per sentence and the attention mask is block-diagonal, so every token attends to exactly the tokens it
attends to in the padded batch: the hidden states are the padded ones up to float rounding (dropout draws its
masks over the other layout). They come back in the padded layout, zeros at padding, so a method's code does not
change; only the order of sentences inside the encoder changes, never the batch (in-batch negatives stay).

Exact for the absolute-position encoders named in POSITION_OFFSET (BERT and RoBERTa families); any other model
runs padded. Empty slots at a row's end attend among themselves (no row of the softmax is empty).
"""
from __future__ import annotations

import torch
from torch import nn

# Where a model family's position ids start: BERT at 0; RoBERTa after its padding index (pad_token_id + 1)
POSITION_OFFSET = {"bert": lambda config: 0, "roberta": lambda config: config.pad_token_id + 1,
                   "xlm-roberta": lambda config: config.pad_token_id + 1}


def packable(model: nn.Module) -> bool:
    config = model.config
    return (config.model_type in POSITION_OFFSET and not config.is_decoder
            and getattr(config, "position_embedding_type", "absolute") == "absolute")


def first_fit(lengths: list[int], row_len: int) -> list[tuple[int, int]]:
    """(row, offset) of each sentence: longest first, each into the first row with room for it."""
    place, free = [None] * len(lengths), []
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        row = next((r for r, room in enumerate(free) if room >= lengths[i]), len(free))
        if row == len(free):
            free.append(row_len)
        place[i] = (row, row_len - free[row])
        free[row] -= lengths[i]
    return place


class Packing:
    """The map between a padded batch (its attention mask, B x L, real tokens anywhere in a row) and its rows."""

    def __init__(self, attention_mask: torch.Tensor, row_len: int | None = None):
        batch, length = attention_mask.shape
        lengths = attention_mask.sum(1)
        self.row_len = max(row_len or length, int(lengths.max()))
        place = torch.tensor(first_fit(lengths.tolist(), self.row_len), device=attention_mask.device)
        self.rows = int(place[:, 0].max()) + 1
        sentence, token = attention_mask.nonzero(as_tuple=True)  # real tokens, sentence by sentence
        rank = attention_mask.cumsum(1)[sentence, token] - 1  # a token's index among its sentence's real tokens
        self.padded = sentence * length + token
        self.slots = place[sentence, 0] * self.row_len + place[sentence, 1] + rank
        self.shape = (batch, length)
        segment = torch.full((self.rows * self.row_len,), -1, device=attention_mask.device)
        segment[self.slots] = sentence
        segment = segment.view(self.rows, 1, self.row_len)
        self.block = (segment.unsqueeze(-1) == segment.unsqueeze(-2))  # rows x 1 x row_len x row_len

    def pack(self, padded: torch.Tensor, fill=0) -> torch.Tensor:
        """A per-token tensor (B x L x ...) in the packed layout (rows x row_len x ...), `fill` in empty slots."""
        flat = padded.reshape(self.shape[0] * self.shape[1], *padded.shape[2:])
        out = flat.new_full((self.rows * self.row_len, *padded.shape[2:]), fill)
        out = out.index_copy(0, self.slots, flat.index_select(0, self.padded))
        return out.view(self.rows, self.row_len, *padded.shape[2:])

    def unpack(self, packed: torch.Tensor) -> torch.Tensor:
        """Packed token states back in the padded layout, zeros at padding (differentiable)."""
        flat = packed.reshape(self.rows * self.row_len, *packed.shape[2:])
        out = flat.new_zeros((self.shape[0] * self.shape[1], *packed.shape[2:]))
        out = out.index_copy(0, self.padded, flat.index_select(0, self.slots))
        return out.view(*self.shape, *packed.shape[2:])

    def attention_mask(self, model: nn.Module, dtype: torch.dtype) -> torch.Tensor:
        """The block-diagonal 4-D mask as the model's attention takes it: boolean for SDPA, additive otherwise."""
        if model.config._attn_implementation == "sdpa":
            return self.block
        return torch.zeros(self.block.shape, dtype=dtype, device=self.block.device).masked_fill(
            ~self.block, torch.finfo(dtype).min)


def default_positions(model: nn.Module, attention_mask: torch.Tensor) -> torch.Tensor:
    """The position ids the model gives a padded batch by itself (BERT: 0..L-1; RoBERTa: counted over real tokens
    from pad_token_id + 1)."""
    offset = POSITION_OFFSET[model.config.model_type](model.config)
    if offset == 0:
        return torch.arange(attention_mask.shape[1], device=attention_mask.device).expand_as(attention_mask)
    return (attention_mask.cumsum(1) - 1) * attention_mask + offset


def hidden_states(model: nn.Module, input_ids, attention_mask, token_type_ids=None, position_ids=None,
                  keep=None, packed: bool = True, row_len: int | None = None) -> tuple[torch.Tensor, ...]:
    """All hidden states (embedding output first) of a padded batch, in the padded layout. `position_ids`
    replace the model's own (a view's permuted positions); `keep` (B x L x hidden) multiplies the embedding
    output (a view's cutoffs). Packed unless `packed` is False or the model is not `packable`."""
    if packed and packable(model):
        packing = Packing(attention_mask, row_len)
        position_ids = packing.pack(position_ids if position_ids is not None
                                    else default_positions(model, attention_mask))
        token_type_ids = packing.pack(token_type_ids) if token_type_ids is not None else None
        keep = packing.pack(keep, fill=1) if keep is not None else None
        input_ids = packing.pack(input_ids, fill=model.config.pad_token_id or 0)
        attention_mask = packing.attention_mask(model, model.get_input_embeddings().weight.dtype)
    else:
        packing = None
    handle = model.embeddings.register_forward_hook(lambda module, args, out: out * keep.to(out.dtype)) \
        if keep is not None else None
    try:
        out = model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                    position_ids=position_ids, output_hidden_states=True).hidden_states
    finally:
        if handle is not None:
            handle.remove()
    return tuple(packing.unpack(h) for h in out) if packing else out
