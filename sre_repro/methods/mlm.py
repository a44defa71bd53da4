"""Masked-language-model pretraining of the book's own small raw BERT (`sre-bert`), the offline stand-in
for bert-base-uncased. It runs in the same training loop as the sentence-embedding methods.

As in BERT (Devlin et al. 2019) and HF's run_mlm.py: bert-base-uncased's WordPiece vocabulary (the one
all-MiniLM-L6-v2 ships), the corpus of `data/pretrain_corpus.py` packed into blocks of `max_len` tokens
([CLS] sentence [SEP] sentence [SEP] ...; sentences cross block borders, as run_mlm's `group_texts`),
15% of tokens masked with 80/10/10 [MASK]/random/kept by HF's DataCollatorForLanguageModeling, special
tokens never masked. No next-sentence prediction (RoBERTa showed it is not needed). The output layer is
applied only at masked positions: same loss, 1/0.15 less softmax work. Its blocks are full, so `packed`
(sre_repro/packing.py) has no padding to remove here: the forward is the plain one.

Dev metrics: loss and accuracy on held-out blocks under a fixed masking, and, to watch the sentence
embeddings emerge, STS-B dev with average pooling. `finish` writes the kept checkpoint (safetensors,
config, tokenizer) to `output_dir`; `write_model_card` adds the card and training log.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ..encoder import Encoder, resolve_model_path
from ..errors import SreError
from ..settings import PACKAGE, REPO_ROOT, work_dir
from .common import Method, require_positive


@dataclass
class Params:
    init: str = "scratch"            # scratch (random init) | a BERT checkpoint to continue pretraining
    tokenizer: str = "minilm"        # where the WordPiece vocabulary comes from
    num_layers: int = 4
    hidden: int = 256
    heads: int = 4
    intermediate: int = 1024
    mlm_probability: float = 0.15
    pretrain_sources: str = "nltk,wiki1m,wordnet"  # see data/pretrain_corpus.SOURCES
    heldout_blocks: int = 256        # held-out blocks scored at each dev evaluation (0: all)
    output_dir: str = "models/sre-bert"


class _SharedEncoder(Encoder):
    """The repo's Encoder over the BERT body being pretrained (shares its weights), for STS-B dev."""

    def __init__(self, model, tokenizer, device):
        nn.Module.__init__(self)
        self.name, self.pooler, self.mlp, self.device_type = "sre-bert (pretraining)", "avg", None, device
        self.model, self.tokenizer = model, tokenizer


def _corpus_cache_path(sources: str, tokenizer, block: int) -> Path:
    """Where the packed corpus is cached: keyed by the sources, the vocabulary, the block length and the
    code that builds it (the data files themselves are checksummed by data/paths.py)."""
    h = hashlib.sha256(json.dumps([sources, block, sorted(tokenizer.get_vocab().items())]).encode())
    for rel in ("data/pretrain_corpus.py", "data/corpora.py", "data/sts.py"):
        h.update((PACKAGE / rel).read_bytes())
    return work_dir() / "cache" / f"pretrain-corpus-{h.hexdigest()[:16]}.pt"


@lru_cache(maxsize=4)
def _packed_corpus(data_dir, sources: str, tokenizer_location: str, block: int):
    """(train blocks, held-out blocks, corpus counts): token-id tensors of `block` tokens. Cached on disk
    (building takes minutes on 2 cores, and a GPU machine can then pretrain without the NLTK data)."""
    from transformers import AutoTokenizer

    from ..data.pretrain_corpus import build

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_location)
    cache = _corpus_cache_path(sources, tokenizer, block)
    if cache.is_file():
        saved = torch.load(cache)
        return saved["train"].long(), saved["heldout"].long(), saved["counts"]
    corpus = build(data_dir, sources=tuple(s.strip() for s in sources.split(",") if s.strip()))
    counts = dict(corpus["counts"])

    def pack(sentences, split):
        stream = []
        for ids in tokenizer(sentences, add_special_tokens=False, verbose=False)["input_ids"]:
            stream.extend(ids + [tokenizer.sep_token_id])
        counts[f"{split}_tokens"] = len(stream)
        width = block - 1  # each block starts with [CLS]
        n = len(stream) // width
        body = torch.tensor(stream[: n * width], dtype=torch.long).view(n, width)
        return torch.cat([torch.full((n, 1), tokenizer.cls_token_id), body], dim=1)

    train, heldout = pack(corpus["train"], "train"), pack(corpus["heldout"], "heldout")
    counts.update(train_blocks=len(train), heldout_blocks=len(heldout))
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp")  # ids < 32768: int16 keeps the file small
    torch.save({"train": train.to(torch.int16), "heldout": heldout.to(torch.int16), "counts": counts}, tmp)
    tmp.replace(cache)
    return train, heldout, counts


class MaskedLM(Method):
    Params = Params
    contrastive = False
    selection_metric = "mlm_accuracy"
    PROBE_OVERRIDES = {"heldout_blocks": 4, "output_dir": "work/probes/sre-bert"}
    SCALE_PRESETS = {
        "smoke": dict(num_layers=2, hidden=64, heads=2, intermediate=256, pretrain_sources="wiki1m",
                      max_len=32, batch_size=8, max_steps=20, eval_steps=10, heldout_blocks=16, lr=5e-4),
        # sized by measurement (make bench / the chapter): 4x256 at 64x128 tokens takes ~2.2 s a step on
        # the 2-core build machine, so 2,400 steps (~3.6 passes over the 5.5M-token corpus) fit ~1.5 h.
        "cpu": dict(max_len=128, batch_size=64, max_steps=2400, eval_steps=200, lr=5e-4, warmup_ratio=0.06,
                    weight_decay=0.01, adam_eps=1e-6, precision="fp32"),
        "paper": dict(num_layers=6, hidden=384, heads=6, intermediate=1536, max_len=128, batch_size=256,
                      max_steps=20000, eval_steps=1000, lr=5e-4, warmup_ratio=0.06, weight_decay=0.01,
                      adam_eps=1e-6, precision="bf16"),
    }

    def __init__(self, cfg, model, tokenizer, device):
        super().__init__(cfg, _SharedEncoder(model.bert, tokenizer, device))
        self.model, self.tokenizer = model, tokenizer
        from transformers import DataCollatorForLanguageModeling

        # global torch RNG: its state is in the trainer's checkpoint, so a resumed run masks identically
        self.collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=cfg["mlm_probability"])

    @classmethod
    def validate(cls, cfg):
        require_positive(cfg, "num_layers", "hidden", "heads", "intermediate")
        if cfg["hidden"] % cfg["heads"]:
            raise SreError(f"hidden ({cfg['hidden']}) must be divisible by heads ({cfg['heads']})")
        if not 0 < cfg["mlm_probability"] < 1:
            raise SreError(f"mlm_probability must be in (0, 1), got {cfg['mlm_probability']}")
        if cfg["max_len"] > 512:
            raise SreError(f"max_len {cfg['max_len']} exceeds BERT's 512 positions")

    @classmethod
    def build(cls, cfg, device, data_dir=None, dependencies=None):
        from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

        tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(cfg["tokenizer"]))
        if cfg["init"] == "scratch":
            config = BertConfig(vocab_size=len(tokenizer), hidden_size=cfg["hidden"],
                                num_hidden_layers=cfg["num_layers"], num_attention_heads=cfg["heads"],
                                intermediate_size=cfg["intermediate"], max_position_embeddings=512)
            model = BertForMaskedLM(config)  # BERT's init, drawn from the seeded global RNG
        else:
            model = BertForMaskedLM.from_pretrained(resolve_model_path(cfg["init"]))
        method = cls(cfg, model, tokenizer, device)
        method.data_dir = data_dir
        return method

    def added_modules(self):
        return {}  # `model` is the PLM being pretrained (its MLM head included), not a module added to one

    def _corpus(self):
        return _packed_corpus(self.data_dir, self.cfg["pretrain_sources"],
                              resolve_model_path(self.cfg["tokenizer"]), self.cfg["max_len"])

    def corpus(self, data_dir=None):
        train, _, _ = self._corpus()
        return list(train)

    def corpus_counts(self) -> dict:
        return self._corpus()[2]

    def collate(self, blocks):
        batch = self.collator([{"input_ids": b} for b in blocks])
        return {k: v.to(self.encoder.device_type) for k, v in batch.items()}

    def loss(self, batch):
        hidden = self.model.bert(input_ids=batch["input_ids"]).last_hidden_state
        masked = batch["labels"] != -100
        logits = self.model.cls(hidden[masked])
        targets = batch["labels"][masked]
        return {"loss": F.cross_entropy(logits, targets),
                "mlm_train_accuracy": (logits.argmax(-1) == targets).float().mean()}

    @torch.no_grad()
    def heldout_metrics(self, limit: int = 0) -> dict:
        """Loss and accuracy on held-out blocks, masked the same way at every call (fixed seed)."""
        _, heldout, _ = self._corpus()
        heldout = heldout[:limit] if limit else heldout
        was_training = self.training
        self.eval()
        total_loss, correct, count = 0.0, 0, 0
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            for start in range(0, len(heldout), 64):
                batch = self.collate(list(heldout[start:start + 64]))
                hidden = self.model.bert(input_ids=batch["input_ids"]).last_hidden_state
                masked = batch["labels"] != -100
                logits = self.model.cls(hidden[masked]).float()
                targets = batch["labels"][masked]
                total_loss += float(F.cross_entropy(logits, targets, reduction="sum"))
                correct += int((logits.argmax(-1) == targets).sum())
                count += len(targets)
        self.train(was_training)
        return {"mlm_loss": total_loss / count, "mlm_accuracy": 100 * correct / count, "mlm_tokens": count}

    def encode(self, sentences):
        return self.encoder.encode(sentences, pooler="avg", precision=self.cfg["precision"])

    def dev_metrics(self):
        from ..data.sts import load_split
        from ..evaluate.sts import evaluate_stsb_dev

        if not hasattr(self, "_dev_pairs"):
            self._dev_pairs = load_split("STSBenchmark", "dev", self.data_dir)
        score, _ = evaluate_stsb_dev(self.encode, pairs=self._dev_pairs)
        return {**self.heldout_metrics(self.cfg["heldout_blocks"]), "stsb_dev_avg": score}

    def finish(self):
        out = output_path(self.cfg)
        out.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(out, safe_serialization=True)
        self.tokenizer.save_pretrained(out)
        return {"heldout": self.heldout_metrics(), "corpus": self.corpus_counts(),
                "n_parameters": sum(p.numel() for p in self.model.parameters())}


def output_path(cfg: dict) -> Path:
    path = Path(cfg["output_dir"]).expanduser()
    return path if path.is_absolute() else REPO_ROOT / path


def write_model_card(record: dict, command: str) -> Path:
    """README.md (the model card) and training_log.json beside the exported weights."""
    cfg, metrics = record["config"], record["metrics"]
    out = output_path(cfg)
    counts = metrics["corpus"]
    hw = record["hardware"]
    where = hw["cuda"] or f"{hw['processor'] or hw['machine']} CPU, {hw['torch_threads']} threads"
    (out / "training_log.json").write_text(json.dumps(
        {"config": cfg, "curve": record["dev_curve"], "final": metrics, "train_seconds": record["train_seconds"],
         "device": record["device"], "hardware": hw, "versions": record["versions"],
         "git_commit": record["git_commit"]}, indent=1, sort_keys=True))
    raw = ", ".join(f"{k.removeprefix('raw_')} {v:,}" for k, v in counts.items() if k.startswith("raw_"))
    card = f"""# sre-bert: the book's own small raw BERT

A {cfg['num_layers']}-layer, {cfg['hidden']}-wide BERT ({metrics['n_parameters'] / 1e6:.1f}M parameters) pretrained
from scratch with masked language modelling by `sre_repro` (method `mlm`), as the offline stand-in for
bert-base-uncased. It is far smaller and weaker than BERT-base: absolute STS numbers are not comparable to
the papers'; relative claims are what the book's `cpu` edition tests with it.

- Vocabulary: bert-base-uncased's WordPiece (30,522 entries, taken from all-MiniLM-L6-v2's `vocab.txt`).
- Corpus (`sre_repro/data/pretrain_corpus.py`, sources `{cfg['pretrain_sources']}`): raw sentences {raw};
  {counts['removed_as_sts_dev_test']:,} removed because they occur in an STS/SICK dev or test file; after
  de-duplication {counts['train']:,} training sentences ({counts['train_tokens']:,} tokens, {counts['train_blocks']:,}
  blocks of {cfg['max_len']}) and {counts['heldout']:,} held-out sentences ({counts['heldout_tokens']:,} tokens).
- Objective: MLM, {cfg['mlm_probability']:.0%} of tokens, 80/10/10 [MASK]/random/kept; no NSP.
- Optimisation: AdamW lr {cfg['lr']}, warm-up {cfg['warmup_ratio']:.0%} then linear decay, weight decay
  {cfg['weight_decay']}, clip {cfg['grad_clip']}, batch {cfg['batch_size']} x {cfg['max_len']} tokens,
  {record['steps']:,} steps, {cfg['precision']}, seed {cfg['seed']}.
- Hardware and time: {where}; {record['train_seconds'] / 3600:.2f} h of training.
- Held-out MLM accuracy (kept checkpoint, step {metrics['best_step']}): **{metrics['heldout']['mlm_accuracy']:.2f}%**
  (loss {metrics['heldout']['mlm_loss']:.3f}, {metrics['heldout']['mlm_tokens']:,} masked tokens).
- Software: torch {record['versions']['torch']}, transformers {record['versions']['transformers']}, commit
  {record['git_commit']}.

Regenerate (about the time above on the same hardware):

    {command}

`training_log.json` holds the dev curve (held-out MLM loss/accuracy and STS-B dev with average pooling every
{cfg['eval_steps']} steps). Load it anywhere a model name is accepted as `sre-bert`.
"""
    (out / "README.md").write_text(card)
    return out


METHOD = MaskedLM
