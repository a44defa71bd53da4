"""SLT-FAI and ConSERT: the frequency labels against the counts file, the gradient reversal layer, each
ConSERT augmentation on a hand example, NT-Xent against a direct computation, the ISF masking rules, the
warm-up, the AT loss's averaging, the ablation identities and the bad inputs."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sre_repro.config import resolve
from sre_repro.data.corpora import bookcorpus_token_counts
from sre_repro.errors import SreError
from sre_repro.evaluate.frequency import _probe_accuracy, _separation, frequency_labels, label_statistics, low_threshold
from sre_repro.methods.consert import ConSERT
from sre_repro.methods.common import GradientReversal
from sre_repro.methods.slt_fai import SLTFAI, at_loss, grl_coefficient, isf_mask, majority_share, warmup_done
from sre_repro.train import Interrupted, train
from sre_repro.views import nt_xent, view_inputs

SENTENCES = ["a man is playing a bamboo flute.", "the cat sat on the mat.", "hello.", "two dogs run in the snow."]


def build(cls=SLTFAI, data_dir=None, **overrides):
    torch.manual_seed(0)
    method = "slt_fai" if cls is SLTFAI else "consert"
    return cls.build(resolve(overrides={"method": method, "scale": "smoke", **overrides}), "cpu", data_dir)


@pytest.fixture(scope="module")
def counts(data_dir):
    return bookcorpus_token_counts(data_dir)


@pytest.mark.parametrize("rate, threshold, low", [(0.1, 168, 5_745), (0.5, 2_945, 16_758), (0.9, 28_938, 27_769)])
def test_labels_and_thresholds_match_the_counts_file(counts, rate, threshold, low):
    # by hand: 2,994 wordpieces have count 0; the threshold is the sorted count at 2,994 + int(27,528 * rate)
    assert sum(1 for c in counts.values() if c == 0) == 2_994
    assert low_threshold(counts, rate) == threshold
    vocab = {token: i for i, token in enumerate(counts)}
    labels, thr = frequency_labels(counts, vocab, rate)
    assert thr == threshold and int(labels.sum()) == low
    # special tokens and padding have count 0: LOW; "the" is HIGH; "bamboo" LOW and "flute" HIGH at 0.5
    for token in ("[PAD]", "[CLS]", "[SEP]", "[MASK]"):
        assert labels[vocab[token]] == 1
    assert labels[vocab["the"]] == 0
    if rate == 0.5:
        assert labels[vocab["bamboo"]] == 1 and labels[vocab["flute"]] == 0 and labels[vocab["hanged"]] == 1


def test_label_statistics_rows(counts):
    row, = label_statistics(counts, [0.5])
    assert row["low_types"] == 16_758 and row["threshold"] == 2_945
    total = sum(counts.values())
    assert math.isclose(row["low_share_of_occurrences"], sum(c for c in counts.values() if c < 2_945) / total)


def test_a_counts_file_for_another_vocabulary_is_refused(counts):
    vocab = {"hello": 0, "wörld": 1}
    with pytest.raises(SreError, match="another vocabulary"):
        frequency_labels(counts, vocab, 0.5)


def test_gradient_reversal_is_the_identity_forward_and_negates_the_gradient():
    x = torch.randn(3, 4, requires_grad=True)
    y = GradientReversal.apply(x)
    assert torch.equal(y, x)
    w = torch.randn(3, 4)
    (y * w).sum().backward()
    assert torch.equal(x.grad, -w)


def test_gradient_reversal_scales_the_reversed_gradient_by_its_coefficient():
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(3, 4)
    (GradientReversal.apply(x, 0.25) * w).sum().backward()
    assert torch.allclose(x.grad, -0.25 * w)


def test_the_grl_coefficient_is_one_or_danns_ramp_over_the_run():
    cfg = {"grl_schedule": "constant", "max_steps": 600, "epochs": 1}
    assert grl_coefficient(0, cfg, 100) == grl_coefficient(599, cfg, 100) == 1.0
    dann = {**cfg, "grl_schedule": "dann"}
    # by hand: 2 / (1 + exp(-10 p)) - 1 at p = 0, 0.1 (step 60 of 600) and 1
    assert grl_coefficient(0, dann, 100) == 0.0
    assert math.isclose(grl_coefficient(60, dann, 100), 2 / (1 + math.exp(-1)) - 1)
    assert math.isclose(grl_coefficient(600, dann, 100), 2 / (1 + math.exp(-10)) - 1)
    # without a step cap, p counts the epochs' steps: step 150 of 2 x 100 is p = 0.75
    assert math.isclose(grl_coefficient(150, {**dann, "max_steps": 0, "epochs": 2}, 100), 2 / (1 + math.exp(-7.5)) - 1)


def test_balanced_class_weights_make_the_base_rate_guess_cost_more_than_ln2():
    # three HIGH positions and one LOW: the base-rate guess P(LOW) = 1/4 at every position
    targets = torch.tensor([[0, 0, 0, 1]])
    positions = torch.ones_like(targets, dtype=torch.bool)
    logits = torch.log(torch.tensor([0.75, 0.25])).expand(1, 4, 2)
    plain, _ = at_loss(logits, targets, positions, per_sentence=False)
    balanced, _ = at_loss(logits, targets, positions, per_sentence=False, balanced=True)
    entropy = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert math.isclose(float(plain), entropy, rel_tol=1e-6)  # plain CE: the guess sits at the labels' entropy
    assert math.isclose(float(balanced), 0.5 * (-math.log(0.75) - math.log(0.25)), rel_tol=1e-6)
    assert float(balanced) > math.log(2) > float(plain)
    # a guess of one half costs ln 2 under both
    even = torch.zeros(1, 4, 2)
    assert math.isclose(float(at_loss(even, targets, positions, False, balanced=True)[0]), math.log(2), rel_tol=1e-6)


def test_balanced_class_weights_follow_eq4s_per_sentence_average():
    # sentence 1: one LOW and one HIGH word token; sentence 2: four HIGH. Eq. 4 averages per sentence, so the LOW
    # share the weights balance is (1/2 + 0/4) / 2 = 1/4, not the pooled 1/6
    targets = torch.tensor([[1, 0, 0, 0], [0, 0, 0, 0]])
    positions = torch.tensor([[True, True, False, False], [True, True, True, True]])
    for p in (0.5, 0.25, 0.1):  # every constant guess P(LOW) = p costs 0.5 (-ln p) + 0.5 (-ln (1 - p)) >= ln 2
        logits = torch.log(torch.tensor([1 - p, p])).expand(2, 4, 2)
        loss, _ = at_loss(logits, targets, positions, per_sentence=True, balanced=True)
        assert math.isclose(float(loss), 0.5 * (-math.log(p) - math.log(1 - p)), rel_tol=1e-6)
    # by hand at p = 1/4: sentence 1 = (2 (-ln 1/4) + 2/3 (-ln 3/4)) / 2, sentence 2 = 2/3 (-ln 3/4)
    logits = torch.log(torch.tensor([0.75, 0.25])).expand(2, 4, 2)
    plain, _ = at_loss(logits, targets, positions, per_sentence=True)
    assert math.isclose(float(plain), ((-math.log(0.25) - math.log(0.75)) / 2 - math.log(0.75)) / 2, rel_tol=1e-6)


def test_shuffle_permutes_the_positions_of_the_real_tokens_only():
    torch.manual_seed(1)
    mask = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]])
    positions, keep = view_inputs(mask, hidden=8, kind="shuffle", rate=0.0)
    assert keep is None
    assert sorted(positions[0, :4].tolist()) == [0, 1, 2, 3] and positions[0, 4:].tolist() == [4, 5]
    assert sorted(positions[1].tolist()) == list(range(6))


def test_cutoffs_zero_what_they_should():
    torch.manual_seed(2)
    mask = torch.tensor([[1] * 10 + [0] * 2])
    _, keep = view_inputs(mask, hidden=20, kind="token_cutoff", rate=0.2)
    rows_off = (keep[0] == 0).all(1)
    assert int(rows_off.sum()) == 2 and not rows_off[10:].any()          # int(10 * 0.2) whole rows among the first 10
    assert ((keep[0] == 0).any(1) == rows_off).all()                     # nothing else zeroed
    _, keep = view_inputs(mask, hidden=20, kind="feature_cutoff", rate=0.2)
    cols_off = (keep[0] == 0).all(0)
    assert int(cols_off.sum()) == 4 and ((keep[0] == 0).any(0) == cols_off).all()  # int(20 * 0.2) columns, every position
    _, keep = view_inputs(mask, hidden=20, kind="dropout", rate=0.1)
    assert int((keep[0] == 0).sum()) == 20 and (keep[0, 10:] == 1).all()  # int(10 * 20 * 0.1) elements, first 10 rows


def test_the_shuffled_view_moves_positions_not_tokens(data_dir):
    from sre_repro.views import augmented_forward

    method = build(data_dir=data_dir).eval()
    batch = method.encoder.tokenize(SENTENCES)
    ids, mask = batch["input_ids"], batch["attention_mask"]
    torch.manual_seed(3)
    positions, _ = view_inputs(mask, method.encoder.hidden_size, "shuffle", 0.0)
    torch.manual_seed(3)
    hidden = augmented_forward(method.encoder.model, mask, [(ids, "shuffle", 0.0)], method.encoder.hidden_size)
    # the same ids at the same places, read with the permuted position ids: so token labels stay aligned
    direct = method.encoder.model(input_ids=ids, attention_mask=mask, position_ids=positions).last_hidden_state
    assert torch.allclose(hidden[-1], direct, atol=1e-5)
    plain = method.encoder.model(input_ids=ids, attention_mask=mask).last_hidden_state
    assert not torch.allclose(hidden[-1], plain, atol=1e-3)


def test_nt_xent_against_a_direct_computation_on_3x3():
    torch.manual_seed(4)
    z1, z2, tau = torch.randn(3, 5), torch.randn(3, 5), 0.1
    a, b = F.normalize(z1, dim=-1), F.normalize(z2, dim=-1)
    total = 0.0
    for x, y in ((a, b), (b, a)):
        for i in range(3):
            positive = math.exp(float(x[i] @ y[i]) / tau)
            denominator = sum(math.exp(float(x[i] @ y[j]) / tau) for j in range(3)) + \
                sum(math.exp(float(x[i] @ x[j]) / tau) for j in range(3) if j != i)
            total += -math.log(positive / denominator) / 3
    assert math.isclose(float(nt_xent(z1, z2, tau)), total, rel_tol=1e-5)


def test_each_masking_rule_masks_what_it_says_and_never_special_tokens():
    labels = torch.tensor([1, 1, 1, 0, 0, 1, 1])        # ids 0 [PAD], 1 [CLS], 2 [SEP]: special, LOW; 3, 4 HIGH; 5, 6 LOW
    special = torch.tensor([True, True, True, False, False, False, False])
    ids = torch.tensor([[1, 3, 5, 4, 6, 2, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1, 0]])
    masked = isf_mask(ids, mask, labels, special, "low", 1.0, mask_id=99)
    assert masked.tolist() == [[1, 3, 99, 4, 99, 2, 0]]  # every low word, no special or padding
    masked = isf_mask(ids, mask, labels, special, "high", 1.0, mask_id=99)
    assert masked.tolist() == [[1, 99, 5, 99, 6, 2, 0]]
    assert torch.equal(isf_mask(ids, mask, labels, special, "high", 0.0, mask_id=99), ids)
    torch.manual_seed(5)
    many = ids.repeat(4000, 1)
    share = (isf_mask(many, mask.repeat(4000, 1), labels, special, "low", 0.2, mask_id=99) == 99).float().sum() / (2 * 4000)
    assert abs(float(share) - 0.2) < 0.02  # each low word with probability epsilon


def test_warmup_switches_on_at_the_stated_step():
    cfg = {"aux_warmup_steps": -1, "warmup_epochs": 0.5, "warmup_rule": "once"}
    assert [warmup_done(s, cfg, 10) for s in (0, 4, 5, 15)] == [False, False, True, True]
    every = {**cfg, "warmup_rule": "every_epoch"}  # the code: off in the first half of EVERY epoch
    assert [warmup_done(s, every, 10) for s in (4, 5, 10, 14, 15)] == [False, True, False, False, True]
    one = {**cfg, "warmup_epochs": 1.0, "warmup_rule": "every_epoch"}
    assert [warmup_done(s, one, 10) for s in (9, 10, 11)] == [False, True, True]
    steps = {**cfg, "aux_warmup_steps": 7}
    assert [warmup_done(s, steps, 10) for s in (6, 7)] == [False, True]


def test_at_loss_averages_per_sentence_then_over_sentences():
    logits = torch.tensor([[[2.0, 0.0], [0.0, 2.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]]])
    targets = torch.tensor([[0, 0, 1], [1, 0, 0]])
    positions = torch.tensor([[True, True, False], [True, False, False]])
    ce = lambda row, t: -F.log_softmax(row, -1)[t]
    sentence0 = (ce(logits[0, 0], 0) + ce(logits[0, 1], 0)) / 2
    sentence1 = ce(logits[1, 0], 1)
    loss, accuracy = at_loss(logits, targets, positions, per_sentence=True)
    assert math.isclose(float(loss), float(sentence0 + sentence1) / 2, rel_tol=1e-6)
    assert math.isclose(float(accuracy), (0.5 + 0.0) / 2)
    assert math.isclose(float(majority_share(targets, positions)), 2 / 3, rel_tol=1e-6)  # 2 of the 3 chosen positions are label 0
    loss, _ = at_loss(logits, targets, positions, per_sentence=False)
    assert math.isclose(float(loss), float(ce(logits[0, 0], 0) + ce(logits[0, 1], 0) + sentence1) / 3, rel_tol=1e-6)


def test_the_simcse_backbone_takes_simcses_presets():
    # under each cpu recipe: SimCSE's knobs, and the warm-up at SimCSE's share (0.1) and ConSERT's (0.05) of the cap
    for recipe, warmups in (("fixed-budget", (10, 5)), ("converged", (60, 60))):
        cfg = resolve(overrides={"method": "slt_fai", "scale": "cpu", "backbone": "simcse"}, recipe=recipe)
        simcse = resolve(overrides={"method": "simcse", "scale": "cpu"}, recipe=recipe)
        for key in ("train_data", "max_len", "weight_decay", "adam_eps", "warmup_ratio", "lr", "max_steps", "batch_size",
                    "pooler", "eval_steps", "patience", "min_delta"):
            assert cfg[key] == simcse[key], (recipe, key)
        consert = resolve(overrides={"method": "slt_fai", "scale": "cpu"}, recipe=recipe)
        assert (cfg["aux_warmup_steps"], consert["aux_warmup_steps"]) == warmups
        assert (consert["train_data"], consert["max_len"]) == ("sts_unlabeled", 64)
    assert resolve(overrides={"method": "slt_fai", "scale": "paper", "backbone": "simcse"})["batch_size"] == 32


def test_without_at_and_isf_slt_fai_is_consert(data_dir):
    consert = build(ConSERT, data_dir).train()
    slt = build(SLTFAI, data_dir, alpha=0.0, beta=0.0).train()
    batch = consert.collate(SENTENCES)
    torch.manual_seed(6)
    expected = consert.loss(batch)["loss"]
    torch.manual_seed(6)
    got = slt.loss(batch)
    assert torch.allclose(got["loss"], expected, atol=1e-6)
    assert math.isclose(float(expected), 0.15 * float(got["loss_cl"]), rel_tol=1e-6)
    # ConSERT trains without dropout
    assert all(m.p == 0 for m in consert.encoder.model.modules() if isinstance(m, torch.nn.Dropout))


def test_the_discriminators_train_only_after_the_warmup(data_dir):
    method = build(data_dir=data_dir, aux_warmup_steps=1).train()
    batch = method.collate(SENTENCES)
    terms = method.loss(batch)  # step 0: warm-up; the terms are recorded but not optimised
    assert float(terms["aux_on"]) == 0.0 and not terms["loss_at"].requires_grad and not terms["loss_isf"].requires_grad
    assert math.isclose(float(terms["loss"]), 0.15 * float(terms["loss_cl"]), rel_tol=1e-6)
    terms["loss"].backward()
    assert all(p.grad is None for d in (method.similarity_discriminator, method.information_discriminator) for p in d.parameters())
    terms = method.loss(batch)  # step 1: on
    assert float(terms["aux_on"]) == 1.0
    assert math.isclose(float(terms["loss"]), float(0.15 * terms["loss_cl"] + terms["loss_at"] + terms["loss_isf"]), rel_tol=1e-5)
    terms["loss"].backward()
    for d in (method.similarity_discriminator, method.information_discriminator):
        assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in d.parameters())


def test_reversal_flips_the_encoder_gradient_exactly(data_dir):
    method = build(data_dir=data_dir, aux_warmup_steps=0, beta=0.0).train()
    batch = method.collate(SENTENCES)
    states = method.encoder.model(**{k: v for k, v in batch.items() if k != "token_type_ids"}).last_hidden_state
    targets = method.labels[batch["input_ids"]]
    positions = batch["attention_mask"].bool()
    grads = []
    for through in (GradientReversal.apply, lambda x: x):
        loss, _ = at_loss(method.similarity_discriminator(through(states)), targets, positions, True)
        grads.append(torch.autograd.grad(loss, states, retain_graph=True)[0])
    assert torch.allclose(grads[0], -grads[1])


def test_isf_changes_the_sentences_its_rule_can_change(data_dir):
    for rule in ("low", "high"):
        method = build(data_dir=data_dir, isf_mask=rule, isf_rate=1.0).train()
        batch = method.collate(SENTENCES)
        ids, mask = batch["input_ids"], batch["attention_mask"]
        words = mask.bool() & ~method.special[ids]
        expected = (words & (method.labels[ids] == (1 if rule == "low" else 0))).any(1).float().mean()
        assert math.isclose(float(method.loss(batch)["isf_changed"]), float(expected))
        if rule == "low":
            assert float(expected) < 1.0  # some sentences hold no low-frequency word: their copy is the original
    assert resolve(overrides={"method": "slt_fai"})["isf_mask"] == "high"  # the book's (the code's) rule


def test_probe_accuracy_is_chance_on_one_distribution_and_high_on_two():
    rng = np.random.default_rng(0)
    same = _probe_accuracy(rng.normal(size=(400, 8)), rng.normal(size=(400, 8)), np.random.default_rng(1))
    apart = _probe_accuracy(rng.normal(size=(400, 8)) + 3, rng.normal(size=(400, 8)), np.random.default_rng(1))
    assert 0.4 < same < 0.6 and apart > 0.95


def test_the_grouped_probe_cannot_win_by_recognising_wordpieces():
    # 40 wordpieces per label, each with its own random centre and no frequency direction: a probe whose test
    # folds share wordpieces with training separates them; grouped by wordpiece it is at chance
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(80, 128)) * 3
    ids = np.repeat(np.arange(80), 10)
    x = centres[ids] + rng.normal(size=(800, 128)) * 0.1
    high, low = x[ids < 40], x[ids >= 40]
    shared = _probe_accuracy(high, low, np.random.default_rng(1))
    grouped = _probe_accuracy(high, low, np.random.default_rng(1), ids[ids < 40], ids[ids >= 40])
    assert shared > 0.9 and grouped < 0.75


@pytest.mark.parametrize("overrides, message", [
    ({"low_rate": 1.0}, "low_rate"), ({"low_rate": 0.0}, "low_rate"), ({"isf_mask": "middle"}, "isf_mask"),
    ({"backbone": "bert"}, "backbone"), ({"discriminator": "big"}, "discriminator"), ({"at_positions": "some"}, "at_positions"),
    ({"warmup_rule": "never"}, "warmup_rule"), ({"view1": "rotate"}, "view1"), ({"alpha": -1.0}, "alpha"),
    ({"at_class_weights": "inverse"}, "at_class_weights"), ({"grl_schedule": "ramp"}, "grl_schedule")])
def test_bad_input_names_the_key(overrides, message):
    with pytest.raises(SreError, match=message):
        resolve(overrides={"method": "slt_fai", "scale": "smoke", **overrides})


def test_an_interrupted_run_resumes_to_the_same_numbers(data_dir, tmp_path):
    cfg = {"method": "slt_fai", "scale": "smoke", "aux_warmup_steps": 2}
    whole = train(cfg, data_dir=data_dir, results_root=tmp_path / "a", work_root=tmp_path / "wa")
    with pytest.raises(Interrupted):
        train({**cfg, "checkpoint_steps": 1}, data_dir=data_dir, results_root=tmp_path / "b", work_root=tmp_path / "wb",
              interrupt_at_step=4)
    resumed = train({**cfg, "checkpoint_steps": 1}, data_dir=data_dir, results_root=tmp_path / "b", work_root=tmp_path / "wb")
    assert resumed["metrics"]["sts"] == whole["metrics"]["sts"]
    assert [p["loss_at"] for p in resumed["dev_curve"]] == [p["loss_at"] for p in whole["dev_curve"]]


def test_centroid_separation_against_a_hand_computation():
    a = np.array([[0.0, 0.0], [2.0, 0.0]])   # mean (1, 0); distances to it 1, 1
    b = np.array([[1.0, 3.0], [1.0, 5.0]])   # mean (1, 4); distances 1, 1
    assert math.isclose(_separation(a, b), 4.0)  # |(1,0) - (1,4)| / sqrt(mean of 1, 1, 1, 1)
    assert math.isclose(_separation(a * 10, b * 10), 4.0)  # scale-free


def test_the_chapter_at_paper_scale_on_bert_base_is_a_valid_call():
    """`papermill notebooks/slt_fai.ipynb out.ipynb -p scale paper -p model_name bert-base-uncased`: every run the
    chapter would start resolves to a validated config with the paper's recipe."""
    from sre_repro import book
    from sre_repro.chapters import slt_fai as chapter

    base = {"scale": "paper", "model_name": "bert-base-uncased"}
    groups = chapter.plan("paper", book.seeds("paper"))
    # Table 1's eight rows, both readings and the four other lambdas at the edition's three seeds; the AT study's
    # six other settings at the first
    assert book.validate_plan(groups, "paper", model_name="bert-base-uncased") == (8 + 2 + 4) * 3 + 6
    configs = {(name, s): resolve(overrides={"method": method, **base, **o, "seed": s})
               for name, (method, seed_list, o) in groups.items() for s in seed_list}
    assert {c["model_name"] for c in configs.values()} == {"bert-base-uncased"}
    assert sorted(c["low_rate"] for (name, s), c in configs.items() if s == 42 and c["method"] == "slt_fai"
                  and (name.startswith("λ") or name == "ConSERT + SLT-FAI")) == [0.1, 0.3, 0.5, 0.7, 0.9]
    consert = configs["ConSERT + SLT-FAI", 42]
    assert (consert["batch_size"], consert["lr"], consert["epochs"], consert["max_len"], consert["train_data"], consert["temperature"],
            consert["aux_warmup_steps"], consert["precision"]) == (32, 5e-7, 10, 64, "sts_unlabeled", 0.0, -1, "fp16")
    assert configs["ConSERT", 42]["lr"] == 5e-7 and configs["ConSERT", 42]["batch_size"] == 32
    simcse = configs["SimCSE + SLT-FAI", 42]
    assert (simcse["batch_size"], simcse["lr"], simcse["train_data"], simcse["pooler"], simcse["eval_pooler"]) == \
        (32, 3e-5, "wiki1m_full", "cls", "cls")
    assert configs["SimCSE", 42]["batch_size"] == 32  # the paper's SimCSE rerun at batch 32
    assert chapter.grid("low_rates", "paper") == chapter.grid("low_rates", "cpu") == [0.1, 0.3, 0.5, 0.7, 0.9]
    # cpu: the four headline rows at five seeds, the four ablations and two readings at three, the AT study's six
    # other settings at one, the four other lambdas at three
    cpu = chapter.plan("cpu", book.seeds("cpu"))
    assert book.validate_plan(cpu, "cpu") == 4 * 5 + 6 * 3 + 6 + 4 * 3
    # the study's "encoder's rate" row trains both discriminators at the PLM's rate (the recipe's head_lr dropped)
    encoder_rate = f"AT study: {chapter.AT_CODE_RATE}"
    assert cpu[encoder_rate][2] == {"head_lr": 3e-5} and configs[encoder_rate, 42]["head_lr"] == 5e-7


def test_paper_gains_and_effects_over_a_backbone():
    from sre_repro.chapters import slt_fai as chapter

    gains = chapter.paper_gains()
    assert gains["ConSERT: slt_fai"] == pytest.approx(73.29 - 71.98) and gains["SimCSE: slt_fai"] == pytest.approx(76.18 - 74.60)
    assert gains["ConSERT: isf"] == pytest.approx(0.49) and gains["SimCSE: at"] == pytest.approx(0.82)
    record = lambda avg, seed: {"metrics": {"sts": {"avg": avg}}, "seed": seed}  # noqa: E731
    runs = {"ConSERT": [record(50.0, 42), record(52.0, 43)], "ConSERT + SLT-FAI": [record(53.0, 42), record(53.0, 43)],
            "ConSERT + SLT-FAI (code reading)": [record(50.5, 42)]}
    frame = chapter.effects_over_backbone(runs, "consert")
    assert frame.loc["ConSERT + SLT-FAI", "ours: minus the backbone"] == 2.0
    assert frame.loc["ConSERT + SLT-FAI", "paper: minus the backbone"] == pytest.approx(1.31)
    assert frame.loc["ConSERT + SLT-FAI (code reading)", "ours: minus the backbone"] == 0.5  # seed-matched: 50.5 - 50 at 42
    assert np.isnan(frame.loc["ConSERT + SLT-FAI (code reading)", "paper: minus the backbone"])
    with pytest.raises(SreError, match="unknown backbone"):
        chapter.block("bert", "cpu")


def test_isf_compares_the_sentence_as_it_is_with_its_copy(data_dir):
    """isf_original=sentence (Eq. 7): where nothing is masked the discriminator sees two equal vectors, so it
    cannot beat chance; with the code's view 1 (feature cutoff) the pair differs even then."""
    sentences = ["the cat sat on the mat.", "he said that it was good."]  # no LOW word at lambda = 0.5
    for original, identical in (("sentence", True), ("view1", False)):
        method = build(data_dir=data_dir, isf_mask="low", isf_original=original, alpha=0.0).train()
        batch = method.collate(sentences)
        assert not (method.labels[batch["input_ids"]].bool() & ~method.special[batch["input_ids"]]).any()
        torch.manual_seed(9)
        terms = method.loss(batch)
        assert float(terms["isf_changed"]) == 0.0
        if identical:
            assert float(terms["isf_accuracy"]) == 0.5
            assert float(terms["loss_isf"]) >= 2 * math.log(2) - 1e-6  # CE(l, 0) + CE(l, 1) of one logit pair
    with pytest.raises(SreError, match="isf_original"):
        resolve(overrides={"method": "slt_fai", "scale": "smoke", "isf_original": "both"})


def test_kept_point_is_the_best_steps_evaluation_else_the_last():
    from sre_repro.chapters import slt_fai as chapter

    curve = [{"step": 10, "isf_changed": 0.1}, {"step": 20, "isf_changed": 0.2}, {"step": 30, "isf_changed": 0.3}]
    assert chapter.kept_point({"dev_curve": curve, "metrics": {"best_step": 20}}) is curve[1]
    assert chapter.kept_point({"dev_curve": curve, "metrics": {"best_step": 0}}) is curve[-1]


def test_separation_reads_auc_and_balanced_accuracy_not_the_base_rate():
    from sre_repro.evaluate.discriminators import separation
    # positives score 0.9 and 0.4, negatives 0.2 and 0.6: 3 of the 4 (positive, negative) pairs ordered right
    hand = separation([0.9, 0.2, 0.6, 0.4], [1, 0, 0, 1])
    assert (hand["auc"], hand["balanced_accuracy"], hand["majority"], hand["n"]) == (0.75, 0.5, 0.5, 4)
    # always "HIGH" at a 93/7 base rate: 93 % accurate, yet no separation at all
    constant = separation([0.1] * 13 + [0.1], [0] * 13 + [1])
    assert (constant["auc"], constant["balanced_accuracy"]) == (0.5, 0.5) and constant["majority"] == pytest.approx(13 / 14)


def test_discriminators_are_read_on_word_tokens_and_on_changed_copies(data_dir):
    from sre_repro.evaluate.discriminators import MASK_SEED, discriminator_separation
    method = build(data_dir=data_dir)
    result = discriminator_separation(method, SENTENCES)
    batch = method.encoder.tokenize(SENTENCES, method.cfg["max_len"])
    ids, mask = batch["input_ids"], batch["attention_mask"]
    assert result["similarity"]["n"] == int((mask.bool() & ~method.special[ids]).sum())  # Eq. 4's positions
    masked = isf_mask(ids, mask, method.labels, method.special, method.cfg["isf_mask"], method.isf_rate,
                      method.encoder.tokenizer.mask_token_id, torch.Generator().manual_seed(MASK_SEED))
    assert result["information"]["n"] == 2 * int((masked != ids).any(1).sum())  # each changed sentence and its copy
    assert 0.0 <= result["similarity"]["auc"] <= 1.0 and result["similarity"]["majority"] >= 0.5


def test_the_at_study_chooses_on_dev_among_the_settings_whose_discriminator_engaged():
    from sre_repro.chapters import slt_fai as chapter

    def run(weights, dev, majority):
        point = {"step": 40, "at_majority": majority, "loss_at": 0.3}
        return {"config": {"at_class_weights": weights}, "dev_curve": [point],
                "metrics": {"stsb_dev_best": dev, "best_step": 40, "frequency": {"tokens": {"probe_accuracy": 0.8}}}}

    runs = {"plain": run("none", 67.0, 0.9), "balanced": run("balanced", 66.4, 0.9)}
    checks = {"plain": {"similarity": {"auc": 0.55, "balanced_accuracy": 0.5}},
              "balanced": {"similarity": {"auc": 0.75, "balanced_accuracy": 0.63}}}
    table = chapter.at_training_table(runs, checks)
    assert list(table["engaged"]) == ["no", "yes"]
    # by hand: plain CE's constant guess costs the labels' entropy at a 90 % majority; balanced CE's costs ln 2
    assert table.loc["plain", "constant guess"] == round(-(0.9 * math.log(0.9) + 0.1 * math.log(0.1)), 3) == 0.325
    assert table.loc["balanced", "constant guess"] == round(math.log(2), 3)
    assert list(table["check's weights"]) == ["the run's", "the run's"]
    runs["balanced"]["hardware"] = {"cuda": "NVIDIA H200"}  # its check reads weights retrained on this CPU
    assert chapter.at_training_table(runs, checks).loc["balanced", "check's weights"] == "a CPU retrain (record on GPU)"
    assert chapter.chosen_at_training(table) == "balanced"  # the better dev score did not engage
    checks["balanced"]["similarity"]["auc"] = 0.55  # read on the AUC (a ranking a 0.5 cut need not show)
    assert chapter.chosen_at_training(chapter.at_training_table(runs, checks)) == "plain"  # none engaged: the default (first row)
    # both engaged: the default unless another beats its dev by DEV_TOLERANCE (0.25) at least
    checks = {name: {"similarity": {"auc": 0.8, "balanced_accuracy": 0.5}} for name in runs}
    runs["balanced"] = run("balanced", 67.2, 0.9)
    assert chapter.chosen_at_training(chapter.at_training_table(runs, checks)) == "plain"
    runs["balanced"] = run("balanced", 67.3, 0.9)
    assert chapter.chosen_at_training(chapter.at_training_table(runs, checks)) == "balanced"


def test_the_books_at_setting_is_the_studys_choice_on_its_committed_records():
    """AT_CHOSEN (the setting the book's SLT-FAI rows train with) is what chosen_at_training picks from the study's
    committed cpu records, each served as valid (no retraining here)."""
    from sre_repro import runs
    from sre_repro.chapters import slt_fai as chapter
    from sre_repro.config import cpu_recipe

    found, checks, store = {}, {}, runs.REPO_ROOT / "results"  # the committed store, not the test's own
    with cpu_recipe("converged"):
        for name, overrides in chapter.AT_TRAINING.items():
            cfg = resolve(overrides={"method": "slt_fai", "scale": "cpu", "seed": 42, **overrides})
            found[name] = runs.read("slt_fai", cfg, store)
            check = runs.read("discriminators", {"run": cfg, "max_sentences": chapter.DISCRIMINATOR_SENTENCES["cpu"]}, store)
            assert found[name] and check and not found[name]["stale"] and not check["stale"], name
            checks[name] = check["metrics"]
    assert chapter.chosen_at_training(chapter.at_training_table(found, checks)) == chapter.AT_CHOSEN


def _run(method, seed, avg, alpha=1.0, beta=1.0, best_step=40, aux_on=1, probe=0.8):
    """A run record with what the verdict rows read: converged by its stopping rule (patience 2, cap 100)."""
    curve = [{"step": 20, "stsb_dev": 60.0, "aux_on": 0}, {"step": 40, "stsb_dev": 61.0, "aux_on": aux_on},
             {"step": 60, "stsb_dev": 60.5, "aux_on": 1}, {"step": 80, "stsb_dev": 60.4, "aux_on": 1}]
    cfg = {"method": method, "alpha": alpha, "beta": beta, "patience": 2, "min_delta": 0.0, "max_steps": 100,
           "aux_warmup_steps": 30, "low_rate": 0.5}
    return {"config": cfg, "config_hash": f"{method}-{alpha}-{beta}-{seed}", "seed": seed, "steps": 80,
            "dev_curve": curve, "metrics": {"sts": {"avg": avg, "STSBenchmark": avg}, "best_step": best_step, "stsb_dev_best": 61.0,
                                            "frequency": {"tokens": {"probe_accuracy": probe, "centroid_separation": 0.2, "anisotropy": 0.3},
                                                          "sentences": {"anisotropy": 0.4},
                                                          "attention_received": {"content words": 0.5, "[SEP]": 0.1, "low-frequency words": 0.05}}}}


def test_a_discriminator_engages_on_its_held_out_auc_not_its_accuracy():
    from sre_repro.chapters import slt_fai as chapter

    at_base_rate = {"similarity": {"auc": 0.55, "balanced_accuracy": 0.5, "majority": 0.93}}
    assert chapter.discriminator_engaged(at_base_rate, chapter.AT) == (False, "ROC AUC 0.550 < 0.60 (chance 0.5)")
    assert chapter.discriminator_engaged({"similarity": {"auc": 0.6}}, chapter.AT)[0]  # 0.5 + CHANCE_MARGIN
    assert not chapter.discriminator_engaged({"similarity": {"auc": 0.9}}, chapter.ISF)[0]  # no check of its own
    # a component is read only in the runs that train it: w/o AT (alpha 0) does not count against AT
    runs = [_run("slt_fai", 42, 50.0), _run("slt_fai", 42, 50.0, alpha=0.0), _run("consert", 42, 50.0)]
    checks = {runs[0]["config_hash"]: {"metrics": {"similarity": {"auc": 0.8}, "information": {"auc": 0.58}}},
              runs[1]["config_hash"]: {"metrics": {"information": {"auc": 0.9}}}}
    read = chapter.engagement(runs, [chapter.AT, chapter.ISF], checks)
    assert read[chapter.AT][0] and not read[chapter.ISF][0] and read[chapter.ISF][1].startswith("seed 42: ROC AUC 0.580")
    # a run that kept a checkpoint from before the auxiliaries switched on engaged nothing, whatever its check reads
    early = _run("slt_fai", 43, 50.0, aux_on=0)
    checks[early["config_hash"]] = {"metrics": {"similarity": {"auc": 0.9}, "information": {"auc": 0.9}}}
    assert chapter.engagement([early], [chapter.AT], checks)[chapter.AT] == (
        False, "seed 43: kept step 40, before the auxiliary losses switched on")


def test_verdict_rows_are_seed_matched_and_gated_on_engagement():
    from sre_repro import protocol
    from sre_repro.chapters import slt_fai as chapter

    runs = {"ConSERT": [_run("consert", s, a) for s, a in ((42, 50.0), (43, 51.0), (44, 52.0), (45, 40.0))],
            "ConSERT + SLT-FAI": [_run("slt_fai", s, a) for s, a in ((42, 51.0), (43, 52.5), (44, 53.0))]}
    good = {"metrics": {"similarity": {"auc": 0.8}, "information": {"auc": 0.9}}}
    checks = {r["config_hash"]: good for r in runs["ConSERT + SLT-FAI"]}
    rows = {row["id"]: row for row in chapter.verdict_rows(runs, checks)}
    head = rows["slt_fai_beats_consert"]
    # seed 45 has no SLT-FAI run: the differences are 1.0, 1.5 and 1.0, not the means of unequal seed sets
    assert head["ours"] == round(3.5 / 3, 2) and head["seeds"] == "42, 43, 44" and head["n seeds"] == 3
    word = protocol.claim_verdict([1.0, 1.5, 1.0], "superiority")["verdict"]
    assert head["verdict"] == "not tested: a headline claim rests on at least 5 seeds, this on 3" and word == "holds"
    assert rows["isf_helps_consert"]["verdict"] == "not tested: a row it compares is not run at this scale or in this mode"
    assert rows["beats_wiki_baselines"]["verdict"].startswith("not tested: it compares absolute scores")
    # a geometry claim reads 100 x the analysis number: CL's probe 0.8 against CL + AT's 0.7 at the same seeds
    runs["ConSERT + SLT-FAI w/o ISF"] = [_run("slt_fai", s, 50.0, beta=0.0, probe=p) for s, p in ((42, 0.7), (43, 0.72), (44, 0.69))]
    checks.update({r["config_hash"]: good for r in runs["ConSERT + SLT-FAI w/o ISF"]})
    probe = {row["id"]: row for row in chapter.verdict_rows(runs, checks)}["at_hides_frequency"]
    assert probe["ours"] == round((10 + 8 + 11) / 3, 2) and probe["verdict"] == "holds"
    checks[runs["ConSERT + SLT-FAI w/o ISF"][1]["config_hash"]] = {"metrics": {"similarity": {"auc": 0.52}}}
    probe = {row["id"]: row for row in chapter.verdict_rows(runs, checks)}["at_hides_frequency"]
    assert probe["verdict"].startswith("not tested: similarity discriminator did not engage (seed 43: ROC AUC 0.520")
    # a geometry claim stands beside the untrained PLM: CL's token anisotropy (30 x 100 at every seed) against 45
    plm = {"metrics": {"frequency": {"tokens": {"anisotropy": 0.45}}}}
    geometry = {row["id"]: row for row in chapter.verdict_rows(runs, checks, plm_analysis=plm)}["cl_isotropic"]
    assert geometry["untrained PLM"] == 45.0 and geometry["ours"] == 30.0 and geometry["verdict"] == "better than the PLM"
    assert {row["id"]: row for row in chapter.verdict_rows(runs, checks)}["cl_isotropic"]["verdict"].startswith("not tested")


def test_the_lambda_grid_and_the_simcse_blocks_auxiliary_start():
    from sre_repro.chapters import slt_fai as chapter

    full = [_run("slt_fai", s, 50.0) for s in (42, 43, 44, 45, 46)]
    rates = {0.1: [_run("slt_fai", s, 49.0) for s in (42, 43, 44)], 0.9: [_run("slt_fai", s, 48.0) for s in (42, 43, 44)]}
    for rate, group in rates.items():
        for r, dev in zip(group, (59.0, 60.0, 61.0) if rate == 0.1 else (62.0, 62.0, 62.0)):
            r["config"] = {**r["config"], "low_rate": rate}
            r["metrics"] = {**r["metrics"], "stsb_dev_best": dev}
    runs = {"ConSERT + SLT-FAI": full, **{chapter.rate_row(rate): group for rate, group in rates.items()}}
    assert chapter.best_other_rate(runs) == "λ = 0.9"  # the best mean dev among the other lambdas
    grid = chapter.rate_groups(runs)
    assert list(grid) == [0.1, 0.5, 0.9] and [r["seed"] for r in grid[0.5]] == [42, 43, 44]  # Table 1's row, seed-matched
    assert chapter.rate_frame(grid).loc[0.1, "STS-B dev (kept)"] == 60.0
    # the auxiliaries start after step 30: a run that keeps step 40 before its aux_on turned on kept its backbone
    early = [_run("slt_fai", 42, 50.0, aux_on=0), _run("slt_fai", 43, 50.0)]
    assert chapter.kept_before_auxiliaries(early) == [42]
    assert chapter.dev_before_after(early) == {"before": 60.0, "after": 61.0}
