"""The stand-in PLM's pretraining (method mlm): masking, packing, the loss, reproducibility, resume, and
the committed model itself."""
import json

import pytest
import torch
from safetensors.torch import load_file

from sre_repro.config import resolve
from sre_repro.encoder import REPO_ROOT
from sre_repro.errors import SreError
from sre_repro.methods.mlm import MaskedLM
from sre_repro.train import Interrupted, train

SMOKE = {"method": "mlm", "scale": "smoke", "eval_steps": 5}


def _smoke(tmp_path, name, **extra):
    cfg = {**SMOKE, "output_dir": str(tmp_path / name / "model"), **extra}
    return train(cfg, results_root=tmp_path / name / "r", work_root=tmp_path / name / "w")


def _losses(result):
    return [(p["loss"], p["mlm_loss"], p["mlm_accuracy"]) for p in result["dev_curve"]]


@pytest.fixture(scope="module")
def method(data_dir):
    torch.manual_seed(0)
    return MaskedLM.build(resolve(overrides={**SMOKE, "max_len": 64}), "cpu", data_dir)


@pytest.fixture(scope="module")
def twenty_steps(tmp_path_factory):
    """(its folder, the record) of one 20-step smoke pretraining, shared by the tests that compare against it."""
    base = tmp_path_factory.mktemp("mlm20")
    return base, _smoke(base, "a")


def test_twenty_steps_twice_give_the_same_losses_and_weights(tmp_path, twenty_steps):
    base, first = twenty_steps
    second = _smoke(tmp_path, "b")
    assert first["steps"] == 20 and [p["step"] for p in first["dev_curve"]] == [5, 10, 15, 20]
    assert _losses(first) == _losses(second)
    w1, w2 = (load_file(root / n / "model" / "model.safetensors") for root, n in ((base, "a"), (tmp_path, "b")))
    assert w1.keys() == w2.keys() and all(torch.equal(w1[k], w2[k]) for k in w1)
    assert first["dev_curve"][-1]["loss"] < first["dev_curve"][0]["loss"]  # it learns
    other = _smoke(tmp_path, "c", seed=1, max_steps=5)
    assert _losses(other) != _losses(first)[:1]


def test_interrupted_pretraining_resumes_to_identical_numbers(tmp_path, twenty_steps):
    _, whole = twenty_steps
    with pytest.raises(Interrupted):
        train({**SMOKE, "output_dir": str(tmp_path / "m")}, results_root=tmp_path / "r", work_root=tmp_path / "w",
              interrupt_at_step=10)
    resumed = train({**SMOKE, "output_dir": str(tmp_path / "m")}, results_root=tmp_path / "r",
                    work_root=tmp_path / "w")
    assert _losses(resumed) == _losses(whole) and resumed["metrics"]["heldout"] == whole["metrics"]["heldout"]


def test_masking_is_bert_s_15_percent_80_10_10_and_never_special_tokens(method):
    torch.manual_seed(1)
    blocks = method.corpus()[:512]
    batch = method.collate(blocks)
    original = torch.stack(blocks)
    chosen = batch["labels"] != -100
    assert torch.equal(batch["labels"][chosen], original[chosen])
    special = (original == method.tokenizer.cls_token_id) | (original == method.tokenizer.sep_token_id)
    assert not (chosen & special).any()
    assert abs(chosen[~special].float().mean().item() - 0.15) < 0.01
    as_mask = (batch["input_ids"][chosen] == method.tokenizer.mask_token_id).float().mean().item()
    kept = (batch["input_ids"][chosen] == original[chosen]).float().mean().item()
    assert abs(as_mask - 0.8) < 0.02 and abs(kept - 0.1) < 0.02  # random replacement rarely hits the same id


def test_blocks_are_packed_sentences_starting_with_cls(method):
    blocks = method.corpus()
    counts = method.corpus_counts()
    assert all(len(b) == 64 and b[0] == method.tokenizer.cls_token_id for b in blocks[:100])
    assert counts["train_blocks"] == len(blocks) == counts["train_tokens"] // 63
    assert (torch.stack(blocks[:100]) == method.tokenizer.sep_token_id).sum() > 100  # several sentences a block


def test_loss_on_masked_positions_equals_hf_full_vocabulary_loss(method):
    torch.manual_seed(2)
    batch = method.collate(method.corpus()[:4])
    method.eval()
    with torch.no_grad():
        ours = method.loss(batch)["loss"]
        reference = method.model(input_ids=batch["input_ids"], labels=batch["labels"]).loss
    method.train()
    assert torch.allclose(ours, reference, atol=1e-5)


def test_heldout_masking_is_fixed_and_leaves_the_training_rng_alone(method):
    torch.manual_seed(3)
    before = torch.get_rng_state()
    first, second = method.heldout_metrics(8), method.heldout_metrics(8)
    assert first == second and torch.equal(torch.get_rng_state(), before)


def test_bad_architecture_and_sources_are_named():
    with pytest.raises(SreError, match="divisible by heads"):
        resolve(overrides={**SMOKE, "hidden": 65})
    with pytest.raises(SreError, match="unknown pretraining source 'books'"):
        from sre_repro.data.pretrain_corpus import build
        build(sources=("books",))


def test_the_committed_stand_in_is_a_raw_bert_on_bert_base_vocabulary():
    path = REPO_ROOT / "models" / "sre-bert"
    config = json.loads((path / "config.json").read_text())
    assert config["model_type"] == "bert" and config["vocab_size"] == 30522
    assert (path / "model.safetensors").stat().st_size < 50e6
    log = json.loads((path / "training_log.json").read_text())
    assert log["config"]["method"] == "mlm" and log["final"]["heldout"]["mlm_accuracy"] > 10  # chance is 1/30,522
    card = (path / "README.md").read_text()
    assert "python -m sre_repro pretrain" in card and f"{log['final']['heldout']['mlm_accuracy']:.2f}%" in card


def test_a_second_stage_continues_the_model_and_the_log_keeps_both(tmp_path, monkeypatch, data_dir):
    from sre_repro.chapters import stand_in as stand_in_chapter
    from sre_repro.cli import main

    monkeypatch.setenv("SRE_REPRO_RESULTS", str(tmp_path / "r"))
    monkeypatch.setenv("SRE_REPRO_WORK", str(tmp_path / "w"))
    model = tmp_path / "m"
    first = ["pretrain", "--data-dir", str(data_dir), "--set", "scale=smoke", "--set", f"output_dir={model}"]
    second = [*first, "--set", f"init={model}", "--set", "max_steps=10", "--set", "eval_steps=5"]
    assert main(first) == 0 and main(second) == 0
    assert main(second) == 0  # served from the cache: must not count itself as an earlier stage
    log = stand_in_chapter.stand_in_log(model)
    assert [s["config"]["init"] for s in log["stages"]] == ["scratch", str(model)]
    assert [(p["stage"], p["step"]) for p in log["curve"]] == [(1, 10), (1, 20), (2, 25), (2, 30)]
    assert log["train_seconds"] == pytest.approx(sum(s["train_seconds"] for s in log["stages"]))
    card = (model / "README.md").read_text()
    assert "## Pretraining stages" in card and card.count("--force") == 2
