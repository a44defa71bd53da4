"""Every parameter validated: unknown keys, wrong types, bad values give one error naming the key."""
import pytest

from sre_repro.config import load_yaml, parse_sets, resolve
from sre_repro.errors import SreError


def test_presets_and_override_order(tmp_path):
    cfg = resolve(overrides={"scale": "paper"})
    assert (cfg["model_name"], cfg["lr"], cfg["batch_size"], cfg["temperature"], cfg["eval_steps"]) == \
        ("bert-base-uncased", 3e-5, 64, 0.05, 125)
    yaml_file = tmp_path / "c.yaml"
    yaml_file.write_text("scale: smoke\nlr: 0.001\nseed: 7\n")
    cfg = resolve(overrides={**load_yaml(yaml_file), **parse_sets(["seed=9", "temperature=0.1"])})
    assert (cfg["scale"], cfg["lr"], cfg["seed"], cfg["temperature"], cfg["model_name"]) == \
        ("smoke", 0.001, 9, 0.1, "tiny-random")


@pytest.mark.parametrize("overrides,message", [
    ({"learning_rate": "1"}, "unknown parameter 'learning_rate' for method simcse"),
    ({"batch_size": "sixty"}, "parameter batch_size expects int, got 'sixty'"),
    ({"lr": [1]}, "parameter lr expects float"),
    ({"temperature": "warm"}, "parameter temperature expects float"),
    ({"method": "simcsee"}, "unknown method 'simcsee': choose from"),
    ({"eval_pooler": "mean"}, "unknown eval_pooler 'mean': choose from cls, cls_mlp"),
    ({"scale": "huge"}, "unknown scale 'huge'"),
    ({"max_len": "1"}, "max_len must be at least 2"),
    ({"batch_size": "1"}, "batch_size 1 is too small: simcse is contrastive"),
    ({"precision": "fp8"}, "unknown precision 'fp8'"),
    ({"temperature": "0"}, "temperature must be positive"),
    ({"method": "simcse_sup", "train_data": "wiki1m"}, "simcse_sup trains on NLI triplets"),
])
def test_bad_parameters(overrides, message):
    with pytest.raises(SreError, match=message.replace("(", r"\(").replace("[", r"\[")):
        resolve(overrides=overrides)


def test_bool_coercion():
    from sre_repro.settings import coerce as _coerce
    assert [_coerce("k", v, bool) for v in ("true", "False", "1", "no")] == [True, False, True, False]
    with pytest.raises(SreError, match="parameter k expects bool, got 'maybe'"):
        _coerce("k", "maybe", bool)


def test_bad_set_syntax_and_missing_yaml(tmp_path):
    with pytest.raises(SreError, match="is not key=value"):
        parse_sets(["lr"])
    with pytest.raises(SreError, match="config file .* does not exist"):
        load_yaml(tmp_path / "missing.yaml")
