"""Cached evaluations: of a model as it is, or of a training run's kept weights. One helper looks a record up,
computes it when missing and saves it (`cached`); each kind's computation is a function of its config alone
(`COMPUTE`), so a fingerprint's probe can run it shrunk (sre_repro/fingerprints.py).

Kinds: "eval" (STS and geometry of a model as it is: the "without training" rows), "transfer" (SentEval's
transfer tasks), "hard_subset" (PT-BERT's hard-length subset), "frequency" (SLT-FAI's frequency analyses of a
model as it is), "retrieval" (QQP), "poolers" (the STS of a run's kept weights under other poolers),
"reconstruction" (SARCSE's reconstruction loss of a run's kept weights beside its trivial baseline),
"discriminators" (how well SLT-FAI's kept discriminators separate their classes on held-out sentences),
"length_control" (PT-BERT's control of length against difficulty: evaluate/hard_subset.py), "h_test" (a PT-BERT
run's STS tested with its final embedding h beside the encoder's, as the official code's `return_poly`),
"decoder_check" (whether PaSeR's decoder reads the sentence embeddings: evaluate/decoder.py). A config
with a "run" key (a resolved training config) evaluates that run's kept weights (trained once where this
machine lacks them: train.kept_checkpoint), and its record says which weights it tested ("weights": the
record's, or a sibling retrained here: train.weights_provenance).
"""
from __future__ import annotations

import random
import time

import numpy as np

from .. import runs
from ..data.corpora import snli_triplets, unlabeled_sts, wiki1m
from ..data.sts import load_split
from ..encoder import load_encoder
from ..errors import SreError
from ..train import latest_kept_weights, trained_method
from .decoder import decoder_check
from .discriminators import discriminator_separation
from .frequency import frequency_analysis
from .hard_subset import evaluate_hard_subset, evaluate_length_control
from .model import eval_config, evaluate_final, stsb_dev_score
from .retrieval import qqp_retrieval
from .transfer import evaluate_transfer
from .whitening import Whitening


def _encode(cfg: dict, data_dir=None):
    """The embedding function a config evaluates: its run's kept weights, or its model with its pooler."""
    if "run" in cfg:
        return trained_method(cfg["run"], data_dir=data_dir).encode
    return load_encoder(cfg["model_name"], pooler=cfg["pooler"]).encode  # pools with its own pooler


def _eval(cfg: dict, data_dir=None) -> dict:
    encoder = load_encoder(cfg["model_name"], cfg["pooler"])
    encode = raw = lambda s: encoder.encode(s, pooler=cfg["pooler"], precision=cfg["precision"])  # noqa: E731
    if cfg["tasks"] == "stsb_dev":  # the model-selection score of a model as it is (a run's dev gain starts here)
        return {"stsb_dev": stsb_dev_score(encode, data_dir, cfg["max_pairs"])}
    if cfg["whiten"]:
        corpus = unlabeled_sts(data_dir)
        table = dict(zip(corpus, raw(corpus)))  # holds every evaluated sentence: one encoding pass in all
        whitening = Whitening(cfg["whiten_dim"] or None).fit(np.stack(list(table.values())))
        encode = lambda s: whitening.transform(np.stack([table[x] if x in table else raw([x])[0] for x in s]))  # noqa: E731
    return evaluate_final(encode, data_dir, cfg["tasks"], cfg["max_pairs"])


def _transfer(cfg: dict, data_dir=None) -> dict:
    return evaluate_transfer(_encode(cfg, data_dir), cfg["tasks"], data_dir, cfg["kfold"], cfg["mrpc_features"],
                             cfg["solver"], cfg["sst2_train"], cfg["max_examples"])


def _hard_subset(cfg: dict, data_dir=None) -> dict:
    return evaluate_hard_subset(_encode(cfg, data_dir), data_dir, cfg["max_pairs"], **cfg["thresholds"])


def _length_control(cfg: dict, data_dir=None) -> dict:
    return evaluate_length_control(_encode(cfg, data_dir), data_dir, cfg["max_pairs"])


def _h_test(cfg: dict, data_dir=None) -> dict:
    """The kept weights' STS twice: the encoder's embedding (what the book tests) and h (pseudo tokens, attention
    and MLP on the encoder's states: the official code's `return_poly` at test), with the hard subset of each."""
    method = trained_method(cfg["run"], data_dir=data_dir)
    out = {}
    for name, encode in (("encoder", method.encode), ("h", method.encode_h)):
        out[name] = {"sts": evaluate_final(encode, data_dir, max_pairs=cfg["max_pairs"])["sts"],
                     "hard_subset": evaluate_hard_subset(encode, data_dir, cfg["max_pairs"])["scores"]}
    return out


def _frequency(cfg: dict, data_dir=None) -> dict:
    return {"frequency": frequency_analysis(load_encoder(cfg["model_name"], pooler="avg"), cfg["n_sentences"], data_dir)}


def _retrieval(cfg: dict, data_dir=None) -> dict:
    return qqp_retrieval(_encode(cfg, data_dir), data_dir, map_cutoff=cfg["map_cutoff"], max_pairs=cfg["max_pairs"])


def _poolers(cfg: dict, data_dir=None) -> dict:
    """Every pooler's STS of the run's kept weights; the run's own pooler is read from its record when it has one."""
    run = cfg["run"]
    record = runs.read(run["method"], run)
    method = trained_method(run, data_dir=data_dir)
    scores = {}
    for pooler in cfg["poolers"]:
        if pooler == run["eval_pooler"] and record is not None:
            scores[pooler] = record["metrics"]["sts"]
            continue
        encode = lambda s, p=pooler: method.encoder.encode(s, pooler=p, precision=run["precision"])  # noqa: E731
        scores[pooler] = evaluate_final(encode, data_dir, max_pairs=run["eval_max_pairs"])["sts"]
    return {"sts": scores}


def _reconstruction(cfg: dict, data_dir=None) -> dict:
    """SARCSE's reconstruction loss of a run's kept weights on STS-B dev's sentences (held out from training),
    beside its trivial baseline (methods.sarcse: reconstruction_against_constant); the token weights are the
    frequencies of the run's own training sentences."""
    method = trained_method(cfg["run"], data_dir=data_dir)
    if cfg["run"]["weighting"] == "adaptive":
        method.corpus(data_dir)  # f(w) reads the training sentences' token frequencies (not kept with the weights)
    pairs = load_split("STSBenchmark", "dev", data_dir)
    sentences = list(dict.fromkeys(pairs.sent1 + pairs.sent2))[:cfg["max_sentences"] or None]
    return {"reconstruction": method.reconstruction_against_constant(sentences)}


def _decoder_check(cfg: dict, data_dir=None) -> dict:
    """PaSeR's decoder on held-out sentences (evaluate/decoder.py): wiki-sample sentences that are not among the
    run's training sentences, the share of a sample of those without decoder loss, three STS-B test sentences'
    masked views."""
    method = trained_method(cfg["run"], data_dir=data_dir)
    training = [e if isinstance(e, str) else e[0] for e in method.corpus(data_dir)]  # supervised: the premises
    seen, n = set(training), cfg["max_sentences"] or None
    held_out = [s for s in dict.fromkeys(wiki1m(data_dir)) if s not in seen][:n]
    if not held_out:
        raise SreError(f"the decoder check holds out wiki-sample sentences, and this run trains on all of them "
                       f"(train_data={cfg['run']['train_data']}): check a run that trains on other sentences")
    examples = list(dict.fromkeys(load_split("STSBenchmark", "test", data_dir).sent1))[:3]
    return decoder_check(method, held_out, random.Random(0).sample(training, min(len(training), n or len(training))), examples)


def _discriminators(cfg: dict, data_dir=None) -> dict:
    """SLT-FAI's discriminators on held-out sentences (evaluate/discriminators.py): SNLI premises that are not
    among the run's own training sentences (neither the wiki sample nor the STS sentences train on SNLI)."""
    method = trained_method(cfg["run"], data_dir=data_dir)
    seen = set(method.corpus(data_dir))
    sentences = [p for p in dict.fromkeys(p for p, _, _ in snli_triplets(data_dir)) if p not in seen]
    return discriminator_separation(method, sentences[:cfg["max_sentences"] or None])


COMPUTE = {"eval": _eval, "transfer": _transfer, "hard_subset": _hard_subset, "frequency": _frequency,
           "retrieval": _retrieval, "poolers": _poolers, "reconstruction": _reconstruction,
           "discriminators": _discriminators, "length_control": _length_control, "h_test": _h_test,
           "decoder_check": _decoder_check}
assert set(COMPUTE) == set(runs.EVALUATION_SIZE_KNOBS)


def cached(kind: str, cfg: dict, data_dir=None, force: bool = False, results_root=None,
           allow_stale: bool = False) -> dict:
    """The record of evaluation `kind` with config `cfg`: served from the store, else computed and saved. An
    evaluation of a run's kept weights computed before the run's record (the run recomputed since under the same
    key: its start changed, or --force) is stale."""
    hit = runs.lookup(kind, cfg, results_root, force=force, allow_stale=allow_stale,
                      more_reasons=lambda record: _before_its_run(cfg, record, results_root))
    if hit is not None:
        return hit
    started = time.time()
    metrics = COMPUTE[kind](cfg, data_dir)
    result = {"metrics": metrics, "wall_seconds": time.time() - started}
    if isinstance(cfg.get("run"), dict) and "method" in cfg["run"]:  # which weights it tested: the record's, or a sibling
        result["weights"] = latest_kept_weights(cfg["run"])
    return runs.save(kind, cfg, result, results_root)


def _before_its_run(cfg: dict, record: dict, results_root=None) -> list[str]:
    """Why an evaluation of a run's kept weights is stale for being computed before the run's current record."""
    run = cfg.get("run")
    if not isinstance(run, dict) or "method" not in run:
        return []
    trained = runs.read(run["method"], run, results_root)
    if trained is None or trained.get("created", "") <= record.get("created", ""):
        return []
    return [f"computed before its run's record ({trained['created']})"]


def evaluate_model(data_dir=None, force: bool = False, results_root=None, allow_stale: bool = False,
                   **overrides) -> dict:
    """STS scores and STS-B geometry of a model as it is (cached like a training run)."""
    return cached("eval", eval_config(**overrides), data_dir, force, results_root, allow_stale)
