"""Packed training forwards equal padded ones: the map itself by hand, and every method the book trains with
dropout off (the same embeddings, loss terms and gradients within 1e-5)."""
import copy
import random

import numpy as np
import pytest
import torch
from torch import nn

from sre_repro import packing
from sre_repro.config import resolve
from sre_repro.encoder import load_encoder
from sre_repro.methods import get_method
from sre_repro.packing import Packing, first_fit, hidden_states
from sre_repro.train import trained_method

TOLERANCE = dict(rtol=1e-5, atol=1e-5)


def test_first_fit_places_the_longest_first_and_never_splits_a_sentence():
    # row length 8: 7 opens row 0, 5 opens row 1, 3 joins row 1 (row 0 has 1 left), 1 fills row 0, 2 opens row 2
    assert first_fit([3, 7, 1, 5, 2], 8) == [(1, 5), (0, 0), (0, 7), (1, 0), (2, 0)]


def test_pack_and_unpack_by_hand():
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]])
    packing = Packing(mask, row_len=5)  # 4 | 3 + 2
    assert (packing.rows, packing.row_len) == (2, 5)
    ids = torch.tensor([[11, 12, 13, 0], [21, 22, 0, 0], [31, 32, 33, 34]])
    assert packing.pack(ids, fill=-1).tolist() == [[31, 32, 33, 34, -1], [11, 12, 13, 21, 22]]
    assert torch.equal(packing.unpack(packing.pack(ids)), ids * mask)
    # row 1: sentence 0 in slots 0-2, sentence 1 in slots 3-4, each attending to itself alone
    expected = torch.tensor([[1, 1, 1, 0, 0]] * 3 + [[0, 0, 0, 1, 1]] * 2, dtype=torch.bool)
    assert torch.equal(packing.block[1, 0], expected)
    assert packing.block[0, 0, 4].tolist() == [False] * 4 + [True]  # the empty slot attends to itself only


def test_packed_states_equal_padded_and_an_off_by_one_position_does_not(monkeypatch):
    encoder = load_encoder("tiny-random", "avg", "cpu").eval()
    batch = encoder.tokenize(["a cat sat on the mat", "dogs bark", "the quick brown fox jumps over it", "hi"])
    mask = batch["attention_mask"].unsqueeze(-1)

    def states(**kw):
        return hidden_states(encoder.model, batch["input_ids"], batch["attention_mask"], **kw)

    padded, packed = states(packed=False), states(packed=True, row_len=16)
    assert Packing(batch["attention_mask"], 16).rows < len(batch["input_ids"])  # sentences do share rows
    for a, b in zip(padded, packed):
        torch.testing.assert_close(b, a * mask, **TOLERANCE)
    encoder.model.set_attn_implementation("eager")  # the additive mask of the other attention
    torch.testing.assert_close(states(packed=True, row_len=16)[-1], padded[-1] * mask, **TOLERANCE)
    encoder.model.set_attn_implementation("sdpa")
    shifted = packing.default_positions
    monkeypatch.setattr(packing, "default_positions", lambda model, m: shifted(model, m) + 1)
    assert not torch.allclose(states(packed=True, row_len=16)[-1], padded[-1] * mask, **TOLERANCE)
    monkeypatch.undo()
    leaky = Packing.attention_mask
    monkeypatch.setattr(Packing, "attention_mask", lambda self, model, dtype: leaky(self, model, dtype) | torch.eye(
        self.row_len, dtype=torch.bool).roll(1, 1))  # every token also sees its left neighbour's slot
    assert not torch.allclose(states(packed=True, row_len=16)[-1], padded[-1] * mask, **TOLERANCE)


def test_a_roberta_batch_packs_with_its_own_positions():
    from transformers import RobertaConfig, RobertaModel
    torch.manual_seed(0)
    model = RobertaModel(RobertaConfig(vocab_size=50, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                       intermediate_size=64, max_position_embeddings=40, pad_token_id=1),
                         add_pooling_layer=False).eval()
    ids = torch.tensor([[0, 5, 6, 7, 2], [0, 8, 2, 1, 1]])
    mask = (ids != 1).long()
    padded = hidden_states(model, ids, mask, packed=False)[-1]
    packed = hidden_states(model, ids, mask, packed=True, row_len=8)[-1]
    torch.testing.assert_close(packed, padded * mask.unsqueeze(-1), **TOLERANCE)


# Every method the book trains, in the variants whose forwards differ (mlm pretraining has no padding to pack)
VARIANTS = {
    "simcse": {}, "simcse_cls": {"method": "simcse", "pooler": "cls", "eval_pooler": "cls"},
    "simcse_sup": {"train_data": "snli"}, "simcse_mlm": {}, "byop": {}, "ifm": {},
    "rankcse": {"teachers": "simcse:7"},
    "consert": {"view1": "shuffle", "view2": "token_cutoff", "view2_rate": 0.2},
    "consert_feature_cutoff": {"method": "consert", "view1": "dropout", "view1_rate": 0.1, "view2": "feature_cutoff",
                               "view2_rate": 0.2},
    "slt_fai": {"aux_warmup_steps": 0}, "slt_fai_simcse": {"method": "slt_fai", "backbone": "simcse",
                                                           "aux_warmup_steps": 0},
    "pt_bert": {"queue_keys": 16}, "pt_bert_pooled": {"method": "pt_bert", "y_source": "pooled", "queue_keys": 16},
    "sarcse": {},
    "paser": {"mlm_weight": 0.1, "contrastive_weight": 1.0},
    "paser_supervised": {"method": "paser", "supervised": True, "train_data": "snli", "init_from_unsup": False},
}


def _built(name, overrides, data_dir):
    # wiki sentences at max_len 64: lengths vary, so rows hold several sentences and a leak between them shows
    cfg = resolve(overrides={"method": name, "scale": "smoke", "model_name": "sre-bert", "train_data": "wiki1m", "max_len": 64, **overrides})
    method_cls = get_method(cfg["method"])
    dependencies = {n: trained_method(o, "cpu", data_dir) for n, o in method_cls.dependencies(cfg).items()}
    torch.manual_seed(0)
    method = method_cls.build(cfg, "cpu", data_dir, dependencies)
    examples = method.corpus(data_dir)[:8]
    for module in method.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    for teacher in getattr(method, "_teachers", []):
        teacher.eval()
    return method.train(), examples


def _step(method, examples, packed):
    """(pooled embeddings of the batch's sentences, loss terms, gradients) of one training step's forward and
    backward, drawn from the same random state."""
    method = copy.deepcopy(method)  # its counters, queues and generators as they were
    method.encoder.packed = packed
    torch.manual_seed(1), random.seed(1), np.random.seed(1)
    batch = method.collate(examples)
    terms = method.loss(batch)
    terms["loss"].backward()
    grads = {n: p.grad for n, p in method.named_parameters() if p.grad is not None}
    sentences = method.encoder.tokenize([e if isinstance(e, str) else e[0] for e in examples])
    assert Packing(sentences["attention_mask"]).rows < len(examples)  # sentences share rows
    with torch.no_grad():
        pooled = method.encoder.embed(sentences, "avg")
    return pooled, {k: v.detach() for k, v in terms.items() if torch.is_tensor(v)}, grads


@pytest.mark.parametrize("variant", VARIANTS)
def test_packed_training_step_equals_padded(variant, data_dir):
    overrides = VARIANTS[variant]
    method, examples = _built(overrides.get("method", variant), overrides, data_dir)
    assert method.encoder.packed  # the default
    pooled, terms, grads = _step(method, examples, packed=False)
    pooled_p, terms_p, grads_p = _step(method, examples, packed=True)
    torch.testing.assert_close(pooled_p, pooled, **TOLERANCE)
    assert terms_p.keys() == terms.keys()
    for key in terms:
        torch.testing.assert_close(terms_p[key], terms[key], **TOLERANCE, msg=f"loss term {key}")
    assert grads_p.keys() == grads.keys() and grads
    for key in grads:
        torch.testing.assert_close(grads_p[key], grads[key], **TOLERANCE, msg=f"gradient of {key}")
