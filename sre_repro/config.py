"""Run configuration: one flat set of knobs with defaults, scale presets, type-checked overrides.

Resolution order (later wins): the common defaults, the method's own defaults, the scale preset (common,
then the method's, then at cpu the method's recipe: CPU_RECIPES), the YAML file, then `--set key=value`. Unknown
keys and wrong types are errors that name the key.
"""
from __future__ import annotations

import contextlib
import math
import dataclasses
from dataclasses import dataclass, fields
from pathlib import Path

import yaml

from .errors import SreError
from .methods import get_method
from . import settings
from .settings import CPU_RECIPES, DEVICES, POOLERS, PRECISIONS, QUICK_BUDGETS, SCALES, TRAIN_DATA, coerce, require_choice


@dataclass
class CommonConfig:
    scale: str = "cpu"              # smoke | cpu | paper: which preset fills the defaults
    method: str = "simcse"
    model_name: str = "minilm"      # alias, local path or HF name (mlm pretraining: see its `init`)
    train_data: str = "wiki1m"      # wiki1m (offline sample) | wiki1m_full | sts_unlabeled | snli (not mlm)
    max_train_examples: int = 0     # 0: the whole corpus
    epochs: int = 1
    max_steps: int = 0              # 0: `epochs` passes over the corpus
    batch_size: int = 64
    max_len: int = 32               # training truncation; mlm: block length (evaluation never truncates)
    packed: bool = True             # training forwards on real tokens only (sre_repro/packing.py); False: padded
    lr: float = 3e-5                # the PLM's learning rate
    head_lr: float | None = None    # learning rate of the modules a method adds (Method.added_modules); unset: lr
    head_warmup_ratio: float | None = None  # their linear warm-up, as a share of the steps; unset: warmup_ratio
    weight_decay: float = 0.0
    warmup_ratio: float = 0.0
    adam_eps: float = 1e-8
    grad_clip: float = 1.0
    eval_steps: int = 125           # STS-B dev every N steps; the best checkpoint is kept
    patience: int = 0               # stop once dev's best has not gained min_delta for N evaluations; 0: run to the cap
    min_delta: float = 0.0          # STS-B dev points an evaluation must gain to count as an improvement (protocol.py)
    checkpoint_steps: int = 0       # resumable checkpoint every N steps; 0: at every evaluation
    eval_pooler: str = "cls"        # pooler at evaluation (train-time poolers belong to the method)
    eval_max_pairs: int = 0         # score at most N evenly spaced pairs per STS (sub)set, dev included; 0: all
    precision: str = "fp32"         # fp32 | bf16 (autocast, CPU or GPU) | fp16 (GPU autocast)
    device: str = "auto"            # auto | cpu | cuda
    seed: int = 42
    world_size: int = 1             # data-parallel processes (set by torchrun; batch_size is per process)


# Scale presets shared by every method; a method may add its own on top.
SCALE_PRESETS = {
    "smoke": dict(model_name="tiny-random", train_data="wiki1m", max_train_examples=96, batch_size=8,
                  max_len=16, max_steps=6, eval_steps=3, lr=1e-4, precision="fp32", eval_max_pairs=100),
    # sre-bert: the book's own small raw BERT (models/sre-bert). fp32: the build machines' CPUs (AMD EPYC,
    # AVX2) have no bf16 units; bf16 autocast is ~30x slower there (make bench). Each method's lr, budget and
    # stopping rule at cpu: settings.CPU_RECIPES.
    "cpu": dict(model_name="sre-bert", train_data="wiki1m", batch_size=64, max_len=32, precision="fp32"),
    "paper": dict(model_name="bert-base-uncased", train_data="wiki1m_full", batch_size=64, max_len=32,
                  epochs=1, max_steps=0, eval_steps=125, lr=3e-5, precision="fp16"),
}


_CPU_RECIPE = ["converged"]  # the recipe in force (use_cpu_recipe); a chapter puts its own in force


def use_cpu_recipe(name: str) -> None:
    """Put cpu recipe `name` in force for every config resolved from now on (a chapter's, book.CHAPTER_RECIPES)."""
    if name not in CPU_RECIPES:
        raise SreError(f"unknown cpu recipe {name!r}: choose from {', '.join(CPU_RECIPES)}")
    _CPU_RECIPE[0] = name


@contextlib.contextmanager
def cpu_recipe(name: str):
    """Resolve every config inside under cpu recipe `name`, then restore the one in force."""
    before = _CPU_RECIPE[0]
    use_cpu_recipe(name)
    try:
        yield
    finally:
        _CPU_RECIPE[0] = before


def cpu_recipe_in_force() -> str:
    return _CPU_RECIPE[0]


_QUICK = [False]  # quick mode in force (use_quick_mode); a chapter's `quick` parameter puts it in force


def use_quick_mode(on: bool) -> None:
    """Cap every config resolved from now on at its scale's quick budget (settings.QUICK_BUDGETS), or stop doing so."""
    _QUICK[0] = bool(on)


def quick_cap(scale: str):
    """The step cap quick mode puts on a run at `scale` while it is in force (None otherwise, or if the scale has none)."""
    return QUICK_BUDGETS[scale].get("max_steps") if _QUICK[0] else None


def quick_mode() -> bool:
    return _QUICK[0]


def recipe_presets(method: str, scale: str, recipe: str | None = None) -> dict:
    """The presets of `method`'s cpu recipe (`recipe`, else the one in force); {} at another scale."""
    return settings.recipe_presets(method, scale, recipe or _CPU_RECIPE[0])


# While a fingerprint's probe runs (fingerprints.py) every run resolved is shrunk alike, the runs it depends on too
_PROBE_SIZE: dict = {}


@contextlib.contextmanager
def probing(size: dict):
    """Resolve every config inside to `size` and its method's PROBE_OVERRIDES (a probe's shrunk run)."""
    _PROBE_SIZE.update(size)
    try:
        yield
    finally:
        _PROBE_SIZE.clear()


def field_types(*classes) -> dict:
    """Knob -> its type (a knob that may be unset is typed by its value: "float | None" -> float)."""
    return {f.name: f.type.removesuffix(" | None") if isinstance(f.type, str) else f.type
            for cls in classes for f in fields(cls)}


def parse_sets(pairs) -> dict:
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise SreError(f"--set {pair!r} is not key=value: write e.g. --set lr=3e-5")
        key, value = pair.split("=", 1)
        out[key.strip()] = value
    return out


def load_yaml(path) -> dict:
    if path is None:
        return {}
    path = Path(path)
    if path.is_dir():
        raise SreError(f"config file {path} is a folder: give a YAML file of key: value lines")
    if not path.is_file():
        raise SreError(f"config file {path} does not exist: give a YAML file of key: value lines")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except UnicodeDecodeError:
        raise SreError(f"config file {path} is not text: give a YAML file of key: value lines") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        raise SreError(f"config file {path} is not valid YAML{f' (line {where.line + 1})' if where else ''}: "
                       "write key: value lines") from None
    if not isinstance(data, dict):
        raise SreError(f"config file {path} must be a mapping: write key: value lines, e.g. lr: 3.0e-5")
    return data


def defaults(method: str) -> dict:
    """Every knob of `method` at its default: the common ones, then the method's own."""
    return {**dataclasses.asdict(CommonConfig()), **dataclasses.asdict(get_method(method).Params())}


def resolve(method: str | None = None, overrides: dict | None = None, recipe: str | None = None) -> dict:
    """The complete, validated configuration as a flat dict (at cpu under `recipe`, else the cpu recipe in force)."""
    overrides = dict(overrides or {})
    method = overrides.pop("method", None) or method or "simcse"
    method_cls = get_method(method)
    types = field_types(CommonConfig, method_cls.Params)
    for key in overrides:
        if key not in types:
            raise SreError(f"unknown parameter {key!r} for method {method}: known are {', '.join(sorted(types))}")
    scale = coerce("scale", overrides.get("scale", CommonConfig.scale), str)
    if scale not in SCALES:
        raise SreError(f"unknown scale {scale!r}: choose from {', '.join(SCALES)}")
    cfg = defaults(method)
    cfg.update(SCALE_PRESETS[scale])
    cfg.update(method_cls.SCALE_PRESETS.get(scale, {}))
    cfg.update(recipe_presets(method, scale, recipe))
    # presets that depend on another knob (slt_fai: its backbone's recipe, with SimCSE's cpu recipe)
    cfg.update(getattr(method_cls, "backbone_presets", lambda *_: {})(
        scale, overrides, dataclasses.asdict(CommonConfig()), {**SCALE_PRESETS[scale], **recipe_presets("simcse", scale, recipe)}))
    if _QUICK[0]:  # before the overrides: a knob a chapter or user sets still wins
        quick = QUICK_BUDGETS[scale]
        # a knob counted in steps keeps its share of the run (SLT-FAI's warm-up: 5 % of the cap, not all 60 steps)
        cfg.update({k: round(cfg[k] * quick["max_steps"] / cfg["max_steps"]) for k in method_cls.STEP_KNOBS
                    if "max_steps" in quick and cfg[k] > 0 and cfg["max_steps"] > 0})
        cfg.update(quick)
    unset_allowed = {f.name for cls in (CommonConfig, method_cls.Params) for f in fields(cls)
                     if isinstance(f.type, str) and f.type.endswith("| None")}  # None: "as the default says"
    cfg.update({k: None if v is None and k in unset_allowed else coerce(k, v, types[k]) for k, v in overrides.items()})
    cfg["method"], cfg["scale"] = method, scale
    # the added modules' rate and warm-up follow the PLM's unless set: the record holds the values used
    cfg["head_lr"] = cfg["lr"] if cfg["head_lr"] is None else cfg["head_lr"]
    cfg["head_warmup_ratio"] = cfg["warmup_ratio"] if cfg["head_warmup_ratio"] is None else cfg["head_warmup_ratio"]
    if _PROBE_SIZE:
        cfg.update({**_PROBE_SIZE, **method_cls.PROBE_OVERRIDES})
    validate(cfg, method_cls)
    return cfg


def validate(cfg: dict, method_cls) -> None:
    require_choice(cfg, "precision", PRECISIONS)
    require_choice(cfg, "train_data", TRAIN_DATA)
    require_choice(cfg, "eval_pooler", POOLERS)
    require_choice(cfg, "device", DEVICES)
    if cfg["max_len"] < 2:
        raise SreError(f"max_len must be at least 2 (room for [CLS] and [SEP]), got {cfg['max_len']}")
    if cfg["batch_size"] < 1 or (method_cls.contrastive and cfg["batch_size"] < 2):
        raise SreError(f"batch_size {cfg['batch_size']} is too small: {cfg['method']} is contrastive and needs "
                       "in-batch negatives, use batch_size >= 2")
    for key, value in cfg.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise SreError(f"parameter {key} must be a finite number, got {value}: give a number, e.g. --set {key}=0.1")
    if not 0 <= cfg["seed"] < 2 ** 32:
        raise SreError(f"seed must lie in [0, 2**32), got {cfg['seed']}: give e.g. --set seed=42")
    if cfg["max_len"] > 512:
        raise SreError(f"max_len {cfg['max_len']} is longer than the PLMs' 512 positions: use max_len <= 512")
    for key in ("lr", "epochs", "eval_steps"):
        if cfg[key] <= 0:
            raise SreError(f"parameter {key} must be positive, got {cfg[key]}: give a value above 0")
    if cfg["head_lr"] <= 0:
        raise SreError(f"parameter head_lr must be positive (leave it unset for the same as lr), got {cfg['head_lr']}")
    if not 0 <= cfg["warmup_ratio"] <= 1:
        raise SreError(f"parameter warmup_ratio must lie in [0, 1] (a share of the steps), got {cfg['warmup_ratio']}: "
                       "give e.g. --set warmup_ratio=0.1")
    if not 0 <= cfg["head_warmup_ratio"] <= 1:
        raise SreError(f"parameter head_warmup_ratio must lie in [0, 1] (leave it unset for warmup_ratio), "
                       f"got {cfg['head_warmup_ratio']}")
    for key in ("max_steps", "max_train_examples", "checkpoint_steps", "weight_decay", "warmup_ratio", "grad_clip",
                "eval_max_pairs", "patience", "min_delta"):
        if cfg[key] < 0:
            raise SreError(f"parameter {key} must be >= 0, got {cfg[key]}: give 0 or more")
    method_cls.validate(cfg)
