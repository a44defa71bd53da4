"""The contract every method implements, and the pieces several methods share.

A method is an nn.Module holding the encoder and its own extra modules. The trainer calls, per step:
  batch = method.collate(examples)      # batch preparation / augmentation (tokenised tensors)
  terms = method.loss(batch)            # dict of named loss terms; terms["loss"] is optimised
every `eval_steps` it calls `method.dev_metrics()` (the checkpoint with the best `selection_metric` is
kept), and at the end `method.finish()` on that checkpoint. By default these evaluate `method.encoder`
with the run's `eval_pooler` on STS-B dev and on the STS test sets; pretraining (mlm) overrides them.
A method declares the modules it adds to the PLM (`added_modules`: by default every child module besides
the encoder; they train at `head_lr` and their movement is recorded) and the weight of each named loss
term in its loss (`term_weights`, for the terms' shares).
Methods never import each other: what they share lives here or in the trainer.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..data import corpora
from ..distributed import gather_rows
from ..errors import SreError
from ..evaluate.frequency import frequency_analysis
from ..settings import require_choice, require_positive  # noqa: F401  (the methods' checks)


# Sentence pairs whose per-token importance every run records, in the spirit of SARCSE's Figure 1 (its exact
# sentences are not given): a dissimilar pair that differs in one keyword, and a similar pair that is worded
# differently. Written for this book; not from any evaluation set.
PROBE_PAIRS = [
    ("A man is driving east on the highway.", "A man is driving west on the highway."),
    ("A woman is frying some food in a pan.", "Some food is being fried by a woman."),
]


@dataclass
class NoParams:
    pass


class Method(nn.Module):
    Params = NoParams          # the method's own knobs (a dataclass with defaults)
    SCALE_PRESETS: dict = {}   # scale -> overrides of common or own knobs
    PROBE_OVERRIDES: dict = {}  # size knobs of its own that a fingerprint's probe shrinks (fingerprints.py)
    STEP_KNOBS: tuple = ()      # knobs of its own counted in training steps: quick mode keeps their share of the cap
    contrastive = True         # needs in-batch negatives (batch_size >= 2)
    selection_metric = "stsb_dev"  # the dev metric that picks the kept checkpoint (higher is better)

    def __init__(self, cfg: dict, encoder):
        super().__init__()
        self.cfg, self.encoder = cfg, encoder
        encoder.packed = cfg["packed"]  # its training forwards on real tokens only (packing.py)
        self.data_dir = None

    @classmethod
    def dependencies(cls, cfg: dict) -> dict[str, dict]:
        """Runs this method learns from (name -> their overrides): the trainer trains or loads them and
        passes their kept weights to `build` (RankCSE's teachers, supervised PaSeR's unsupervised run)."""
        return {}

    @classmethod
    def build(cls, cfg: dict, device: str, data_dir=None, dependencies: dict | None = None) -> "Method":
        from ..encoder import Encoder

        method = cls(cfg, Encoder(cfg["model_name"], pooler=cfg["eval_pooler"], device=device))
        method.data_dir = data_dir
        return method

    def added_modules(self) -> dict[str, nn.Module]:
        """The modules this method adds to the PLM, by name: its own child modules other than the encoder
        (SimCSE's MLP, SARCSE's autoencoder, ...). Override where a child is the PLM itself (mlm)."""
        return {name: module for name, module in self.named_children() if name != "encoder"}

    def forward(self, batch: dict) -> dict[str, torch.Tensor]:
        """The loss terms (what DistributedDataParallel calls; one process calls `loss` directly)."""
        return self.loss(batch)

    def term_weights(self) -> dict[str, float]:
        """Weight of each named loss term in terms["loss"] (for its share); {}: the loss is a single term."""
        return {}

    def encode(self, sentences):
        return self.encoder.encode(sentences, pooler=self.cfg["eval_pooler"], precision=self.cfg["precision"])

    def dev_metrics(self) -> dict:
        """STS-B dev Spearman and the dev split's geometry (alignment, uniformity, anisotropy)."""
        from ..data.sts import load_split
        from ..evaluate.geometry import geometry
        from ..evaluate.sts import evaluate_stsb_dev, evenly_spaced

        if not hasattr(self, "_dev_pairs"):
            self._dev_pairs = evenly_spaced(load_split("STSBenchmark", "dev", self.data_dir), self.cfg["eval_max_pairs"])
        score, (e1, e2) = evaluate_stsb_dev(self.encode, pairs=self._dev_pairs)
        return {"stsb_dev": score,
                **{k: v for k, v in geometry(e1, e2, self._dev_pairs).items() if not k.startswith("n_")}}

    def finish(self) -> dict:
        """Test metrics of the kept checkpoint: the STS tasks and the STS-B test geometry, plus what the
        chapters draw from a trained model that is not kept: the cosine of every STS-B test pair (SARCSE's
        Figure 3) and per-token importance for the probe pairs (SARCSE's Figure 1)."""
        from ..evaluate.model import evaluate_final
        from ..evaluate.sts import stsb_test_cosines

        table: dict = {}

        def remembering(sentences):  # the STS-B test cosines must come from the very embeddings scored
            missing = [s for s in dict.fromkeys(sentences) if s not in table]
            if missing:
                table.update(zip(missing, self.encode(missing)))
            return np.stack([table[s] for s in sentences])

        final = evaluate_final(remembering, self.data_dir, max_pairs=self.cfg["eval_max_pairs"])
        # unrounded: rounding creates ties
        final["stsb_test_cosine"] = stsb_test_cosines(remembering, self.data_dir, self.cfg["eval_max_pairs"]).tolist()
        final["token_importance"] = self.token_importance([s for pair in PROBE_PAIRS for s in pair])
        return final

    @torch.no_grad()
    def token_importance(self, sentences: list[str]) -> dict:
        """{"cls_attention": per sentence [(token, weight)]}: the last layer's attention from [CLS] to every
        token, averaged over heads (what SARCSE's Figure 1 shows for SimCSE)."""
        model = self.encoder.model
        was_training, implementation = self.training, model.config._attn_implementation
        self.eval()
        model.set_attn_implementation("eager")  # sdpa kernels do not return attention weights
        try:
            batch = self.encoder.tokenize(sentences)
            out = model(**{k: v for k, v in batch.items() if k != "token_type_ids"}, output_attentions=True)
        finally:
            model.set_attn_implementation(implementation)
            self.train(was_training)
        weights = out.attentions[-1][:, :, 0].mean(1)  # (batch, tokens): from [CLS], mean over heads
        rows = []
        for ids, mask, w in zip(batch["input_ids"], batch["attention_mask"], weights):
            n = int(mask.sum())
            tokens = self.encoder.tokenizer.convert_ids_to_tokens(ids[:n].tolist())
            rows.append([(t, round(float(x), 6)) for t, x in zip(tokens, w[:n])])
        return {"cls_attention": rows}

    @classmethod
    def validate(cls, cfg: dict) -> None:
        """Check the method's own knobs (raise SreError naming the key)."""

    def corpus(self, data_dir=None) -> list:
        """The training examples (sentences by default), read from the data dir."""
        return training_sentences(self.cfg, data_dir)

    def collate(self, examples: list) -> dict:
        raise NotImplementedError

    def loss(self, batch: dict) -> dict[str, torch.Tensor]:
        raise NotImplementedError


def attach_mlp(method: Method) -> None:
    """SimCSE's freshly initialised MLP on [CLS], owned by the encoder so that pooler `cls_mlp` can use it."""
    from ..encoder import MLP

    method.encoder.mlp = method.mlp = MLP(method.encoder.hidden_size)


# SimCSE's `--pooler_type`: cls trains through the MLP; the average poolers train and test without one.
SIMCSE_POOLERS = ["cls", "avg", "avg_first_last", "avg_top2"]


def simcse_pooler(method: Method) -> str:
    """The pooler a SimCSE-style method trains with; attaches the MLP when it is [CLS]."""
    if method.cfg["pooler"] == "cls":
        attach_mlp(method)
        return "cls_mlp"
    return method.cfg["pooler"]


def validate_simcse_pooler(cfg: dict, test_poolers_for_cls=("cls", "cls_mlp")) -> None:
    if cfg["pooler"] not in SIMCSE_POOLERS:
        raise SreError(f"unknown pooler {cfg['pooler']!r}: choose from {', '.join(SIMCSE_POOLERS)}")
    allowed = test_poolers_for_cls if cfg["pooler"] == "cls" else (cfg["pooler"],)
    if cfg["eval_pooler"] not in allowed:
        raise SreError(f"{cfg['method']} trained with pooler {cfg['pooler']} is tested with "
                       f"{' or '.join(allowed)}: set eval_pooler={allowed[0]}")


class DropoutViews(Method):
    """SimCSE's scaffolding, shared by the methods built on it (SimCSE, IFM, BYOP): each sentence twice in
    one forward of 2*bs rows, dropout the only noise; `pooler` is SimCSE's --pooler_type (cls trains through
    the MLP). The cpu edition trains and tests with avg: its stand-in PLM has no trained [CLS]."""
    SCALE_PRESETS = {"cpu": dict(pooler="avg", eval_pooler="avg"), "paper": dict(pooler="cls", eval_pooler="cls")}

    def __init__(self, cfg, encoder):
        super().__init__(cfg, encoder)
        self.train_pooler = simcse_pooler(self)

    @classmethod
    def validate(cls, cfg):
        require_positive(cfg, "temperature")
        validate_simcse_pooler(cfg)

    def collate(self, sentences):
        return self.encoder.tokenize(list(sentences) * 2, self.cfg["max_len"])

    def views(self, batch) -> tuple[torch.Tensor, torch.Tensor]:
        """The two dropout views' sentence embeddings (z, z')."""
        z1, z2 = self.encoder.embed(batch, pooler=self.train_pooler).chunk(2)
        return z1, z2


class GradientReversal(torch.autograd.Function):
    """Identity forward; the gradient times -coefficient backward (Ganin and Lempitsky; SLT-FAI's code: 1)."""

    @staticmethod
    def forward(ctx, x, coefficient: float = 1.0):
        ctx.coefficient = coefficient
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return -ctx.coefficient * grad, None


def count_call(counter: torch.Tensor, training: bool) -> int:
    """The value of a call-count buffer before this call (e.g. a method's training `loss` calls: a buffer, so
    that checkpoints keep it and a resumed run counts on), counted up by one when `training`."""
    before = int(counter)
    if training:
        counter += 1
    return before


@contextmanager
def buffered_generator(state: torch.Tensor, keep: bool):
    """A CPU generator at the state held in a buffer (so that checkpoints keep it and a resumed run draws on
    exactly), whose state after the block is written back to the buffer when `keep`."""
    generator = torch.Generator()
    generator.set_state(state.cpu())
    yield generator
    if keep:
        state.copy_(generator.get_state())


def training_sentences(cfg: dict, data_dir=None) -> list[str]:
    source = cfg["train_data"]
    if source == "wiki1m":
        sents = corpora.wiki1m(data_dir)
    elif source == "wiki1m_full":
        sents = corpora.wiki1m(data_dir, full=True)
    elif source == "sts_unlabeled":
        sents = corpora.unlabeled_sts(data_dir, deduplicate=False)  # the papers' 89,192 sentences
    else:
        raise SreError(f"train_data {source!r} has no sentences for method {cfg['method']}: "
                       "use wiki1m, wiki1m_full or sts_unlabeled")
    return sents


def cosine_matrix(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """cos(a_i, b_j) for all i, j."""
    return F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).T


def info_nce(z1: torch.Tensor, z2: torch.Tensor, temperature: float, extra_negatives=None) -> torch.Tensor:
    """SimCSE's loss: CE over cos(z1_i, z2_j)/tau with the diagonal as target; one direction, no
    intra-view negatives. `extra_negatives` (bs x d, e.g. hard negatives) add columns cos(z1_i, n_j)/tau.
    Under data parallelism the rows of every process take part (gather_rows; the identity in one process)."""
    z1, z2 = gather_rows(z1), gather_rows(z2)
    logits = cosine_matrix(z1, z2)
    if extra_negatives is not None:
        logits = torch.cat([logits, cosine_matrix(z1, gather_rows(extra_negatives))], dim=1)
    return F.cross_entropy(logits / temperature, torch.arange(len(z1), device=z1.device))


# Margin perturbations of the cosine matrix (IFM, BYOP): p = the positives (diagonal), n = the in-batch
# negatives (off the diagonal), + adds the margin, - subtracts it, before dividing by tau.
PERTURBATIONS = ["p+", "p-", "n+", "n-", "p+n+", "p+n-", "p-n+", "p-n-"]


def perturbed_cosines(cos: torch.Tensor, perturbation: str, margin) -> torch.Tensor:
    """`cos` (n x n, positives on the diagonal) with `margin` added or subtracted as `perturbation` says.
    `margin` is a number or a tensor that broadcasts against `cos` (n x 1: one margin per anchor row)."""
    if perturbation not in PERTURBATIONS:
        raise SreError(f"unknown perturbation {perturbation!r}: choose from {', '.join(PERTURBATIONS)}")
    positive = torch.eye(len(cos), dtype=cos.dtype, device=cos.device)
    signs = dict(zip(perturbation[::2], perturbation[1::2]))  # "p-n+" -> {"p": "-", "n": "+"}
    shift = sum((1.0 if sign == "+" else -1.0) * (positive if part == "p" else 1 - positive)
                for part, sign in signs.items())
    return cos + shift * margin


def dynamic_margin(cos: torch.Tensor, axis: str) -> torch.Tensor:
    """BYOPD's margin sim(z_i, z_i') / (N - 1) from the cosine matrix, detached: one per anchor row (`anchor`,
    the BYOP paper's m_i; n x 1) or, as the official BYOP code broadcasts it, one per column (`column`; 1 x n)."""
    diagonal = cos.diagonal().detach() / (len(cos) - 1)
    return diagonal[:, None] if axis == "anchor" else diagonal[None, :]


def margin_info_nce(z1: torch.Tensor, z2: torch.Tensor, temperature: float, perturbation: str, margin,
                    loss_mode: str, alpha: float = 1.0) -> dict[str, torch.Tensor]:
    """SimCSE's InfoNCE on perturbed cosines. loss_mode "single": the perturbed loss only; "multi-task":
    (plain + alpha * perturbed) / (1 + alpha), IFM's weighting (alpha = 1 is the papers' 1/2 (l + l_IFM)).
    `margin` may be a callable of the (detached-or-not) cosine matrix, for margins that depend on it.
    Under data parallelism the rows of every process take part, as in info_nce."""
    z1, z2 = gather_rows(z1), gather_rows(z2)
    cos = cosine_matrix(z1, z2)
    labels = torch.arange(len(z1), device=z1.device)
    margin = margin(cos) if callable(margin) else margin
    perturbed = F.cross_entropy(perturbed_cosines(cos, perturbation, margin) / temperature, labels)
    if loss_mode == "single":
        return {"loss": perturbed}
    if loss_mode != "multi-task":
        raise SreError(f"unknown loss_mode {loss_mode!r}: choose single or multi-task")
    plain = F.cross_entropy(cos / temperature, labels)
    return {"loss": (plain + alpha * perturbed) / (1 + alpha), "loss_plain": plain, "loss_perturbed": perturbed}


def multitask_weights(loss_mode: str, alpha: float) -> dict[str, float]:
    """margin_info_nce's term weights: (plain + alpha * perturbed) / (1 + alpha) in multi-task mode."""
    return {"loss_plain": 1 / (1 + alpha), "loss_perturbed": alpha / (1 + alpha)} if loss_mode == "multi-task" else {}


class FrequencyAnalysed(Method):
    """What consert and slt_fai (either backbone) share besides the views: one tokenised copy of each sentence
    per batch (the views are made in the forward), and SLT-FAI's frequency analyses (Figs. 5-7) of the kept
    model in the final record, on `analysis_sentences` sentences of the STS corpus."""

    @classmethod
    def validate(cls, cfg):
        if cfg["analysis_sentences"] < 10:
            raise SreError(f"analysis_sentences must be at least 10, got {cfg['analysis_sentences']}")

    def collate(self, sentences):
        return self.encoder.tokenize(list(sentences), self.cfg["max_len"])

    def finish(self):
        final = super().finish()
        final["frequency"] = frequency_analysis(self.encoder, self.cfg["analysis_sentences"], self.data_dir)
        return final
