"""PT-BERT: the two-step attention against a direct computation, the code reading's degenerate pseudo
tokens, the momentum update, the queue, the augmentations and the bad inputs."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from sre_repro.config import resolve
from sre_repro.errors import SreError
from sre_repro.methods.common import cosine_matrix
from sre_repro.methods.pt_bert import PTBERT, PseudoAttention, augment, augment_one
from sre_repro.train import Interrupted, train

SENTENCES = ["a man is playing a guitar.", "the cat sat on the mat.", "hello.", "two dogs run in the snow today."]


def build(**overrides):
    torch.manual_seed(0)
    return PTBERT.build(resolve(overrides={"method": "pt_bert", "scale": "smoke", **overrides}), "cpu")


def without_dropout(method):
    for module in method.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    for model in (method.encoder.model, method.key_model):
        model.config.attention_probs_dropout_prob = model.config.hidden_dropout_prob = 0.0
    return method


def test_attention_against_a_direct_computation_with_padding_masked():
    torch.manual_seed(0)
    attention = PseudoAttention(d=4, heads=2, dropout=0.0)
    queries, memory = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    out = attention(queries, memory, mask)
    for b in range(2):
        n = int(mask[b].sum())
        q, k, v = attention.query(queries[b]), attention.key(memory[b, :n]), attention.value(memory[b, :n])
        heads = [torch.softmax(q[:, h * 2:(h + 1) * 2] @ k[:, h * 2:(h + 1) * 2].T / math.sqrt(2), -1) @ v[:, h * 2:(h + 1) * 2]
                 for h in range(2)]
        assert torch.allclose(out[b], torch.cat(heads, -1), atol=1e-6)
    changed = memory.clone()
    changed[0, 3:] = 100.0  # what padding holds never matters
    assert torch.allclose(attention(queries, changed, mask)[0], out[0], atol=1e-6)


def test_code_reading_makes_the_pseudo_tokens_degenerate_and_the_paper_reading_does_not():
    batch = None
    for y_source, depends in (("pooled", False), ("tokens", True)):
        method = build(y_source=y_source).eval()
        batch = method.encoder.tokenize(SENTENCES)
        y, mask = method.states(method.encoder.model, batch)
        with torch.no_grad():
            before = method.head(y, mask)
            method.head.pseudo.weight.normal_()  # other pseudo tokens
            after = method.head(y, mask)
        assert torch.allclose(before, after, atol=1e-5) is not depends, y_source
    assert batch is not None


def test_momentum_update_against_a_hand_computation():
    method = build()
    online, key = method.head.attention.query.weight, method.key_head.attention.query.weight
    with torch.no_grad():
        online.fill_(1.0)
        key.fill_(3.0)
    method.momentum_update()
    assert torch.allclose(key, torch.full_like(key, 0.885 * 3.0 + 0.115 * 1.0))
    assert torch.equal(online, torch.ones_like(online))
    # a copy-initialised key encoder starts equal to the online one; the code's random one does not
    first = lambda m: next(iter(m.parameters()))  # noqa: E731
    assert torch.equal(first(build().key_model), first(build().encoder.model))
    assert not torch.equal(first(build(key_init="random").key_model), first(build().encoder.model))


def test_queue_is_first_in_first_out_and_bounded():
    method = build(queue_keys=8, batch_size=4)
    a, b, c = torch.full((4, 128), 1.0), torch.full((4, 128), 2.0), torch.full((4, 128), 3.0)
    method.enqueue(a)
    assert int(method.queue_filled) == 4 and torch.equal(method.queue[:4], a)
    method.enqueue(b)
    method.enqueue(c)  # a falls out
    assert int(method.queue_filled) == 8 and torch.equal(method.queue, torch.cat([c, b]))


def test_loss_against_a_direct_computation_and_the_positive_never_in_the_queue():
    method = without_dropout(build(queue_keys=8, batch_size=4)).train()
    batch = method.collate(SENTENCES)
    first = method.loss(batch)["loss"]
    with torch.no_grad():
        h = method.head(*method.states(method.encoder.model, batch["online"]))
        k = method.keys(batch["key"])
    labels = torch.arange(4)
    assert first.item() == pytest.approx(F.cross_entropy(cosine_matrix(h, k) / 0.05, labels).item(), abs=1e-5)
    # the second step sees the first batch's keys only in the queue; its positives are this batch's keys
    assert torch.allclose(method.queue[:4], k, atol=1e-6)
    second = method.loss(batch)["loss"]
    logits = torch.cat([cosine_matrix(h, k), cosine_matrix(h, k)], 1) / 0.05
    assert second.item() == pytest.approx(F.cross_entropy(logits, labels).item(), abs=1e-4)
    assert int(method.queue_filled) == 8


def test_interrupted_run_resumes_to_identical_numbers_queue_included(tmp_path):
    settings = {"method": "pt_bert", "scale": "smoke", "queue_keys": 16, "augmentation": "deletion", "augment_rate": 0.3}
    whole = train(settings, results_root=tmp_path / "a", work_root=tmp_path / "wa")
    kwargs = dict(results_root=tmp_path / "b", work_root=tmp_path / "wb")
    with pytest.raises(Interrupted):
        train({**settings, "checkpoint_steps": 2}, interrupt_at_step=4, **kwargs)
    resumed = train({**settings, "checkpoint_steps": 2}, **kwargs)
    assert [p["loss"] for p in resumed["dev_curve"]] == [p["loss"] for p in whole["dev_curve"]]
    assert resumed["metrics"]["sts"] == whole["metrics"]["sts"]
    attention = whole["metrics"]["pseudo_attention"][0]
    assert len(attention["weights"]) == 128 and all(sum(row) == pytest.approx(1, abs=1e-3) for row in attention["weights"])


def test_augmentations_on_a_hand_example():
    ids, mask = torch.tensor([101, 11, 12, 13, 14, 15, 16, 102]), torch.ones(8, dtype=torch.long)
    torch.manual_seed(0)
    shuffled, same_mask = augment_one(ids, mask, "reorder", 0.1)
    assert shuffled[0] == 101 and sorted(shuffled[1:].tolist()) == sorted(ids[1:].tolist()) and torch.equal(same_mask, mask)
    longer, longer_mask = augment_one(ids, mask, "duplication", 0.25)  # int(0.25 * 8) = 2 copies
    assert len(longer) == 10 and longer[0] == 101 and longer_mask.sum() == 10
    assert set(longer.tolist()) == set(ids.tolist())
    assert len(longer) - len(set(longer.tolist())) == 2  # each copy repeats a token that was there
    kept, holes = augment_one(ids, mask, "deletion", 0.25)  # 2 positions drawn in [1, 7]
    assert torch.equal(kept, ids) and holes[0] == 1 and 1 <= int((holes == 0).sum()) <= 2
    with pytest.raises(SreError, match="unknown augmentation"):
        augment_one(ids, mask, "swap", 0.1)
    # in a batch each sentence is augmented with probability 1/3, and padding is restored
    torch.manual_seed(0)
    batch_ids, batch_mask = ids.repeat(600, 1), mask.repeat(600, 1)
    _, out_mask = augment(batch_ids, batch_mask, "deletion", 0.25)
    share = (out_mask.sum(1) < 8).float().mean().item()
    assert 0.28 < share < 0.39


@pytest.mark.parametrize("overrides, message", [
    ({"pseudo_length": 0}, "pseudo_length must be positive"),
    ({"queue_keys": 4}, "queue_keys 4 is smaller than a batch"),
    ({"momentum": 1.0}, "momentum must lie in"),
    ({"augmentation": "swap"}, "unknown augmentation"),
    ({"y_source": "cls"}, "unknown y_source"),
])
def test_bad_input_names_the_fix(overrides, message):
    with pytest.raises(SreError, match=message):
        resolve(overrides={"method": "pt_bert", "scale": "smoke", **overrides})


def test_hard_subset_counts_against_a_direct_filter():
    import numpy as np

    from sre_repro.data.sts import StsPairs, load_task
    from sre_repro.evaluate.hard_subset import evaluate_hard_subset, hard_pairs, hard_subsets

    # the spec's counts (positives + negatives per year), default and strict thresholds
    assert [(p, n) for _, p, n in hard_subsets().values()] == [(341, 321), (68, 403), (468, 651), (169, 603), (42, 292)]
    strict = hard_subsets(positive_min=4.0, negative_max=1.0, negative_inclusive=True)
    assert [(p, n) for _, p, n in strict.values()] == [(99, 184), (18, 248), (176, 322), (31, 296), (20, 200)]
    year = StsPairs.concat(list(load_task("STS16").values()))
    direct = [i for i, (a, b, g) in enumerate(zip(year.sent1, year.sent2, year.gold))
              if (g >= 2.5 and abs(len(a.split()) - len(b.split())) > 5) or (g < 2.5 and abs(len(a.split()) - len(b.split())) < 2)]
    kept, _, _ = hard_pairs(year)
    assert kept.sent1 == [year.sent1[i] for i in direct] and np.array_equal(kept.gold, year.gold[direct])
    with pytest.raises(SreError, match="negative_max 3.0 is above positive_min"):
        hard_pairs(year, negative_max=3.0)
    # scored like the STS tasks: Spearman of the cosines over each year's kept pairs, x 100
    import zlib
    random_vectors = lambda sentences: np.array([np.random.default_rng(zlib.crc32(s.encode())).normal(size=8)  # noqa: E731
                                          for s in sentences])  # a fixed random vector per sentence
    result = evaluate_hard_subset(random_vectors)
    assert result["n_positive"]["STS16"] == 42 and set(result["scores"]) == {"STS12", "STS13", "STS14", "STS15", "STS16", "avg"}
    assert result["scores"]["avg"] == pytest.approx(np.mean([result["scores"][y] for y in ("STS12", "STS13", "STS14", "STS15", "STS16")]))
    from scipy import stats
    pairs = hard_subsets()["STS16"][0]
    a, b = random_vectors(pairs.sent1), random_vectors(pairs.sent2)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert result["scores"]["STS16"] == pytest.approx(100 * stats.spearmanr(cos, pairs.gold).statistic, abs=1e-6)


def test_h_embedding_keeps_the_sentence_order_and_feeds_figure_3():
    method = build()
    sentences = ["a much longer sentence than the others here.", "short.", "a middle one."]
    together = method.encode_h(sentences)
    one_by_one = [method.encode_h([s])[0] for s in sentences]
    assert all(torch.allclose(torch.tensor(a), torch.tensor(b), atol=1e-5) for a, b in zip(together, one_by_one))
    method.data_dir = None
    dev = method.dev_metrics()
    assert {"stsb_dev", "alignment", "uniformity", "h_alignment", "h_uniformity"} <= set(dev)


def test_the_chapter_at_paper_scale_on_bert_base_is_a_valid_call():
    """`papermill notebooks/pt_bert.ipynb out.ipynb -p scale paper -p model_name bert-base-uncased`: every run the
    chapter would start resolves to a validated config with the official recipe."""
    from sre_repro import book
    from sre_repro.chapters import pt_bert as chapter

    base = {"scale": "paper", "model_name": "bert-base-uncased"}
    rows = chapter.variants(chapter.grid("augmentations", "paper"))
    configs = [resolve(overrides={"method": "pt_bert", **base, **o, "seed": s}) for o in rows.values() for s in book.seeds("paper")]
    configs += [resolve(overrides={"method": "pt_bert", **base, "pseudo_length": n}) for n in chapter.grid("pseudo_lengths", "paper")]
    configs += [resolve(overrides={"method": "pt_bert", **base, "queue_keys": n}) for n in chapter.grid("queue_sizes", "paper")]
    configs += [resolve(overrides={"method": "simcse", **base, "max_len": n}) for n in chapter.grid("simcse_max_lens", "paper")]
    assert {c["model_name"] for c in configs} == {"bert-base-uncased"} and len(configs) == 6 * 3 + 5 + 3 + 3
    main = configs[0]
    assert (main["batch_size"], main["lr"], main["max_len"], main["pseudo_length"], main["queue_keys"], main["momentum"],
            main["temperature"], main["eval_pooler"], main["h_pool"]) == (64, 3e-5, 64, 128, 256, 0.885, 0.05, "cls", "cls")
    assert chapter.grid("pseudo_lengths", "paper") == [64, 90, 128, 256, 360]


def test_paper_gains_and_the_hard_subset_of_a_record():
    from sre_repro.chapters import pt_bert as chapter

    gains = chapter.paper_gains()
    assert gains["pt_bert"] == pytest.approx(77.74 - 76.25) and gains["pseudo"] == pytest.approx(77.74 - 75.46)
    full_gain = (71.20 + 83.76 + 76.34 + 82.63 + 78.90) / 5 - (68.40 + 82.41 + 74.38 + 80.91 + 78.56) / 5
    assert gains["hard_vs_full"] == pytest.approx(74.44 - 71.08 - full_gain)
    record = {"metrics": {"hard_subset": {"scores": {y: 50.0 + i for i, y in enumerate(["STS12", "STS13", "STS14", "STS15", "STS16"])} | {"avg": 52.0},
                                          "n_positive": {"STS12": 3}, "n_negative": {"STS12": 4}},
                          "sts": {y: 60.0 for y in ["STS12", "STS13", "STS14", "STS15", "STS16"]}}}
    table = chapter.hard_table({"PT-BERT": [record, record]}, with_full=True)
    assert list(table.loc["PT-BERT: hard subset"]) == [50.0, 51.0, 52.0, 53.0, 54.0, 52.0]
    assert table.loc["PT-BERT: full STS12-16", "Avg."] == 60.0
    assert chapter.hard_counts(record).loc["negative pairs", "STS12"] == 4
    with pytest.raises(SreError, match="unknown thresholds"):
        chapter.hard_subset(record, thresholds="loose")


def test_effects_over_simcse_subtract_simcse_on_each_rows_own_seeds():
    from sre_repro.chapters.pt_bert import effects_over_simcse

    def run(seed, avg):
        return {"seed": seed, "metrics": {"sts": {"avg": avg}}}
    simcse = [run(42, 50.0), run(43, 52.0), run(44, 54.0), run(45, 70.0)]  # seed 45 would pull a six-seed mean up
    table = effects_over_simcse({"SimCSE": simcse, "MoCo-BERT + reorder": [run(42, 51.0), run(43, 51.0), run(44, 51.0)]})
    row = table.loc["MoCo-BERT + reorder"]
    assert row["ours: minus SimCSE"] == pytest.approx(((51 - 50) + (51 - 52) + (51 - 54)) / 3)
    assert row["paper: minus SimCSE"] == pytest.approx(73.78 - 76.25)
    assert row["our seeds (SimCSE's the same)"] == "42, 43, 44"


def test_mean_curve_gap_is_per_seed_the_mean_of_the_curve_differences():
    from sre_repro.chapters.pt_bert import mean_curve_gap
    worse = [{"seed": s, "dev_curve": [{"step": 10, "uniformity": -1.0 + s}, {"step": 20, "uniformity": -2.0 + s}]} for s in (1, 2)]
    better = [{"seed": s, "dev_curve": [{"step": 10, "uniformity": -1.5 + s}, {"step": 20, "uniformity": -3.0 + s}]} for s in (2, 1)]
    assert mean_curve_gap(better, worse, "uniformity").tolist() == [0.75, 0.75]


def test_share_of_steps_lower_counts_the_shared_steps_where_the_method_lies_below():
    from sre_repro.chapters.pt_bert import share_of_steps_lower
    worse = [{"seed": 1, "dev_curve": [{"step": t, "alignment": 0.5} for t in (5, 10, 15, 20)]}]
    # below at steps 5 and 15, equal at 10 (not below), above at 20; step 25 is not shared
    better = [{"seed": 1, "dev_curve": [{"step": 5, "alignment": 0.4}, {"step": 10, "alignment": 0.5},
                                         {"step": 15, "alignment": 0.1}, {"step": 20, "alignment": 0.9}, {"step": 25, "alignment": 0.0}]}]
    assert share_of_steps_lower(better, worse, "alignment") == {1: 0.5}


def test_length_control_matches_each_long_gap_pair_to_the_nearest_gold_short_gap_pair():
    from sre_repro.data.sts import StsPairs
    from sre_repro.evaluate.hard_subset import matched_on_gold
    one, seven = "a", "a b c d e f g h"  # gaps: 0 between equals, 7 between these two
    pairs = StsPairs([one, seven, one, one, seven, one], [seven, seven, one, seven, one, one],
                     np.array([3.0, 2.9, 3.2, 1.0, 4.0, 3.05]))
    # long-gap pairs 0 (3.0), 3 (1.0), 4 (4.0); short-gap 1 (2.9), 2 (3.2), 5 (3.05); in order of gold: 3, 0, 4
    # 3 finds nothing within 0.25; 0 takes 5 (0.05 away); 4 finds nothing (the nearest left, 2, is 0.8 away)
    assert matched_on_gold(pairs) == [(0, 5)]
    assert matched_on_gold(pairs, tolerance=1.0) == [(0, 5), (4, 2)]  # 3: 1.9 away from 2.9; 4 takes 2 (0.8)
    ties = StsPairs([seven, one, one], [one, one, one], np.array([3.0, 2.8, 3.2]))
    assert matched_on_gold(ties) == [(0, 1)]  # equally near: the earlier pair


def test_an_encoder_that_reads_length_shows_in_the_control_and_a_blind_one_does_not():
    from sre_repro.evaluate.hard_subset import YEARS, evaluate_length_control

    def by_length(sentences):  # the sentence's length in words, nothing else
        return np.array([[1.0, len(s.split()) / 10] for s in sentences])

    def blind(sentences):  # a fixed random vector per sentence, whatever its length
        return np.array([np.random.default_rng(abs(hash(s)) % 2**32).normal(size=8) for s in sentences])
    reads = evaluate_length_control(by_length)
    assert all(reads["years"][y]["n"] > 10 and reads["years"][y]["lift"] > 0.5 for y in YEARS)
    assert abs(evaluate_length_control(blind)["avg"]["lift"]) < 0.2


def test_h_test_scores_h_as_a_direct_one_sentence_at_a_time_computation(monkeypatch):
    """The "h_test" record (the official code's `return_poly`): its h scores equal the Spearman of cosines of h
    computed directly, one sentence at a time, and its encoder scores those of the encoder."""
    from scipy.stats import spearmanr

    from sre_repro.evaluate import cached
    from sre_repro.evaluate.sts import stsb_test

    method = build().eval()
    monkeypatch.setattr(cached, "trained_method", lambda run, data_dir=None: method)
    result = cached.COMPUTE["h_test"]({"run": method.cfg, "max_pairs": 24})
    pairs = stsb_test(None, 24)

    def direct(embed):
        with torch.no_grad():
            cos = [F.cosine_similarity(embed(a), embed(b)).item() for a, b in zip(pairs.sent1, pairs.sent2)]
        return 100 * spearmanr(cos, pairs.gold).statistic

    h = direct(lambda s: method.head(*method.states(method.encoder.model, method.encoder.tokenize([s]))))
    encoder = direct(lambda s: torch.tensor(method.encode([s])))
    assert result["h"]["sts"]["STSBenchmark"] == pytest.approx(h, abs=0.05)
    assert result["encoder"]["sts"]["STSBenchmark"] == pytest.approx(encoder, abs=0.05)
    assert abs(h - encoder) > 0.05  # two embeddings, two scores: the test tells them apart
    assert set(result["h"]["hard_subset"]) == {"STS12", "STS13", "STS14", "STS15", "STS16", "avg"}


def test_the_loss_is_compared_from_the_first_interval_wholly_after_the_queue_filled():
    from sre_repro.chapters.pt_bert import loss_table, queue_full_step
    cfg = {"batch_size": 64, "queue_keys": 256, "eval_steps": 5}
    assert queue_full_step(cfg) == 5  # four batches of 64 enqueued before step 5
    curve = [{"step": 5, "loss": 0.5}, {"step": 10, "loss": 0.2}, {"step": 15, "loss": 0.1}, {"step": 20, "loss": 0.05}]
    run = {"seed": 42, "config": cfg, "dev_curve": curve, "metrics": {"best_step": 15}, "training": {"loss_kept": 9.0}}
    table = loss_table({"PT-BERT": [run]})
    row = table.loc["PT-BERT (seed 42)"]
    # steps 1-5 include the empty-queue steps 1-4; steps 6-10 is the first interval wholly after (shown as a step)
    assert row["first full-queue interval ends at step"] == 10 and table["first full-queue interval ends at step"].dtype.kind == "i"
    assert row["loss there"] == 0.2 and row["loss at the kept step"] == 0.1 and row["fell (%)"] == 50.0
    assert row["trivial (ln candidates)"] == round(np.log(320), 4)  # shown to four places
