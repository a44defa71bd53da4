"""SARCSE (Liu et al. 2024): SimCSE's dropout views, with the sentence embedding Z taken from a TextCNN
autoencoder over the PLM's token states, trained with InfoNCE on Z plus a frequency-weighted token
reconstruction loss. No official code exists: every shape below comes from the paper (Sec. 2, Eq. 1-12),
and where the paper is silent the choice is marked SILENT and listed in the chapter.

  X      token states of the PLM's last layer without the special tokens ([CLS]/[SEP], <s>/</s>)  (Eq. 1-2)
  H_ks   TextCNN: Conv over (ks x d) windows, co_t channels, ks = 3, 4, 5, ReLU and max-over-time
         pooling as in Kim (2014) (SILENT: activation and pooling), H_ks in R^co_t                 (Eq. 3)
  Z      CNN with kernel (3 x 2) and co_c channels over the 3 x co_t map [H3; H4; H5]:
         Z in R^{co_c x (co_t - 1)}, flattened, is the sentence embedding (training and test)     (Eq. 4)
  H'_ks  transposed CNN (3 x 2) back to a 3 x co_t map, row ks is H'_ks (SILENT: one transposed
         convolution, the exact inverse of the CNN, rather than three)                            (Eq. 5)
  X'_ks  transposed TextCNN back to token states; max-over-time pooling is undone by max-unpooling
         (each channel's value goes back to the window it came from; SILENT)                      (Eq. 6)
  X'     average of X'_3, X'_4, X'_5                                                               (Eq. 7)
  L_R    1/N sum_i f(w_i) MSE(x_i, x'_i), f(w) = max(theta, 1 - lambda freq(w)), freq = the token's
         share of all tokens of the training sentences (SILENT: "normalised" read as count / total)  (Eq. 8-10)
  L      alpha L_I + beta L_R + gamma L_R+, L_I = SimCSE's InfoNCE on (Z, Z+)                     (Eq. 11-12)

Sentences shorter than the largest kernel (SILENT): token states are zero-padded to at least 5
positions (Kim's zero padding), so a 1-token sentence still has one window per kernel; max pooling only
looks at windows that start at or before max(0, N - ks), so padding never adds windows of its own. The
reconstruction target keeps gradients (SILENT: the paper does not stop them). Ablations: `weighting=plain`
(w/o SAL: f = 1), `decoder=False` (w/o SAL & decoder: TextCNN + CNN and InfoNCE only).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..encoder import Encoder
from ..errors import SreError
from .common import Method, info_nce, require_choice, require_positive

KERNELS = (3, 4, 5)


@dataclass
class Params:
    temperature: float = 0.05
    co_t: int = 500                  # TextCNN output channels
    co_c: int = 3                    # CNN output channels
    theta: float = 0.1               # minimum token weight
    lam: float = 50.0                # lambda: weight decrease per unit of frequency
    alpha: float = 1.0               # InfoNCE
    beta: float = 2.5e-4             # L_R (first view)
    gamma: float = 2.5e-4            # L_R+ (dropout view)
    weighting: str = "adaptive"      # adaptive (Eq. 8) | plain (w/o SAL: every token weight 1)
    decoder: bool = True             # False: w/o decoder (no reconstruction loss)
    token_mse: str = "mean"          # MSE(x_i, x'_i) over the d dimensions: mean (the literal MSE) | sum
    embedding: str = "z"             # test-time embedding: z (the paper) | plm (the PLM with eval_pooler)


class TextCNNAutoEncoder(nn.Module):
    def __init__(self, d: int, co_t: int, co_c: int, decoder: bool = True, kernels=KERNELS):
        super().__init__()
        self.kernels, self.co_t, self.co_c = kernels, co_t, co_c
        self.text_cnns = nn.ModuleList(nn.Conv1d(d, co_t, ks) for ks in kernels)
        self.cnn = nn.Conv2d(1, co_c, (len(kernels), 2))
        self.has_decoder = decoder
        if decoder:
            self.cnn_t = nn.ConvTranspose2d(co_c, 1, (len(kernels), 2))
            self.text_cnns_t = nn.ModuleList(nn.ConvTranspose1d(co_t, d, ks) for ks in kernels)

    @property
    def embedding_size(self) -> int:
        return self.co_c * (self.co_t - 1)

    def encode(self, x: torch.Tensor, n_tokens: torch.Tensor):
        """x: (B, L, d) token states, zeros past each sentence's n_tokens, L >= max kernel.
        Returns Z (B, co_c * (co_t - 1)) and the argmax windows (for the decoder)."""
        pooled, where = [], []
        for ks, conv in zip(self.kernels, self.text_cnns):
            maps = F.relu(conv(x.transpose(1, 2)))                      # (B, co_t, L - ks + 1)
            last_start = (n_tokens - ks).clamp(min=0)                    # windows past it see only padding
            valid = torch.arange(maps.shape[2], device=x.device)[None, :] <= last_start[:, None]
            h, idx = maps.masked_fill(~valid[:, None, :], float("-inf")).max(dim=2)
            pooled.append(h)
            where.append(idx)
        z = self.cnn(torch.stack(pooled, 1).unsqueeze(1))                # (B, co_c, 1, co_t - 1)
        return z.flatten(1), where

    def decode(self, z: torch.Tensor, where: list, length: int) -> torch.Tensor:
        """X' (B, length, d): the average of the three transposed-TextCNN reconstructions."""
        rows = self.cnn_t(z.view(len(z), self.co_c, 1, self.co_t - 1)).squeeze(1)   # (B, 3, co_t)
        outs = []
        for k, (ks, deconv) in enumerate(zip(self.kernels, self.text_cnns_t)):
            unpooled = rows.new_zeros(len(z), self.co_t, length - ks + 1)
            unpooled.scatter_(2, where[k].unsqueeze(2), rows[:, k].unsqueeze(2))   # max-unpooling
            outs.append(deconv(unpooled))                                # (B, d, length)
        return torch.stack(outs).mean(0).transpose(1, 2)


def content_tokens(hidden: torch.Tensor, attention_mask: torch.Tensor, input_ids: torch.Tensor, min_len: int):
    """X without the first and last special token: (B, L, d) zero-padded to >= min_len, token ids
    (pad 0), and the number of tokens per sentence."""
    n_tokens = attention_mask.sum(1) - 2
    x, ids = hidden[:, 1:], input_ids[:, 1:]
    keep = torch.arange(x.shape[1], device=x.device)[None, :] < n_tokens[:, None]
    x, ids = x * keep.unsqueeze(2).to(x.dtype), ids * keep
    if x.shape[1] < min_len:
        x, ids = F.pad(x, (0, 0, 0, min_len - x.shape[1])), F.pad(ids, (0, min_len - ids.shape[1]))
    return x, ids, n_tokens


def token_weights(frequencies: torch.Tensor, theta: float, lam: float) -> torch.Tensor:
    """Eq. 8: f(w) = max(theta, 1 - lambda * freq(w)), for a tensor of frequencies."""
    return torch.clamp(1 - lam * frequencies, min=theta)


def reconstruction_loss(x, x_rec, weights, n_tokens, token_mse: str = "mean") -> torch.Tensor:
    """Eq. 9 averaged over the batch: per sentence 1/N sum_i f(w_i) MSE(x_i, x'_i) over its N tokens."""
    err = (x - x_rec).pow(2)
    per_token = err.mean(2) if token_mse == "mean" else err.sum(2)
    mask = torch.arange(x.shape[1], device=x.device)[None, :] < n_tokens[:, None]
    per_sentence = (per_token * weights * mask).sum(1) / n_tokens.clamp(min=1)
    return per_sentence.mean()


class _SarcseEncoder(Encoder):
    """The repo's Encoder with one more pooler, "sarcse": Z of the autoencoder (set as `.autoencoder`).
    Encoding with it reports Z's width as the output width, so `encode` (deduplicated, length-sorted) serves."""

    _width = None

    @property
    def hidden_size(self) -> int:
        return self._width or self.model.config.hidden_size

    def encode(self, sentences, pooler=None, **kwargs):
        self._width = self.autoencoder.embedding_size if pooler == "sarcse" else None
        try:
            return super().encode(sentences, pooler, **kwargs)
        finally:
            self._width = None

    def embed(self, batch, pooler=None):
        if pooler != "sarcse":
            return super().embed(batch, pooler)
        hidden = self.forward_hidden(batch)[-1]
        x, _, n = content_tokens(hidden, batch["attention_mask"], batch["input_ids"], max(KERNELS))
        return self.autoencoder.encode(x, n)[0].float()


class SARCSE(Method):
    Params = Params
    SCALE_PRESETS = {
        "smoke": dict(co_t=32),
        "cpu": {},  # lr and head_lr: settings.CPU_RECIPES
        "paper": dict(model_name="roberta-base", lr=1e-5, batch_size=64),
    }

    def __init__(self, cfg, encoder):
        super().__init__(cfg, encoder)
        self.autoencoder = TextCNNAutoEncoder(encoder.hidden_size, cfg["co_t"], cfg["co_c"], cfg["decoder"])
        encoder.autoencoder = self.autoencoder
        self.register_buffer("frequencies", torch.zeros(len(encoder.tokenizer)), persistent=False)

    @classmethod
    def build(cls, cfg, device, data_dir=None, dependencies=None):
        method = cls(cfg, _SarcseEncoder(cfg["model_name"], pooler=cfg["eval_pooler"], device=device))
        method.data_dir = data_dir
        return method

    @classmethod
    def validate(cls, cfg):
        require_positive(cfg, "temperature", "co_t", "co_c")
        if cfg["co_t"] < 2:
            raise SreError(f"co_t must be at least 2 (the (3 x 2) CNN needs two columns), got {cfg['co_t']}")
        for key, options in (("weighting", ("adaptive", "plain")), ("token_mse", ("mean", "sum")),
                             ("embedding", ("z", "plm"))):
            require_choice(cfg, key, options)

    def corpus(self, data_dir=None):
        sentences = super().corpus(data_dir)
        self.frequencies.copy_(token_frequencies(self.encoder.tokenizer, sentences))
        return sentences

    def collate(self, sentences):
        return self.encoder.tokenize(list(sentences) * 2, self.cfg["max_len"])

    def loss(self, batch):
        hidden = self.encoder.forward_hidden(batch)[-1]
        x, ids, n = content_tokens(hidden, batch["attention_mask"], batch["input_ids"], max(KERNELS))
        z, where = self.autoencoder.encode(x, n)
        z1, z2 = z.float().chunk(2)
        terms = {"contrastive": info_nce(z1, z2, self.cfg["temperature"])}
        loss = self.cfg["alpha"] * terms["contrastive"]
        if self.autoencoder.has_decoder:
            x_rec = self.autoencoder.decode(z, where, x.shape[1])
            weights = self.weights(ids, x.dtype)
            half = len(z1)
            terms["reconstruction"] = reconstruction_loss(x[:half].float(), x_rec[:half].float(), weights[:half],
                                                          n[:half], self.cfg["token_mse"])
            terms["reconstruction_plus"] = reconstruction_loss(x[half:].float(), x_rec[half:].float(),
                                                               weights[half:], n[half:], self.cfg["token_mse"])
            loss = loss + self.cfg["beta"] * terms["reconstruction"] + self.cfg["gamma"] * terms["reconstruction_plus"]
        return {"loss": loss, **terms}

    def weights(self, ids, dtype=torch.float) -> torch.Tensor:
        """f(w) of each token (Eq. 8), or 1 (in `dtype`) for every token without the self-adaptive loss."""
        if self.cfg["weighting"] == "adaptive":
            return token_weights(self.frequencies[ids], self.cfg["theta"], self.cfg["lam"])  # the frequencies' dtype
        return torch.ones_like(ids, dtype=dtype)

    @torch.no_grad()
    def reconstruction_against_constant(self, sentences: list[str], batch_size: int = 64) -> dict:
        """L_R (Eq. 9, the run's token weights and MSE) of held-out `sentences` in eval mode, beside its trivial
        baseline: the same loss of the best constant guess, one vector (the weighted mean of the content token
        states) for every token. A decoder that reconstructs from Z beats it (protocol.engaged, reconstruction)."""
        if not self.autoencoder.has_decoder:
            raise SreError("a reconstruction check needs the decoder: the run trained with decoder=False")
        was_training = self.training
        self.eval()
        batches = []
        for start in range(0, len(sentences), batch_size):
            batch = self.encoder.tokenize(sentences[start:start + batch_size], self.cfg["max_len"])
            x, ids, n = content_tokens(self.encoder.forward_hidden(batch)[-1], batch["attention_mask"],
                                       batch["input_ids"], max(KERNELS))
            z, where = self.autoencoder.encode(x, n)
            mask = torch.arange(x.shape[1], device=x.device)[None, :] < n[:, None]
            weights = self.weights(ids)
            # each token's share of L_R: f(w_i) / N of its sentence (the constant minimising L_R weighs tokens so)
            share = weights * mask / n.clamp(min=1)[:, None]
            batches.append((x.float(), self.autoencoder.decode(z, where, x.shape[1]).float(), weights, n, share))
        constant = sum((sh[..., None] * x).sum((0, 1)) for x, _, _, _, sh in batches) / sum(sh.sum() for *_, sh in batches)
        decoder = baseline = 0.0
        for x, x_rec, weights, n, _ in batches:
            size = len(x) / len(sentences)
            decoder += size * float(reconstruction_loss(x, x_rec, weights, n, self.cfg["token_mse"]))
            baseline += size * float(reconstruction_loss(x, constant.expand_as(x), weights, n, self.cfg["token_mse"]))
        self.train(was_training)
        return {"decoder": decoder, "constant": baseline, "sentences": len(sentences)}

    def term_weights(self):
        return {"contrastive": self.cfg["alpha"], "reconstruction": self.cfg["beta"],
                "reconstruction_plus": self.cfg["gamma"]}

    def added_modules(self):
        """The encoder side (TextCNN + CNN: Z, the sentence embedding) and the decoder, apart."""
        ae = self.autoencoder
        out = {"text_cnns": ae.text_cnns, "cnn": ae.cnn}
        if ae.has_decoder:
            out.update(cnn_t=ae.cnn_t, text_cnns_t=ae.text_cnns_t)
        return out

    def encode(self, sentences):
        pooler = "sarcse" if self.cfg["embedding"] == "z" else self.cfg["eval_pooler"]
        return self.encoder.encode(sentences, pooler=pooler, precision=self.cfg["precision"])

    def token_importance(self, sentences):
        """SimCSE's view ([CLS] attention) and SARCSE's (each token's reconstruction error; lower = better
        preserved), as the paper's Figure 1 contrasts them."""
        out = super().token_importance(sentences)
        if self.autoencoder.has_decoder:
            out["reconstruction_mse"] = self.token_losses(sentences)
        return out

    @torch.no_grad()
    def token_losses(self, sentences: list[str]) -> list[list[tuple[str, float]]]:
        """Per sentence, (token, reconstruction MSE) for its content tokens (the paper's Figure 1)."""
        if not self.autoencoder.has_decoder:
            raise SreError("token reconstruction losses need the decoder: train with decoder=True")
        was_training = self.training
        self.eval()
        batch = self.encoder.tokenize(sentences)
        hidden = self.encoder.forward_hidden(batch)[-1]
        x, ids, n = content_tokens(hidden, batch["attention_mask"], batch["input_ids"], max(KERNELS))
        z, where = self.autoencoder.encode(x, n)
        err = (x - self.autoencoder.decode(z, where, x.shape[1])).pow(2).mean(2)
        self.train(was_training)
        tokens = [self.encoder.tokenizer.convert_ids_to_tokens(row[:k].tolist()) for row, k in zip(ids, n)]
        return [list(zip(t, e[:len(t)].tolist())) for t, e in zip(tokens, err)]


_FREQUENCIES: dict = {}  # the last corpus's, by tokenizer and sentences: a chapter's runs all count the same corpus


def token_frequencies(tokenizer, sentences: list[str]) -> torch.Tensor:
    """freq(w): each vocabulary entry's share of all (non-special) tokens of the training sentences."""
    key = (type(tokenizer).__name__, tokenizer.name_or_path, len(tokenizer), tuple(sentences))
    if key not in _FREQUENCIES:
        ids = tokenizer(list(sentences), add_special_tokens=False, verbose=False)["input_ids"]
        counts = Counter(i for row in ids for i in row)
        freq = torch.zeros(len(tokenizer))
        if counts:
            freq[torch.tensor(list(counts.keys()))] = torch.tensor(list(counts.values()), dtype=torch.float)
            freq /= freq.sum()
        _FREQUENCIES.clear()
        _FREQUENCIES[key] = freq
    return _FREQUENCIES[key].clone()


METHOD = SARCSE
