"""The masked-language-model term that PaSeR and SimCSE + MLM add to a sentence encoder (shared here, since
methods never import each other): the PLM's own pretrained MLM head as an untied copy, BERT's 15% masking
with the 80/10/10 rule (HF's DataCollatorForLanguageModeling, special tokens never masked), and the loss
computed at the masked positions only (the same loss, ~1/0.15 less softmax work)."""
from __future__ import annotations

import copy
from collections import Counter
from functools import lru_cache

import torch
import torch.nn.functional as F
from scipy import stats
from torch import nn

from .encoder import resolve_model_path


def pretrained_mlm_head(encoder) -> tuple[nn.Module, bool]:
    """(head, pretrained): the encoder PLM's MLM head (BERT's `cls`, RoBERTa's `lm_head`) as a copy whose
    output matrix is its own (sre-bert and BERT tie it to the word embeddings: PaSeR's code loads it as a
    separate module, so it is untied). A PLM without a saved head (tiny-random, all-MiniLM) gets HF's
    freshly initialised head of its architecture (pretrained False)."""
    from transformers import AutoModelForMaskedLM, BertConfig
    from transformers.models.bert.modeling_bert import BertOnlyMLMHead

    if encoder.name == "tiny-random":
        config = BertConfig(**{**encoder.model.config.to_dict()})
        head, pretrained = BertOnlyMLMHead(config), False
        head.predictions.decoder.weight = nn.Parameter(encoder.model.embeddings.word_embeddings.weight.detach().clone())
    else:
        model, info = AutoModelForMaskedLM.from_pretrained(resolve_model_path(encoder.name), output_loading_info=True)
        head = copy.deepcopy(model.cls if hasattr(model, "cls") else model.lm_head)
        pretrained = not any(k.startswith(("cls.", "lm_head.")) for k in info["missing_keys"])
    for module in head.modules():  # untie: every parameter a tensor of its own
        for name, param in list(module.named_parameters(recurse=False)):
            setattr(module, name, nn.Parameter(param.detach().clone()))
    return head.to(encoder.device_type), pretrained


@lru_cache(maxsize=8)
def mlm_collator(tokenizer, probability: float):
    """HF's collator for the tokenizer, built once: without a seed it keeps no state of its own (every draw is
    from the global torch RNG), so one instance masks exactly as a fresh one per call did."""
    from transformers import DataCollatorForLanguageModeling

    return DataCollatorForLanguageModeling(tokenizer, mlm_probability=probability)


def mask_for_mlm(input_ids: torch.Tensor, tokenizer, probability: float = 0.15) -> tuple[torch.Tensor, torch.Tensor]:
    """(masked input ids, labels with -100 off the masked positions), drawn from the global torch RNG (whose
    state the trainer checkpoints). Special tokens ([CLS], [SEP], [PAD]) are never masked."""
    collator = mlm_collator(tokenizer, probability)
    ids = input_ids.detach().cpu().clone()
    special = torch.isin(ids, torch.tensor(tokenizer.all_special_ids))
    masked, labels = collator.torch_mask_tokens(ids, special_tokens_mask=special)
    return masked.to(input_ids.device), labels.to(input_ids.device)


def mlm_loss(encoder, head: nn.Module, batch: dict, probability: float = 0.15) -> torch.Tensor:
    """MLM cross-entropy of `batch` (tokenised sentences) through the encoder's PLM and `head`, at the
    masked positions only. A batch where nothing was masked gives 0."""
    masked, labels = mask_for_mlm(batch["input_ids"], encoder.tokenizer, probability)
    hidden = encoder.forward_hidden({**batch, "input_ids": masked})[-1]
    chosen = labels != -100
    if not chosen.any():
        return hidden.sum() * 0.0
    return F.cross_entropy(head(hidden[chosen]).float(), labels[chosen])


def target_entropy(tokenizer, sentences: list[str], max_len: int) -> float:
    """The MLM term's trivial baseline: the unigram entropy (nats, as the loss) of the tokens it may mask in
    `sentences`, tokenised as in training (cut at max_len, special tokens never masked), which is the loss of a
    guess that reads neither the sentence nor the masked context. Masking draws its positions uniformly, so the
    masked targets follow this distribution in expectation."""
    special = set(tokenizer.all_special_ids)
    ids = tokenizer(list(sentences), truncation=True, max_length=max_len)["input_ids"]
    counts = Counter(token for row in ids for token in row if token not in special)
    return float(stats.entropy(list(counts.values())))
