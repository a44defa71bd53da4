"""RankCSE-ListMLE: ListMLE against a direct Plackett-Luce computation, teachers trained once by the book's
own loop, and the loss wired as InfoNCE (or BYOP's) + gamma * ListMLE."""
import math

import pytest
import torch

from sre_repro.config import resolve
from sre_repro.errors import SreError
from sre_repro.methods.common import cosine_matrix, dynamic_margin, info_nce, margin_info_nce
from sre_repro.methods.rankcse import RankCSE, list_mle, parse_teachers

SCORES = [[2.0, 0.5, -1.0], [0.1, 3.0, 0.4], [1.0, -0.2, 0.7]]
TEACHER = [[0.9, 0.1, 0.5], [0.2, 0.8, 0.3], [0.6, 0.4, 0.1]]  # no ties


def plackett_luce_nll(scores, teacher):
    """Per row: order by the teacher, then sum_k [log sum_{l>=k} e^{s_l} - s_k]; mean over rows."""
    total = 0.0
    for s, t in zip(scores, teacher):
        ranked = [s[j] for j in sorted(range(len(t)), key=lambda j: -t[j])]
        total += sum(math.log(sum(math.exp(x) for x in ranked[k:])) - ranked[k] for k in range(len(ranked)))
    return total / len(scores)


def test_list_mle_is_the_plackett_luce_likelihood_of_the_teacher_order():
    expected = plackett_luce_nll(SCORES, TEACHER)
    assert list_mle(torch.tensor(SCORES), torch.tensor(TEACHER)).item() == pytest.approx(expected, abs=1e-5)
    # only the teacher's order counts: any increasing transform of its scores gives the same loss
    assert list_mle(torch.tensor(SCORES), torch.tensor(TEACHER) * 7 - 3).item() == pytest.approx(expected, abs=1e-5)
    # a student that agrees with the teacher's order scores lower than one that reverses it
    agree = list_mle(torch.tensor(TEACHER) * 10, torch.tensor(TEACHER))
    reverse = list_mle(-torch.tensor(TEACHER) * 10, torch.tensor(TEACHER))
    assert agree < reverse
    # the community code's commit 338e00d: the same likelihood divided by the list length
    n = len(TEACHER[0])
    mean = list_mle(torch.tensor(SCORES), torch.tensor(TEACHER), reduction="mean").item()
    assert mean == pytest.approx(expected / n, abs=1e-5)


def test_bad_teacher_settings_are_named():
    assert parse_teachers("simcse:1, simcse_sup:42") == [("simcse", 1), ("simcse_sup", 42)]
    with pytest.raises(SreError, match="not method:seed"):
        resolve(overrides={"method": "rankcse", "teachers": "diffcse"})
    with pytest.raises(SreError, match="one or two"):
        resolve(overrides={"method": "rankcse", "teachers": "simcse:1,simcse:2,simcse:3"})
    with pytest.raises(SreError, match="teacher_alpha"):
        resolve(overrides={"method": "rankcse", "teacher_alpha": 1.5})
    with pytest.raises(SreError, match="unknown byop 'both'"):
        resolve(overrides={"method": "rankcse", "byop": "both"})


def test_teachers_are_trained_once_frozen_and_wired_into_the_loss(data_dir):
    from sre_repro import runs
    from sre_repro.train import seed_everything, trained_method

    cfg = resolve(overrides={"method": "rankcse", "scale": "smoke", "teachers": "simcse:7", "byop": "dynamic",
                             "perturbation": "p+n-", "gamma": 0.5})
    assert RankCSE.dependencies(cfg) == {"teacher 1": {"method": "simcse", "seed": 7, "scale": "smoke",
                                                       "model_name": "tiny-random", "precision": "fp32",
                                                       "device": "auto", "train_data": "wiki1m"}}

    def build():  # as the trainer does: the teachers first (trained once into the test's store), then the seed
        teachers = {name: trained_method(o, "cpu", data_dir) for name, o in RankCSE.dependencies(cfg).items()}
        seed_everything(cfg["seed"])
        return RankCSE.build(cfg, "cpu", data_dir, teachers)

    method = build()
    after_training = torch.rand(1)
    saved = list((runs.work_dir() / "models").glob("simcse-*.pt"))
    assert len(saved) == 1
    stamp = saved[0].stat().st_mtime_ns
    method = build()  # served from the cache, same random state afterwards
    assert saved[0].stat().st_mtime_ns == stamp and torch.equal(torch.rand(1), after_training)

    teacher = method._teachers[0]
    assert teacher.kept_file == saved[0] and method._teacher_keys == [f"{saved[0].name}:{stamp}"]  # the cache's key
    assert not teacher.training and not any(p.requires_grad for p in teacher.parameters())
    assert not any(name.startswith("_teachers") for name, _ in method.named_parameters())

    sentences = ["a cat sat on the mat", "dogs bark at night", "the sun is hot", "rain again today"]
    method.eval()  # no dropout: the views are equal, so the loss is a function of z alone
    batch = method.collate(sentences)
    z1, z2 = method.encoder.embed(batch, pooler=method.train_pooler).chunk(2)
    t = teacher.encoder.embed(teacher.encoder.tokenize(sentences, cfg["max_len"]), pooler=teacher.cfg["eval_pooler"])
    contrastive = margin_info_nce(z1, z2, 0.05, "p+n-", lambda c: dynamic_margin(c, "anchor"), "single")["loss"]
    ranking = list_mle(cosine_matrix(z1, z2) / 0.05, cosine_matrix(t, t))
    terms = method.loss(batch)
    assert torch.allclose(terms["loss"], contrastive + 0.5 * ranking, atol=1e-6)
    assert not torch.allclose(contrastive, info_nce(z1, z2, 0.05))  # the BYOP margin is really applied
    terms["loss"].backward()
    assert method.encoder.model.embeddings.word_embeddings.weight.grad.abs().sum() > 0  # gradients reach the PLM

    # the teacher's similarities of a batch are kept: a second run of the same batches (another row of Table 3)
    # gets the very values encoding gives, without encoding again, and draws no random numbers meanwhile
    from sre_repro.methods import rankcse

    calls = []
    encode = teacher.encoder.embed
    teacher.encoder.embed = lambda *args, **kwargs: calls.append(1) or encode(*args, **kwargs)
    rankcse._teacher_cosines.clear()
    rankcse._cached_bytes = 0
    first = method.teacher_scores(batch)
    assert len(calls) == 1 and torch.equal(first, cosine_matrix(t, t))
    again = build()  # the next run: a new module, the same kept teacher
    again._teachers[0].encoder.embed = teacher.encoder.embed
    assert torch.equal(again.teacher_scores(batch), first) and len(calls) == 1
    other = method.collate(sentences[::-1])
    state = torch.get_rng_state()
    assert not torch.equal(method.teacher_scores(other), first) and len(calls) == 2  # another batch is encoded
    assert torch.equal(torch.get_rng_state(), state)  # encoding or not leaves the student's random stream alone
    # least recently used first out: a cap of one matrix keeps only the latest batch
    cap, rankcse.TEACHER_CACHE_BYTES = rankcse.TEACHER_CACHE_BYTES, first.numel() * first.element_size()
    try:
        method.teacher_scores(method.collate(sentences[:3]))
        assert len(calls) == 3 and len(rankcse._teacher_cosines) == 1
        assert rankcse._cached_bytes == 3 * 3 * first.element_size()
        assert torch.equal(method.teacher_scores(batch), first) and len(calls) == 4  # dropped, so encoded again
    finally:
        rankcse.TEACHER_CACHE_BYTES = cap


def test_a_run_s_record_names_the_weights_it_started_from(data_dir):
    """A dependent run records, per start, which weights it was given (train.weights_provenance): here a teacher
    with no record of its own, trained once for its weights, counts as its own."""
    from sre_repro.train import train

    record = train({"method": "rankcse", "scale": "smoke", "teachers": "simcse:9", "max_steps": 4, "eval_steps": 2},
                   data_dir=data_dir)
    start = record["starts_from"]["teacher 1"]
    assert start["created"] is None and start["weights"]["same"] and start["weights"]["record"] is None
    assert start["weights"]["weights"]["best_step"] > 0 and start["weights"]["weights"]["hardware"] == "CPU"
