"""PT-BERT ("A Sentence is Worth 128 Pseudo Tokens"): a MoCo pair of encoders whose sentence vectors pass
through L learnable pseudo tokens, InfoNCE against the momentum keys of this batch and a queue of earlier ones.

  Y     the online encoder's states of a sentence (dropout on)
  P     Embedding(L, d) of the ids 0..L-1: the pseudo sentence, independent of the PLM          (Sec. 4.2)
  A     ONE attention module, shared W_Q, W_K, W_V (d x d, with bias), softmax(QK^T / sqrt(d_head)) V with
        attention-probability dropout and no output projection, residual or LayerNorm (the official code's
        bare BertSelfAttention, with the PLM's head count: `attention_heads=0`); by default Eq. 2 as written:
        one head, scaled by sqrt(d_k) with d_k the model dimension
  Z'    = A(q = P, kv = Y)                                                                      (Eq. 1)
  h     = A(q = Y, kv = Z'), pooled over Y's rows, then SimCSE's MLP (Linear + Tanh; code only)   (Eq. 3)
  keys  the same path through momentum copies of the encoder, P, A and the MLP, without gradient and with
        dropout on; the queue holds the keys of the `queue_keys` most recent earlier sentences (FIFO)
  loss  CE over cos(h_i, k_j) / tau, k = [this batch's keys; the queue], target j = i           (Eq. 4)
  after each optimiser step  theta_k <- beta theta_k + (1 - beta) theta_q, beta = 0.885          (Eq. 5)
  test  the online encoder alone with `eval_pooler` (the code's cls_before_pooler); P, A, MLP dropped

Two readings behind parameters (`shared/notes/official_code.md` Sec. 4):
  y_source       tokens: Y is the token states, padding masked (the paper: "key and value are the sentence
                 embeddings obtained from the BERT encoder"); pooled: Y is one pooled vector per sentence
                 (the official code), so step 1 has a single key, its softmax is 1, every pseudo row is
                 W_V y + b and P receives no gradient: the pseudo tokens degenerate
  key_attn_step2 momentum (the book's reading of Fig. 2: the key branch a momentum copy, its two attentions
                 "the same") | online (the code's key branch reuses the online A in step 2)
  key_init       copy (MoCo) | random (the code: the key encoder is deep-copied before the weights load)
`pseudo=False` is MoCo-BERT (the paper's baseline): the same pair of encoders and queue, no P and no A.
Discrete augmentations of the key view (reorder, duplication, deletion; the code's collator) are MoCo's
baselines of Table 3. The momentum update runs at the start of each `loss` from the second on (the trainer
has no after-step hook): at step t it applies the online weights after optimiser step t - 1.
Data parallel (torchrun): every process gathers all processes' queries and keys (with gradients on the
queries), so the logits and the queue are those of one process with the global batch, and the queues stay
identical; the momentum update follows online weights that DDP keeps identical. The queue must then hold at
least one global batch (queue_keys >= world_size * batch_size), or the newest keys push out all older ones.
`packed` (the default) packs both encoders' training forwards (sre_repro/packing.py); Y returns padded.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..encoder import MLP, evaluating, pool
from ..errors import SreError
from ..distributed import gather_rows
from ..packing import hidden_states
from .common import PROBE_PAIRS, Method, cosine_matrix, count_call, require_choice, require_positive

AUGMENTATIONS = ["none", "reorder", "duplication", "deletion"]


@dataclass
class Params:
    temperature: float = 0.05
    pseudo: bool = True               # False: MoCo-BERT (no pseudo tokens, no attention)
    pseudo_length: int = 128          # L
    queue_keys: int = 256             # keys of earlier batches queued besides this batch's (the code's 4 x 64)
    momentum: float = 0.885           # beta
    y_source: str = "tokens"          # tokens (the paper) | pooled (the official code: one vector, degenerate)
    h_pool: str = "avg"               # how h's rows are pooled when y_source=tokens: avg (masked) | cls
    attention_heads: int = 1          # heads of A: 1 = Eq. 2 (scaled by sqrt(d)); 0 = the PLM's (the code's BertSelfAttention)
    key_attn_step2: str = "momentum"  # momentum (the paper) | online (the official code)
    key_init: str = "copy"            # copy | random (the official code)
    mlp: bool = True                  # SimCSE's MLP on h (the code; the paper does not mention it)
    pooler: str = "cls"               # the encoder's pooler for Y when y_source=pooled (the code: cls)
    augmentation: str = "none"        # the key view's discrete augmentation: none | reorder | duplication | deletion
    augment_rate: float = 0.1         # share of tokens duplicated or deleted (the paper gives no rate)


class PseudoAttention(nn.Module):
    """Multi-head attention with shared W_Q/W_K/W_V and nothing after the weighted sum (BertSelfAttention)."""

    def __init__(self, d: int, heads: int, dropout: float):
        super().__init__()
        if d % heads:
            raise SreError(f"hidden size {d} is not a multiple of {heads} heads")
        self.heads, self.query, self.key, self.value = heads, nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.dropout = nn.Dropout(dropout)

    def split(self, x):  # (b, n, d) -> (b, heads, n, d_head)
        b, n, d = x.shape
        return x.view(b, n, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, queries, memory, memory_mask=None, return_weights: bool = False):
        """queries (b, n, d) attend over memory (b, m, d); memory_mask (b, m): 1 = a real row."""
        q, k, v = self.split(self.query(queries)), self.split(self.key(memory)), self.split(self.value(memory))
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if memory_mask is not None:
            scores = scores.masked_fill(memory_mask[:, None, None, :] == 0, torch.finfo(scores.dtype).min)
        weights = scores.softmax(-1)
        out = (self.dropout(weights) @ v).transpose(1, 2).flatten(2)
        return (out, weights) if return_weights else out


def augment_one(ids, mask, kind: str, rate: float):
    """One sentence's wordpieces (unpadded) through one augmentation, as the official collator applies it:
    reorder shuffles every position after [CLS], [SEP] included; duplication int(rate * n) times inserts a
    copy of a random token i in [1, n - 1] right after it; deletion masks out int(rate * n) positions in
    [1, n - 1], drawn with replacement (they stay in place). Draws from torch's global generator, which the
    trainer's checkpoints keep, so an interrupted run resumes to the same views."""
    ids, mask, n = ids.clone(), mask.clone(), len(ids)
    count = int(rate * n)
    if kind == "reorder":
        ids[1:] = ids[1:][torch.randperm(n - 1)]
    elif kind == "duplication":
        for _ in range(count):
            i = int(torch.randint(1, len(ids), (1,)))
            ids = torch.cat([ids[:i + 1], ids[i:]])
        mask = torch.ones_like(ids)
    elif kind == "deletion":
        mask[torch.randint(1, n, (count,))] = 0
    elif kind != "none":
        raise SreError(f"unknown augmentation {kind!r}: choose from {', '.join(AUGMENTATIONS)}")
    return ids, mask


def augment(input_ids, attention_mask, kind: str, rate: float, pad_id: int = 0):
    """The key view of a padded batch: each sentence goes through `augment_one` with probability 1/3 (the
    code draws one of [keep, keep, op]), then the batch is padded again."""
    if kind == "none":
        return input_ids, attention_mask
    rows = []
    for ids, mask in zip(input_ids, attention_mask):
        n = int(mask.sum())
        drawn = int(torch.randint(3, (1,))) == 2
        rows.append(augment_one(ids[:n], mask[:n], kind, rate) if drawn else (ids[:n], mask[:n]))
    width = max(len(ids) for ids, _ in rows)
    return (torch.stack([F.pad(ids, (0, width - len(ids)), value=pad_id) for ids, _ in rows]),
            torch.stack([F.pad(mask, (0, width - len(mask))) for _, mask in rows]))


class PseudoHead(nn.Module):
    """P, A and the MLP: from a sentence's states Y (b, n, d) with mask (b, n) to h (b, d)."""

    def __init__(self, d: int, heads: int, dropout: float, cfg: dict):
        super().__init__()
        self.cfg = cfg
        if cfg["pseudo"]:
            self.pseudo = nn.Embedding(cfg["pseudo_length"], d)  # N(0, 1), PyTorch's default (the code's)
            self.attention = PseudoAttention(d, heads, dropout)
        self.mlp = MLP(d) if cfg["mlp"] else nn.Identity()

    def forward(self, states, mask, step2_attention=None):
        h = states
        if self.cfg["pseudo"]:
            pseudo = self.pseudo.weight.unsqueeze(0).expand(len(states), -1, -1)
            z = self.attention(pseudo, states, mask)                             # Eq. 1
            h = (step2_attention or self.attention)(states, z)                   # Eq. 3
        cls = self.cfg["y_source"] == "pooled" or self.cfg["h_pool"] == "cls"
        return self.mlp(pool("cls" if cls else "avg", (h,), mask))  # avg: over the mask's rows


class PTBERT(Method):
    Params = Params
    # sre-bert's [CLS] is untrained (its pretraining has no sentence objective): pooled Y, h's pooling and the
    # test pooler use avg at cpu, as the cpu SimCSE runs do, and [CLS] at paper scale (the code's pooler, and the
    # sentence vector selection and test read); max_len 64 is the official recipe's
    SCALE_PRESETS = {"cpu": dict(pooler="avg", h_pool="avg", eval_pooler="avg", max_len=64),  # lr, head_lr: settings.CPU_RECIPES
                     "paper": dict(pooler="cls", h_pool="cls", eval_pooler="cls", max_len=64)}

    def __init__(self, cfg, encoder):
        super().__init__(cfg, encoder)
        config = encoder.model.config
        dropout = getattr(config, "attention_probs_dropout_prob", 0.1)
        self.head = PseudoHead(encoder.hidden_size, cfg["attention_heads"] or config.num_attention_heads, dropout, cfg)
        # the key branch: momentum copies, never optimised
        self.key_model = copy.deepcopy(encoder.model).requires_grad_(False)
        if cfg["key_init"] == "random":
            self.key_model.apply(self.key_model._init_weights)
        self.key_head = copy.deepcopy(self.head).requires_grad_(False)
        self.register_buffer("queue", torch.zeros(cfg["queue_keys"], encoder.hidden_size))
        self.register_buffer("queue_filled", torch.zeros((), dtype=torch.long))
        self.register_buffer("loss_calls", torch.zeros((), dtype=torch.long))

    def added_modules(self):
        """What PT-BERT adds and trains: P, A and the MLP (the key branch only follows them)."""
        return {"pseudo tokens": self.head.pseudo, "attention": self.head.attention, "mlp": self.head.mlp} \
            if self.cfg["pseudo"] else {"mlp": self.head.mlp}

    @classmethod
    def validate(cls, cfg):
        require_positive(cfg, "temperature", "pseudo_length")
        if cfg["attention_heads"] < 0:
            raise SreError(f"attention_heads must be 0 (the PLM's head count) or positive, got {cfg['attention_heads']}")
        require_choice(cfg, "y_source", ["tokens", "pooled"])
        require_choice(cfg, "h_pool", ["avg", "cls"])
        require_choice(cfg, "key_attn_step2", ["momentum", "online"])
        require_choice(cfg, "key_init", ["copy", "random"])
        require_choice(cfg, "augmentation", AUGMENTATIONS)
        if not 0 <= cfg["momentum"] < 1:
            raise SreError(f"momentum must lie in [0, 1) (the key encoder's share of its old weights), got {cfg['momentum']}")
        batch = cfg["batch_size"] * cfg["world_size"]  # the global batch, whose keys are enqueued at once
        if cfg["queue_keys"] < batch:
            raise SreError(f"queue_keys {cfg['queue_keys']} is smaller than a batch ({batch}): "
                           f"set queue_keys to a multiple of it, e.g. {4 * batch}")
        if not 0 <= cfg["augment_rate"] < 1:
            raise SreError(f"augment_rate must lie in [0, 1), got {cfg['augment_rate']}")

    def collate(self, sentences):
        online = self.encoder.tokenize(list(sentences), self.cfg["max_len"])
        ids, mask = augment(online["input_ids"].cpu(), online["attention_mask"].cpu(), self.cfg["augmentation"],
                            self.cfg["augment_rate"], self.encoder.tokenizer.pad_token_id or 0)
        device = online["input_ids"].device
        return {"online": online, "key": {"input_ids": ids.to(device), "attention_mask": mask.to(device)}}

    def states(self, model, batch):
        """Y: the token states (tokens) or one pooled vector per sentence, as a length-1 sequence (pooled)."""
        hidden = hidden_states(model, batch["input_ids"], batch["attention_mask"],
                               packed=self.encoder.packed and model.training)
        if self.cfg["y_source"] == "pooled":
            y = pool(self.cfg["pooler"], hidden, batch["attention_mask"])
            return y.unsqueeze(1), torch.ones(len(y), 1, dtype=torch.long, device=y.device)
        return hidden[-1], batch["attention_mask"]

    @torch.no_grad()
    def momentum_update(self):
        beta = self.cfg["momentum"]
        for online, key in ((self.encoder.model, self.key_model), (self.head, self.key_head)):
            for p_q, p_k in zip(online.parameters(), key.parameters()):
                p_k.mul_(beta).add_(p_q.detach(), alpha=1 - beta)

    @torch.no_grad()
    def keys(self, batch):
        self.key_model.train(self.training)  # dropout on for the keys, as in the code
        y, mask = self.states(self.key_model, batch)
        step2 = self.head.attention if self.cfg["pseudo"] and self.cfg["key_attn_step2"] == "online" else None
        return self.key_head(y, mask, step2_attention=step2)

    def enqueue(self, keys):
        """Newest first; the oldest keys fall off the end."""
        keys = keys.detach().to(self.queue.dtype)
        self.queue.copy_(torch.cat([keys, self.queue])[: len(self.queue)])
        self.queue_filled.copy_(torch.clamp(self.queue_filled + len(keys), max=len(self.queue)))

    def loss(self, batch):
        if count_call(self.loss_calls, self.training) > 0 and self.training:  # from the second training call on
            self.momentum_update()
        # data parallel: every process's queries and keys, so the queues stay identical across processes
        h = gather_rows(self.head(*self.states(self.encoder.model, batch["online"])))
        k = gather_rows(self.keys(batch["key"]))
        queued = self.queue[: int(self.queue_filled)]
        logits = torch.cat([cosine_matrix(h, k), cosine_matrix(h, queued)], dim=1) / self.cfg["temperature"]
        loss = F.cross_entropy(logits, torch.arange(len(h), device=h.device))
        if self.training:
            self.enqueue(k)
        return {"loss": loss}

    @torch.no_grad()
    def encode_h(self, sentences, batch_size: int = 128):
        """The final embedding h (P, A and the MLP on the online encoder), as the paper's Figure 3 measures it.
        Batched by character length, as the records were made (token-length batches change the last bits)."""
        with evaluating(self):
            return self.encoder.encode(sentences, batch_size=batch_size, sort_key=len,
                                       embedding=lambda batch: self.head(*self.states(self.encoder.model, batch)))

    def dev_metrics(self):
        """STS-B dev of the encoder (what selects the checkpoint and is tested), plus the alignment and
        uniformity of h on the same pairs (`h_alignment`, `h_uniformity`: Figure 3 measures h)."""
        from ..evaluate.geometry import geometry
        from ..evaluate.sts import encode_pairs

        metrics = super().dev_metrics()
        (e1, e2), = encode_pairs(self.encode_h, [self._dev_pairs])
        h = geometry(e1, e2, self._dev_pairs)
        return {**metrics, "h_alignment": h["alignment"], "h_uniformity": h["uniformity"]}

    def finish(self):
        """The test metrics, the hard-length subset of STS12-16, and which token states the pseudo tokens read
        in the probe sentences."""
        from ..evaluate.hard_subset import evaluate_hard_subset

        final = super().finish()
        # Table 5c at the default thresholds (the paper's gaps, gold cut 2.5), as many pairs per year as the scale scores per STS subset
        final["hard_subset"] = evaluate_hard_subset(self.encode, self.data_dir, self.cfg["eval_max_pairs"])
        if self.cfg["pseudo"]:
            final["pseudo_attention"] = self.pseudo_attention([s for pair in PROBE_PAIRS for s in pair])
        return final

    @torch.no_grad()
    def pseudo_attention(self, sentences: list[str]) -> list[dict]:
        """Which token states each pseudo token reads (step 1's weights, mean over heads), per sentence."""
        with evaluating(self):
            batch = self.encoder.tokenize(sentences)
            y, mask = self.states(self.encoder.model, batch)
            pseudo = self.head.pseudo.weight.unsqueeze(0).expand(len(y), -1, -1)
            _, weights = self.head.attention(pseudo, y, mask, return_weights=True)
        rows = []
        for ids, m, w in zip(batch["input_ids"], mask, weights.mean(1)):
            n = int(m.sum())
            tokens = self.encoder.tokenizer.convert_ids_to_tokens(ids[:n].tolist()) if self.cfg["y_source"] == "tokens" \
                else ["(pooled)"]
            rows.append({"tokens": tokens, "weights": [[round(x, 4) for x in row] for row in w[:, :n].tolist()]})
        return rows


METHOD = PTBERT
