"""Losses against hand computations on tiny tensors."""
import math

import pytest
import torch

from sre_repro.config import resolve
from sre_repro.encoder import load_encoder
from sre_repro.methods import available, get_method
from sre_repro.methods.common import cosine_matrix, info_nce


def _hand_info_nce(z1, z2, tau, negatives=None):
    total = 0.0
    for i in range(len(z1)):
        cos = lambda a, b: float(a @ b / a.norm() / b.norm())
        cols = [cos(z1[i], z2[j]) for j in range(len(z2))]
        if negatives is not None:
            cols += [cos(z1[i], negatives[j]) for j in range(len(negatives))]
        total += -cols[i] / tau + math.log(sum(math.exp(c / tau) for c in cols))
    return total / len(z1)


def test_info_nce_on_3x3_by_hand():
    z1 = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    z2 = torch.tensor([[1.0, 0.1], [0.2, 1.0], [1.0, 0.8]])
    assert float(info_nce(z1, z2, 0.05)) == pytest.approx(_hand_info_nce(z1, z2, 0.05), rel=1e-5)
    # one direction only: swapping the views changes the loss
    assert float(info_nce(z2, z1, 0.05)) == pytest.approx(_hand_info_nce(z2, z1, 0.05), rel=1e-5)
    assert float(info_nce(z1, z2, 0.05)) != pytest.approx(float(info_nce(z2, z1, 0.05)), rel=1e-3)


def test_info_nce_with_hard_negatives_by_hand():
    z1 = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    z2 = torch.tensor([[1.0, 0.1], [0.2, 1.0], [1.0, 0.8]])
    z3 = torch.tensor([[-1.0, 0.3], [0.5, -1.0], [0.9, 1.0]])
    assert float(info_nce(z1, z2, 0.05, z3)) == pytest.approx(_hand_info_nce(z1, z2, 0.05, z3), rel=1e-5)


def test_cosine_matrix():
    a = torch.tensor([[3.0, 4.0]])
    assert cosine_matrix(a, torch.tensor([[4.0, 3.0], [0.0, 2.0]]))[0].tolist() == pytest.approx([24 / 25, 0.8])


def test_methods_registry():
    assert {"simcse", "simcse_sup"} <= set(available())


def _method(name, **overrides):
    cfg = resolve(overrides={"method": name, "scale": "smoke", **overrides})
    encoder = load_encoder(cfg["model_name"], cfg["eval_pooler"], device="cpu")
    return get_method(name)(cfg, encoder)


def test_simcse_batch_is_two_copies_in_one_forward_and_loss_matches():
    method = _method("simcse")
    batch = method.collate(["a cat sat", "dogs bark loudly at night", "hello"])
    ids = batch["input_ids"]
    assert ids.shape[0] == 6 and torch.equal(ids[:3], ids[3:])
    method.eval()  # dropout off: both views are identical, so the loss is the hand InfoNCE of z with itself
    z = method.encoder.embed(batch, pooler="cls_mlp")
    assert method.loss(batch)["loss"].item() == pytest.approx(_hand_info_nce(z[:3], z[3:], 0.05), rel=1e-4)
    assert torch.allclose(z[:3], z[3:], atol=1e-5)  # same rows of one GEMM: equal up to blocking round-off
    method.train()  # dropout on: the views differ
    z = method.encoder.embed(batch, pooler="cls_mlp")
    assert not torch.allclose(z[:3], z[3:], atol=1e-3)


def test_simcse_mlp_is_used_in_training_not_at_test():
    method = _method("simcse")
    batch = method.collate(["a cat sat", "dogs bark"])
    method.eval()
    with_mlp = method.encoder.embed(batch, pooler="cls_mlp")
    test_time = method.encoder.embed(batch, pooler=method.cfg["eval_pooler"])
    assert method.cfg["eval_pooler"] == "cls"
    assert torch.allclose(method.mlp(test_time), with_mlp, atol=1e-6)


def test_supervised_simcse_uses_triplets():
    method = _method("simcse_sup")
    triplets = [("a man plays", "a person plays", "nobody plays"), ("a dog", "an animal", "a cat sleeps")]
    batch = method.collate(triplets)
    method.eval()
    z = method.encoder.embed(batch, pooler="cls_mlp")
    expected = _hand_info_nce(z[:2], z[2:4], 0.05, z[4:])
    assert method.loss(batch)["loss"].item() == pytest.approx(expected, rel=1e-4)


def test_simcse_noise_controls_fixed_mask_and_dropout():
    """SimCSE's Table 3 rows: "fixed 0.1" gives both views one mask (the same vector twice; one row per sentence),
    p = 0 turns every dropout of the PLM off (the two views equal); the default keeps two different masks."""
    from sre_repro.errors import SreError

    sentences = ["a cat sat on the mat", "dogs bark at night", "the sun is hot today"]
    built = {}
    for name, knobs in {"default": {}, "fixed": {"fixed_mask": True}, "p0": {"dropout": 0.0}}.items():
        cfg = resolve(overrides={"method": "simcse", "scale": "smoke", "pooler": "avg", "eval_pooler": "avg", **knobs})
        torch.manual_seed(0)
        method = get_method("simcse").build(cfg, "cpu").train()
        batch = method.collate(sentences)
        z1, z2 = method.views(batch)
        built[name] = (method, batch, z1, z2)
    _, batch, z1, z2 = built["fixed"]
    assert len(batch["input_ids"]) == 3 and torch.equal(z1, z2)
    torch.manual_seed(1)
    z = built["fixed"][0].views(batch)[0].detach()
    torch.manual_seed(1)  # the same dropout draw: the loss of the same vector as both views
    assert float(built["fixed"][0].loss(batch)["loss"].detach()) == pytest.approx(_hand_info_nce(z, z, 0.05), rel=1e-4)
    method, batch, z1, z2 = built["p0"]
    assert len(batch["input_ids"]) == 6 and torch.allclose(z1, z2, atol=1e-6)
    assert all(m.p == 0.0 for m in method.encoder.model.modules() if isinstance(m, torch.nn.Dropout))
    _, _, z1, z2 = built["default"]
    assert not torch.allclose(z1, z2, atol=1e-3)
    with pytest.raises(SreError, match="dropout must lie in"):
        resolve(overrides={"method": "simcse", "scale": "smoke", "dropout": 1.5})
