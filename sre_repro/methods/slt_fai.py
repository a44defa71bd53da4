"""SLT-FAI (Wang et al.): frequency-induced adversarial tuning (AT) and incomplete-sentence filtering (ISF) on
top of a contrastive backbone, ConSERT or SimCSE.

  labels  1 = LOW frequency: BookCorpus wordpiece count below the `low_rate` (lambda) quantile of the non-zero
          counts (evaluate/frequency.py; special tokens and [PAD] have count 0, so they are LOW)
  R       the backbone's contrastive loss: ConSERT (feature cutoff / token shuffle views, NT-Xent both ways, tau
          0.1, x cl_rate 0.15, dropout 0) or SimCSE (two dropout views, InfoNCE, tau 0.05, x 1)
  L_AT    both views' last-layer token states -> gradient reversal (-c x grad backward) -> the similarity
          discriminator -> CE against the original ids' labels, averaged over the views     (Sec. 3.2, Eq. 4)
  L_ISF   the incomplete copy (some tokens -> [MASK]), unaugmented; the information discriminator (no reversal)
          gets the sentence's vector labelled 0 and the copy's 1, CE(.,0) + CE(.,1)   (Sec. 3.3, Eqs. 5-7)
  loss    cl_rate * R + on(step) * (alpha * L_AT + beta * L_ISF); in the warm-up the auxiliary terms are
          recorded only and neither discriminator trains                                 (Eq. 2, Sec. 4.1)
Eqs. 2-3's max over the discriminator would have it maximise its own loss; the text and GRL say the opposite.

Where paper and official code (a ConSERT fork) differ, both; the paper's the default, but for ISF's mask:
  discriminator  paper: Linear(d, d), ReLU, Linear(d, 2) | code: Linear stacks, a ReLU on the logits
  at_positions   tokens: word tokens, per sentence then over sentences (Eq. 4) | all: every position (the code)
  isf_mask       high: HIGH tokens, p = 0.5 (the code's; the book's: on the STS corpus the paper's rule leaves most
                 copies unchanged) | low: LOW word(piece)s, p = isf_rate = epsilon = 0.2 (the paper's)
  isf_original   sentence: h_i of Eq. 7, the sentence as it is (SimCSE: its first dropout view) | view1: ConSERT's
                 feature-cutoff view (the code's rep_a_view1), told apart by the cutoff even where nothing is masked
  warmup_rule    once: off for the first warmup_epochs (the paper) | every_epoch: off in the first fraction of
                 every epoch from epoch int(warmup_epochs) (the code)
Set by neither, for an AT discriminator trained on ~93 % HIGH word tokens: at_class_weights none | balanced (CE
weighted by the inverse label share: a constant guess costs ln 2); grl_schedule constant (c = 1) | dann (Ganin and
Lempitsky's c = 2 / (1 + exp(-10 p)) - 1, p the share of the run done; cited in Sec. 3.2 for the GRL).
R is the official NT-Xent (both directions, intra-view negatives), not Eq. 9 as printed. `aux_warmup_steps` >= 0
counts the warm-up in steps. With alpha = beta = 0 the method is its backbone (`consert`, or `simcse`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..encoder import pool
from ..errors import SreError
from ..views import (CONSERT_PAPER, CONSERT_RECIPE, augmented_forward, consert_views, disable_dropout,
                     nt_xent, validate_views)
from .common import (DropoutViews, FrequencyAnalysed, GradientReversal, buffered_generator, count_call, info_nce,
                     require_choice, simcse_pooler, validate_simcse_pooler)

BACKBONES = {"consert": {"temperature": 0.1, "cl_rate": 0.15, "warmup_epochs": 0.5},
             "simcse": {"temperature": 0.05, "cl_rate": 1.0, "warmup_epochs": 0.1}}
ISF_RATES = {"low": 0.2, "high": 0.5}


@dataclass
class Params:
    backbone: str = "consert"         # consert | simcse
    alpha: float = 1.0                # weight of L_AT (0: w/o AT)
    beta: float = 1.0                 # weight of L_ISF (0: w/o ISF)
    low_rate: float = 0.5             # lambda: the share of non-zero-count wordpiece types labelled LOW
    temperature: float = 0.0          # 0: the backbone's (ConSERT 0.1, SimCSE 0.05)
    cl_rate: float = 0.0              # 0: the backbone's (ConSERT 0.15, SimCSE 1)
    pooler: str = "avg"               # ConSERT: avg | avg_first_last | avg_top2; SimCSE: also cls (+MLP)
    view1: str = "feature_cutoff"     # ConSERT backbone's two views (sre_repro/views.py)
    view1_rate: float = 0.2
    view2: str = "shuffle"
    view2_rate: float = 0.0
    discriminator: str = "paper"      # paper (Linear-ReLU-Linear) | code (linear stacks, ReLU on the logits)
    at_positions: str = "tokens"      # tokens (Eq. 4) | all (every position, padding included: the code)
    isf_mask: str = "high"            # high (the code: high-frequency tokens; the book's) | low (the paper: low-frequency words)
    isf_rate: float = 0.0             # 0: the reading's (low: epsilon 0.2, high: 0.5)
    isf_original: str = "sentence"    # sentence (Eq. 7: the sentence as it is) | view1 (the code: the feature-cutoff view)
    warmup_epochs: float = -1.0       # -1: the backbone's (the paper: ConSERT 0.5, SimCSE 0.1)
    warmup_rule: str = "once"         # once (the paper) | every_epoch (the code)
    aux_warmup_steps: int = -1        # >= 0: the warm-up in steps (overrides warmup_epochs)
    at_class_weights: str = "none"    # none (the paper and the code) | balanced (inverse label share per batch)
    grl_schedule: str = "constant"    # constant (the code: 1) | dann (Ganin and Lempitsky's ramp over the run)
    analysis_sentences: int = 10000   # sentences of the STS corpus in the frequency analyses (Figs. 5-7: 10,000)


def discriminator(kind: str, d: int, token_level: bool) -> nn.Module:
    if kind == "paper":
        return nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 2))
    if token_level:  # freqDiscrim, high_rank 2
        return nn.Sequential(nn.Linear(d, 2 * d), nn.Linear(2 * d, 2 * d), nn.Linear(2 * d, d), nn.Linear(d, 2), nn.ReLU())
    return nn.Sequential(nn.Linear(d, d), nn.Linear(d, 2), nn.ReLU())  # maskDiscrim


def warmup_done(step: int, cfg: dict, steps_per_epoch: int) -> bool:
    """Whether the auxiliary terms are on at training step `step` (0-based)."""
    if cfg["aux_warmup_steps"] >= 0:
        return step >= cfg["aux_warmup_steps"]
    w = cfg["warmup_epochs"]
    if cfg["warmup_rule"] == "once":
        return step >= w * steps_per_epoch
    epoch, index = divmod(step, steps_per_epoch)  # the code's flag, re-evaluated inside every epoch
    return epoch >= int(w) and index >= steps_per_epoch * (w - int(w))


def grl_coefficient(step: int, cfg: dict, steps_per_epoch: int) -> float:
    """The GRL's coefficient at step `step` (0-based): 1, or DANN's ramp with p = step / the run's steps."""
    if cfg["grl_schedule"] == "constant":
        return 1.0
    total = cfg["max_steps"] or cfg["epochs"] * steps_per_epoch
    p = min(1.0, step / max(1, total))
    return 2.0 / (1.0 + math.exp(-10.0 * p)) - 1.0


def isf_mask(input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor, special: torch.Tensor,
             rule: str, rate: float, mask_id: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """The incomplete copy: tokens of the rule's label (low: 1, high: 0), never special tokens or padding, each
    replaced by [MASK] with probability `rate` (drawn on the CPU from `generator`, else torch's global one)."""
    token_labels = labels[input_ids]
    eligible = (token_labels == (1 if rule == "low" else 0)) & ~special[input_ids] & attention_mask.bool()
    drawn = (torch.rand(input_ids.shape, generator=generator) < rate).to(input_ids.device)
    return input_ids.masked_fill(eligible & drawn, mask_id)


def at_loss(logits: torch.Tensor, targets: torch.Tensor, positions: torch.Tensor, per_sentence: bool,
            balanced: bool = False):
    """(CE, accuracy) over the chosen positions, per sentence then over sentences (Eq. 4) or pooled (the code).
    `balanced`: CE weighted by 1 / (2 x the label's share), averaged alike: a constant guess costs >= ln 2."""
    ce = F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(), reduction="none").view(targets.shape)
    right = (logits.argmax(-1) == targets).float()
    w = positions.float()
    count, keep = w.sum(1).clamp(min=1), w.sum(1) > 0

    def average(x):
        return ((x * w).sum(1) / count)[keep].mean() if per_sentence else (x * w).sum() / w.sum()
    if balanced:
        low_share = average(targets.float())
        ce = ce * (0.5 / torch.stack([1 - low_share, low_share]).clamp(min=1e-6))[targets]
    return average(ce), average(right)


def majority_share(targets: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """The accuracy of always answering the commoner label over the chosen positions (a discriminator's bar)."""
    low = (targets.float() * positions).sum() / positions.float().sum()
    return torch.maximum(low, 1 - low)


class SLTFAI(FrequencyAnalysed):
    Params = Params
    PROBE_OVERRIDES = {"analysis_sentences": 16, "aux_warmup_steps": 1}  # the auxiliary losses act from step 2
    STEP_KNOBS = ("aux_warmup_steps",)
    SCALE_PRESETS = {"smoke": dict(train_data="sts_unlabeled", eval_pooler="avg", analysis_sentences=24, aux_warmup_steps=2),
                     "cpu": dict(CONSERT_RECIPE, analysis_sentences=2000),  # lr, head_lr, warm-up: settings.CPU_RECIPES
                     "paper": CONSERT_PAPER}

    def __init__(self, cfg, encoder):
        super().__init__(cfg, encoder)
        defaults = BACKBONES[cfg["backbone"]]
        self.temperature = cfg["temperature"] or defaults["temperature"]
        self.cl_rate = cfg["cl_rate"] or defaults["cl_rate"]
        self.warmup = dict(cfg, warmup_epochs=defaults["warmup_epochs"] if cfg["warmup_epochs"] < 0 else cfg["warmup_epochs"])
        self.isf_rate = cfg["isf_rate"] or ISF_RATES[cfg["isf_mask"]]
        if cfg["backbone"] == "consert":
            disable_dropout(encoder.model)
            self.train_pooler = cfg["pooler"]
        else:
            self.train_pooler = simcse_pooler(self)
        d = encoder.hidden_size
        # own seed and own mask generator (a buffer: resumes are exact): ablations and backbone see the same views
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg["seed"] + 1)
            self.similarity_discriminator = discriminator(cfg["discriminator"], d, token_level=True)
            self.information_discriminator = discriminator(cfg["discriminator"], d, token_level=False)
        self.register_buffer("mask_rng", torch.Generator().manual_seed(cfg["seed"] + 2).get_state())
        self.register_buffer("loss_calls", torch.zeros((), dtype=torch.long))
        self.steps_per_epoch = 1

    @staticmethod
    def backbone_presets(scale: str, overrides: dict, defaults: dict, scale_presets: dict) -> dict:
        """With the SimCSE backbone, SimCSE's presets of the scale replace ConSERT's recipe, with the paper's batch of
        32 at paper scale and, at cpu, its warm-up share in steps (0.1 of SimCSE's epoch: 60 of the 600-step cap)."""
        if overrides.get("backbone") != "simcse":
            return {}
        simcse = {**{k: defaults[k] for k in ("train_data", "max_len", "weight_decay", "adam_eps", "warmup_ratio")},
                  **scale_presets, **DropoutViews.SCALE_PRESETS.get(scale, {})}
        keys = ["train_data", "max_len", "weight_decay", "adam_eps", "warmup_ratio", "lr", "epochs", "max_steps",
                "eval_steps", "patience", "min_delta", "batch_size", "precision", "pooler", "eval_pooler"]
        presets = {k: simcse[k] for k in keys if k in simcse}
        presets["aux_warmup_steps"] = {"smoke": 2, "cpu": round(0.1 * presets.get("max_steps", 0)), "paper": -1}[scale]
        if scale == "paper":
            presets["batch_size"] = 32
        return presets

    @classmethod
    def build(cls, cfg, device, data_dir=None, dependencies=None):
        """The method with its frequency labels, read from the data dir's BookCorpus counts."""
        from ..data.corpora import bookcorpus_token_counts
        from ..evaluate.frequency import frequency_labels

        method = super().build(cfg, device, data_dir)
        tokenizer = method.encoder.tokenizer
        labels, method.threshold = frequency_labels(bookcorpus_token_counts(data_dir), tokenizer.get_vocab(), cfg["low_rate"])
        special = torch.zeros(len(labels), dtype=torch.bool)
        special[tokenizer.all_special_ids] = True
        method.register_buffer("labels", labels, persistent=False)
        method.register_buffer("special", special, persistent=False)
        return method

    def added_modules(self):
        """The discriminators whose terms are in the loss (and SimCSE's MLP when the SimCSE backbone pools [CLS])."""
        added = {"mlp": self.mlp} if hasattr(self, "mlp") else {}
        if self.cfg["alpha"] > 0:
            added["similarity discriminator"] = self.similarity_discriminator
        if self.cfg["beta"] > 0:
            added["information discriminator"] = self.information_discriminator
        return added

    def term_weights(self):
        return {"loss_cl": self.cl_rate, "loss_at": self.cfg["alpha"], "loss_isf": self.cfg["beta"],
                "at_accuracy": 0.0, "at_majority": 0.0, "isf_accuracy": 0.0, "isf_changed": 0.0, "aux_on": 0.0}

    @classmethod
    def validate(cls, cfg):
        for key, choices in (("backbone", list(BACKBONES)), ("discriminator", ["paper", "code"]),
                             ("at_positions", ["tokens", "all"]), ("isf_mask", list(ISF_RATES)),
                             ("isf_original", ["sentence", "view1"]), ("warmup_rule", ["once", "every_epoch"]),
                             ("at_class_weights", ["none", "balanced"]), ("grl_schedule", ["constant", "dann"])):
            require_choice(cfg, key, choices)
        if not 0 < cfg["low_rate"] < 1:
            raise SreError(f"low_rate (lambda) must lie in (0, 1), got {cfg['low_rate']}: e.g. low_rate=0.5")
        for key in ("alpha", "beta", "temperature", "cl_rate", "isf_rate"):
            if cfg[key] < 0:
                raise SreError(f"{key} must be >= 0, got {cfg[key]}")
        if not 0 <= cfg["isf_rate"] <= 1:
            raise SreError(f"isf_rate must lie in [0, 1] (0: the reading's own), got {cfg['isf_rate']}")
        if cfg["warmup_epochs"] < 0 and cfg["warmup_epochs"] != -1:
            raise SreError(f"warmup_epochs must be >= 0 (or -1: the backbone's), got {cfg['warmup_epochs']}")
        if cfg["backbone"] == "consert":
            validate_views({**cfg, "temperature": cfg["temperature"] or 1, "cl_rate": cfg["cl_rate"] or 1})
        else:
            validate_simcse_pooler(cfg)
        super().validate(cfg)

    def corpus(self, data_dir=None):
        examples = super().corpus(data_dir)
        used = min(len(examples), self.cfg["max_train_examples"] or len(examples))
        # the trainer's steps per epoch: global batches (every process's), the last partial one dropped
        self.steps_per_epoch = max(1, used // (self.cfg["batch_size"] * self.cfg["world_size"]))
        return examples

    def loss(self, batch):
        step = count_call(self.loss_calls, self.training)
        aux_on = self.training and warmup_done(step, self.warmup, self.steps_per_epoch)
        ids, mask = batch["input_ids"], batch["attention_mask"]
        rows = len(ids)
        masked = None
        if self.cfg["beta"] > 0:
            with buffered_generator(self.mask_rng, keep=self.training) as generator:
                masked = isf_mask(ids, mask, self.labels, self.special, self.cfg["isf_mask"], self.isf_rate,
                                  self.encoder.tokenizer.mask_token_id, generator)
        # one forward: view 1, view 2 and (ISF) the sentence as it is (ConSERT, isf_original=sentence) and the
        # incomplete copy, both unaugmented
        plain = masked is not None and self.cfg["backbone"] == "consert" and self.cfg["isf_original"] == "sentence"
        if self.cfg["backbone"] == "consert":
            views = consert_views(self.cfg, ids) + ([(ids, "none", 0.0)] if plain else [])
            views += [(masked, "none", 0.0)] if masked is not None else []
            hidden = augmented_forward(self.encoder.model, mask, views, self.encoder.hidden_size, self.encoder.packs)
        else:
            all_ids = torch.cat([ids, ids] + ([masked] if masked is not None else []))
            hidden = self.encoder.forward_hidden({"input_ids": all_ids, "attention_mask": mask.repeat(len(all_ids) // rows, 1)})
        full_mask = mask.repeat(len(hidden[-1]) // rows, 1)
        z = pool(self.train_pooler, hidden, full_mask, self.encoder.mlp).float()
        z1, z2 = z[:rows], z[rows:2 * rows]
        contrastive = nt_xent(z1, z2, self.temperature) if self.cfg["backbone"] == "consert" else info_nce(z1, z2, self.temperature)
        terms = {"loss_cl": contrastive}
        loss = self.cl_rate * contrastive
        with torch.set_grad_enabled(aux_on and torch.is_grad_enabled()):  # in the warm-up: no graph, records only
            if self.cfg["alpha"] > 0:
                coefficient = grl_coefficient(step, self.cfg, self.steps_per_epoch)
                logits = self.similarity_discriminator(GradientReversal.apply(hidden[-1][:2 * rows], coefficient))
                targets = self.labels[ids].repeat(2, 1)
                if self.cfg["at_positions"] == "tokens":
                    positions = (mask.bool() & ~self.special[ids]).repeat(2, 1)
                else:
                    positions = torch.ones_like(targets, dtype=torch.bool)
                terms["loss_at"], terms["at_accuracy"] = at_loss(logits, targets, positions, self.cfg["at_positions"] == "tokens",
                                                                 self.cfg["at_class_weights"] == "balanced")
                terms["at_majority"] = majority_share(targets, positions)
                if aux_on:
                    loss = loss + self.cfg["alpha"] * terms["loss_at"]
            if masked is not None:
                original = z[2 * rows:3 * rows] if plain else z1
                logits = self.information_discriminator(torch.cat([original, z[-rows:]]))
                targets = torch.cat([torch.zeros(rows, dtype=torch.long), torch.ones(rows, dtype=torch.long)]).to(logits.device)
                terms["loss_isf"] = F.cross_entropy(logits[:rows], targets[:rows]) + F.cross_entropy(logits[rows:], targets[rows:])
                terms["isf_accuracy"] = (logits.argmax(-1) == targets).float().mean()
                terms["isf_changed"] = (masked != ids).any(1).float().mean()
                if aux_on:
                    loss = loss + self.cfg["beta"] * terms["loss_isf"]
        terms["aux_on"] = torch.tensor(float(aux_on))
        return {"loss": loss, **terms}

    def finish(self):
        final = super().finish()  # with the frequency analyses
        final["threshold"] = self.threshold
        return final


METHOD = SLTFAI
