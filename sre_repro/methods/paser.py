"""PaSeR (Wu & Zhao, "Sentence Representation Learning with Generative Objective rather than Contrastive
Objective"): encode a sentence s and a copy s~ whose most important phrases are masked; a transformer decoder
reconstructs the masked phrases from the two sentence embeddings alone; plus MLM on s. No contrastive term.

  phrases   (phrases.py) RAKE top-k, k = `mask_top_k` (Sec. 3.1.1, Table 5), or one random NP and/or VP chunk
            (`phrase_extractor=syntactic`; the paper's parser is unnamed and not offline: an NLTK tagger and
            chunker stand in). Every occurrence of a chosen phrase is masked.
  masking   one [MASK] per wordpiece (length kept; `mask_unit` word | phrase: one per word | per phrase).
  EDA       (eda.py; Sec. 3.1.3, Table 4) on both views, drawn independently: synonym replacement (alpha_sr
            = 0.5, the official README), random swap and deletion (0.1, EDA's defaults; the paper's "token
            reordering" is RS). Masked words stay untouched; the decoder's target is the phrase as in the raw s.
  encoder   both views in one forward (2*bs rows); `pooler` cls = the raw last-layer [CLS] (the paper and
            code), no MLP.
  signal    (generative.py) `signal=code` (official models.py): 4 memory vectors [n (z1*Wz2), m (z1 - Wz2),
            z1, Wz2], W a Linear(d, d) on the masked view, signed difference. `signal=paper` (Eq. 2/6): [z1,
            z2, m |z1 - z2|, n |z1*z2|], no W. The paper does not say how the decoder reads the
            concatenation; both readings give the decoder's cross-attention the four vectors as its memory.
  decoder   HF BartDecoder, `decoder_layers` (6), d_model = the PLM's hidden size, FFN = d (the code's 768 for
            BERT-base, not 4d), 16 heads, dropout 0.1, random init; its input embeddings are the encoder's
            whole embedding module (shared, not copied: decoder gradients reach it) plus BART's own positions;
            its output head is the PLM's pretrained MLM head as an untied copy, shared with the MLM term.
  target    "[CLS] p1 [SEP] p2 [SEP] ..." (phrases in rank order, joined by [SEP]: unspecified, our choice);
            decoder input = target shifted right with [CLS] as the start token, labels drop [CLS]. No decoder
            loss for a sentence without a phrase, or when a view has >= max_len tokens (the code's rule).
  loss      L = L_generative + mlm_weight * L_MLM (Eq. 4), MLM on view 1 only (a separate forward, 15% with
            80/10/10); `contrastive_weight` > 0 adds SimCSE's InfoNCE between the two views (not in PaSeR).
Supervised PaSeR (Sec. 3.3, Eq. 5; `supervised=true`, `train_data=snli`): SimCSE-sup's InfoNCE + alpha *
L_generative on the premise, no MLM, from the unsupervised run with the same knobs (`init_from_unsup`, a
dependency; `reuse_decoder`: its decoder too). The official code releases neither RAKE, masking nor EDA (notes/official_code.md 1.1).
Packed forwards (`packed`): the encoder's; the decoder's short phrase targets run padded.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import torch
from torch import nn

from ..data import corpora
from ..data.sts import load_split
from ..eda import augment, mask_units, text_of
from ..encoder import evaluating
from ..errors import SreError
from ..generative import build_decoder, decoder_batch, decoding_signal, greedy_decode, token_loss
from ..masked_lm import mlm_loss, pretrained_mlm_head
from ..phrases import PhraseChooser, occurrences, words
from ..settings import recipe_of, recipe_presets
from .common import Method, info_nce, require_choice, require_positive, training_sentences

EXTRACTORS = ["rake", "syntactic"]
SYNTACTIC_TYPES = ["NP", "VP", "NP+VP"]
MASK_UNITS = ["wordpiece", "word", "phrase"]
AUGMENTS = ["none", "sr", "rs", "rd", "sr+rd", "sr+rs"]
SIGNALS = ["code", "paper"]
POOLERS = ["cls", "avg"]
EVAL_POOLERS = ["cls", "avg", "avg_top2", "avg_first_last", "avg_first_last_emb"]  # the poolers without an MLP
# Table 7's sentences with the phrase the paper masked in each (Sec. 5.2)
TABLE7 = [("Work with a tool.", "Work"), ("At least 89 dead in china earthquakes", "least 89 dead"),
          ("Do I need a transit visa for a stop in London?", "London"), ("There are two options for you", "two options")]


@dataclass
class Params:
    phrase_extractor: str = "rake"   # rake | syntactic (NLTK tagger + chunker, a stand-in for the paper's parser)
    mask_top_k: int = 5              # RAKE: how many top phrases to mask (Table 5: 1-5)
    rake_scope: str = "sentence"     # sentence: word scores within the sentence | corpus: over the training corpus
    syntactic_types: str = "NP+VP"   # syntactic: NP | VP | NP+VP (one random chunk of each type)
    syntax_train_sentences: int = 0  # sentences of each corpus the tagger/chunker train on (0: all)
    mask_unit: str = "wordpiece"     # one [MASK] per wordpiece | word | phrase
    augment: str = "sr"              # none | sr | rs | rd | sr+rd | sr+rs (EDA, Table 4)
    alpha_sr: float = 0.5            # share of words replaced by synonyms
    alpha_rs: float = 0.1            # share of words swapped
    p_rd: float = 0.1                # probability of deleting each word
    signal: str = "code"             # code: [n z1*Wz2, m (z1-Wz2), z1, Wz2] | paper: [z1, z2, m|z1-z2|, n|z1*z2|]
    m: float = 10.0                  # weight of the difference feature (the code's k)
    n: float = 10.0                  # weight of the product feature (the code's t)
    decoder_layers: int = 6
    decoder_heads: int = 16
    decoder_ffn: int = 0             # 0: the hidden size (the code's FFN = d)
    decoder_dropout: float = 0.1
    mlm_weight: float = 1.0          # unsupervised: weight of MLM on view 1
    mlm_probability: float = 0.15
    contrastive_weight: float = 0.0  # > 0 adds InfoNCE between the two views (not PaSeR: a what-if)
    temperature: float = 0.05        # of the InfoNCE terms (the contrastive what-if, supervised PaSeR)
    pooler: str = "cls"              # training pooler: cls (raw [CLS], no MLP) | avg
    supervised: bool = False         # Sec. 3.3: NLI triplets (train_data=snli), SimCSE-sup's InfoNCE + alpha * L_gen
    alpha: float = 1.0               # supervised: weight of the generative loss (never reported; Eq. 5)
    init_from_unsup: bool = True     # supervised: start from the unsupervised PaSeR run's kept checkpoint
    reuse_decoder: bool = False      # supervised: take that run's decoder (and W, head) too
    recon_dev_sentences: int = 256   # STS-B dev sentences whose held-out reconstruction is measured


class PaSeR(Method):
    Params = Params
    contrastive = False
    PROBE_OVERRIDES = {"recon_dev_sentences": 8, "syntax_train_sentences": 300}  # 300: the smoke chunker's
    SCALE_PRESETS = {
        "smoke": dict(train_data="sts_unlabeled", max_len=32, decoder_layers=2, decoder_heads=2, syntax_train_sentences=300,
                      recon_dev_sentences=16),
        # the stand-in's raw [CLS] was never trained (no next-sentence objective): cpu pools by averaging, as its
        # SimCSE does (Table 9 compares poolers); lr and the decoder's head_lr: settings.CPU_RECIPES
        "cpu": dict(train_data="sts_unlabeled", pooler="avg", eval_pooler="avg"),
        "paper": dict(train_data="sts_unlabeled", epochs=5, precision="fp32"),
    }

    def __init__(self, cfg, encoder):
        super().__init__(cfg, encoder)
        hidden = encoder.hidden_size
        self.supervised = cfg["supervised"]
        if hidden % cfg["decoder_heads"]:
            raise SreError(f"decoder_heads {cfg['decoder_heads']} does not divide the PLM's hidden size {hidden}: "
                           "choose a divisor, e.g. decoder_heads=4")
        self.decoder = build_decoder(hidden, cfg, encoder.tokenizer)
        self.projection = nn.Linear(hidden, hidden) if cfg["signal"] == "code" else None
        self.lm_head, self.lm_head_pretrained = pretrained_mlm_head(encoder)
        self.chooser = PhraseChooser(cfg["phrase_extractor"], cfg["mask_top_k"], cfg["syntactic_types"],
                                     cfg["syntax_train_sentences"])

    @classmethod
    def dependencies(cls, cfg):
        return {"unsupervised": unsupervised_run(cfg)} if cfg["supervised"] and cfg["init_from_unsup"] else {}

    @classmethod
    def build(cls, cfg, device, data_dir=None, dependencies=None):
        method = super().build(cfg, device, data_dir)
        if state := (dependencies or {}).get("unsupervised", nn.Module()).state_dict():
            keep = ("encoder.",) + (("decoder.", "projection.", "lm_head.") if cfg["reuse_decoder"] else ())
            method.load_state_dict({k: v for k, v in state.items() if k.startswith(keep)}, strict=False)
        return method

    def added_modules(self):
        """The randomly initialised modules: the decoder and W (the MLM head is the PLM's own, at `lr`)."""
        return {"decoder": self.decoder, **({"projection": self.projection} if self.projection is not None else {})}

    def term_weights(self):
        if self.supervised:
            return {"loss_generative": self.cfg["alpha"], "loss_contrastive": 1.0}
        return {"loss_generative": 1.0, "loss_mlm": self.cfg["mlm_weight"], "loss_contrastive": self.cfg["contrastive_weight"]}

    @classmethod
    def validate(cls, cfg):
        require_choice(cfg, "phrase_extractor", EXTRACTORS)
        require_choice(cfg, "rake_scope", ["sentence", "corpus"])
        require_choice(cfg, "syntactic_types", SYNTACTIC_TYPES)
        require_choice(cfg, "mask_unit", MASK_UNITS)
        require_choice(cfg, "augment", AUGMENTS)
        require_choice(cfg, "signal", SIGNALS)
        require_choice(cfg, "pooler", POOLERS)
        if cfg["mask_top_k"] <= 0:
            raise SreError(f"mask_top_k must be at least 1 (how many RAKE phrases to mask), got {cfg['mask_top_k']}")
        if cfg["decoder_layers"] <= 0:
            raise SreError(f"decoder_layers must be at least 1 (PaSeR needs its decoder), got {cfg['decoder_layers']}")
        require_positive(cfg, "decoder_heads", "temperature")
        for key in ("alpha_sr", "alpha_rs", "p_rd", "mlm_probability"):
            if not 0 <= cfg[key] <= 1:
                raise SreError(f"{key} must lie in [0, 1], got {cfg[key]}")
        for key in ("m", "n", "mlm_weight", "contrastive_weight", "alpha", "decoder_ffn", "syntax_train_sentences",
                    "recon_dev_sentences", "decoder_dropout"):
            if cfg[key] < 0:
                raise SreError(f"{key} must be >= 0, got {cfg[key]}")
        if cfg["supervised"] != (cfg["train_data"] == "snli"):
            raise SreError("supervised PaSeR trains on NLI triplets, unsupervised PaSeR on sentences: set "
                           "supervised=true with train_data=snli, or neither")
        if (cfg["supervised"] or cfg["contrastive_weight"] > 0) and cfg["batch_size"] < 2:
            raise SreError("supervised PaSeR and contrastive_weight > 0 need in-batch negatives: use batch_size >= 2")
        if cfg["eval_pooler"] not in EVAL_POOLERS:
            raise SreError(f"PaSeR tests without an MLP: set eval_pooler=cls or avg (or {', '.join(EVAL_POOLERS[2:])}), "
                           f"not {cfg['eval_pooler']!r}")

    def corpus(self, data_dir=None):
        if self.supervised:
            return corpora.snli_triplets(data_dir)
        sentences = training_sentences(self.cfg, data_dir)
        if self.cfg["phrase_extractor"] == "rake" and self.cfg["rake_scope"] == "corpus":
            self.chooser.fit(sentences, data_dir)
        return sentences

    # -- data -------------------------------------------------------------------------------------------------
    def phrases(self, tokens: list[str], sentence: str, rng: random.Random) -> list[tuple[str, list[tuple[int, int]]]]:
        """The chosen phrases in rank order: (text as in the sentence, the token spans to mask)."""
        return self.chooser(tokens, sentence, rng, self.data_dir)

    def views(self, sentence: str, rng: random.Random, how: str | None = None, phrases=None) -> tuple[str, str, str | None]:
        """(s after EDA, s~ = s with its phrases (or the given `phrases`: (text, spans)) masked, after EDA drawn
        independently, the decoder's target or None). Call inside corpora.nltk_data (EDA reads WordNet)."""
        how = self.cfg["augment"] if how is None else how
        tokens = words(sentence)
        chosen = self.phrases(tokens, sentence, rng) if phrases is None else phrases
        spans = [span for _, found in chosen for span in found]
        raw = augment([[t, False] for t in tokens], how, self.cfg, rng)
        masked = augment(mask_units(tokens, spans, self.cfg["mask_unit"], self.encoder.tokenizer), how, self.cfg, rng)
        target = f" {self.encoder.tokenizer.sep_token} ".join(text for text, _ in chosen) if chosen else None
        return text_of(raw), text_of(masked), target

    def collate(self, examples):
        rng = random.Random(int(torch.randint(2 ** 31, (1,))))  # from the torch RNG the trainer checkpoints
        sentences = [e[0] for e in examples] if self.supervised else list(examples)
        with corpora.nltk_data(self.data_dir):
            view1, view2, targets = (list(x) for x in zip(*[self.views(s, rng) for s in sentences]))
        return self.tensors(view1, view2, targets, [e[1:] for e in examples] if self.supervised else None,
                            anchors=sentences if self.supervised and self.cfg["augment"] != "none" else None)

    def tensors(self, view1, view2, targets, pairs=None, anchors=None) -> dict:
        """Tokenised views (rows: view 1, view 2 [, entailment, contradiction, raw premise]) and decoder
        inputs/labels; labels are -100 for a sentence without target or with a view of >= max_len tokens."""
        rows = view1 + view2
        if pairs is not None:
            rows += [p for p, _ in pairs] + [n for _, n in pairs] + (anchors or [])
        batch = decoder_batch(self.encoder.tokenizer, rows, targets, self.cfg["max_len"])
        return {k: v.to(self.encoder.device_type) for k, v in batch.items()}

    # -- model ------------------------------------------------------------------------------------------------
    def memory(self, z1, z2):
        return decoding_signal(z1, z2, self.cfg["signal"], self.cfg["m"], self.cfg["n"], self.projection)

    def decode(self, memory: torch.Tensor, decoder_input_ids: torch.Tensor) -> torch.Tensor:
        """Next-token logits (bs, T, vocab): the shared embedding module feeds the decoder, the MLM head reads it."""
        embeds = self.encoder.model.embeddings(input_ids=decoder_input_ids)
        out = self.decoder(inputs_embeds=embeds, encoder_hidden_states=memory, use_cache=False).last_hidden_state
        return self.lm_head(out)

    def generative_loss(self, memory, batch) -> tuple[torch.Tensor, torch.Tensor]:
        """(mean cross-entropy over the target tokens of the batch (0 if none), number of correct tokens)."""
        return token_loss(self.decode(memory, batch["decoder_input_ids"]).float(), batch["labels"])

    def loss(self, batch):
        bs = len(batch["labels"])
        enc = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in batch}
        z = self.encoder.embed(enc, pooler=self.cfg["pooler"])
        z1, z2 = z[:bs], z[bs:2 * bs]
        generative, _ = self.generative_loss(self.memory(z1, z2), batch)
        terms = {"loss_generative": generative}
        if self.supervised:
            anchor = z[4 * bs:5 * bs] if len(z) == 5 * bs else z1
            terms["loss_contrastive"] = info_nce(anchor, z[2 * bs:3 * bs], self.cfg["temperature"],
                                                 extra_negatives=z[3 * bs:4 * bs])
            terms["loss"] = terms["loss_contrastive"] + self.cfg["alpha"] * generative
            return terms
        total = generative
        if self.cfg["mlm_weight"]:
            view1 = {k: v[:bs] for k, v in enc.items()}
            terms["loss_mlm"] = mlm_loss(self.encoder, self.lm_head, view1, self.cfg["mlm_probability"])
            total = total + self.cfg["mlm_weight"] * terms["loss_mlm"]
        if self.cfg["contrastive_weight"]:
            terms["loss_contrastive"] = info_nce(z1, z2, self.cfg["temperature"])
            total = total + self.cfg["contrastive_weight"] * terms["loss_contrastive"]
        terms["loss"] = total
        return terms

    # -- evaluation ---------------------------------------------------------------------------------------------
    @torch.no_grad()
    def reconstruction_metrics(self) -> dict:
        """Held-out reconstruction: the first `recon_dev_sentences` distinct STS-B dev sentences, phrases
        masked with a fixed seed and no augmentation; teacher-forced decoder loss and token accuracy."""
        if not hasattr(self, "_recon_batch"):
            pairs = load_split("STSBenchmark", "dev", self.data_dir)
            sentences = list(dict.fromkeys(pairs.sent1))[: self.cfg["recon_dev_sentences"]]
            rng = random.Random(0)
            with corpora.nltk_data(self.data_dir):
                view1, view2, targets = (list(x) for x in zip(*[self.views(s, rng, how="none") for s in sentences]))
            self._recon_batch = self.tensors(view1, view2, targets)
        batch, bs = self._recon_batch, len(self._recon_batch["labels"])
        with evaluating(self):
            z = self.encoder.embed({k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in batch},
                                   pooler=self.cfg["pooler"])
            loss, correct = self.generative_loss(self.memory(z[:bs], z[bs:2 * bs]), batch)
        tokens = int((batch["labels"] != -100).sum())
        return {"recon_loss": float(loss), "recon_accuracy": 100 * float(correct) / max(tokens, 1), "recon_tokens": tokens}

    def dev_metrics(self):
        return {**super().dev_metrics(), **self.reconstruction_metrics()}

    @torch.no_grad()
    def reconstruct(self, sentence: str, phrase: str, max_tokens: int = 12) -> dict:
        """Table 7: greedy decoding of the masked phrase from the sentence and its masked copy."""
        spans = occurrences(words(sentence), " ".join(words(phrase)))
        raw, masked, _ = self.views(sentence, random.Random(0), how="none", phrases=[(phrase, spans)])
        z = self.encoder.embed(self.encoder.tokenize([raw, masked]), pooler=self.cfg["pooler"])
        ids = greedy_decode(self.decode, self.memory(z[:1], z[1:]), self.encoder.tokenizer, max_tokens)
        return {"sentence": sentence, "masked": masked, "phrase": phrase, "generated": self.encoder.tokenizer.decode(ids)}

    def finish(self):
        final = super().finish()
        with evaluating(self):
            final["reconstructions"] = [self.reconstruct(s, p) for s, p in TABLE7]
            final["reconstruction"] = self.reconstruction_metrics()
        final["mlm_head_pretrained"] = self.lm_head_pretrained
        return final


def unsupervised_run(cfg: dict) -> dict:
    """The overrides of the unsupervised PaSeR run a supervised one starts from: same scale, PLM, seed,
    precision and PaSeR knobs (the supervised-only ones aside)."""
    own = {k: cfg[k] for k in Params.__dataclass_fields__ if k not in ("supervised", "alpha", "init_from_unsup", "reuse_decoder")}
    shared = {k: cfg[k] for k in ("scale", "model_name", "seed", "precision", "device")}
    return {"method": "paser", **shared, **recipe_presets("paser", cfg["scale"], recipe_of(cfg)), **own}


METHOD = PaSeR
