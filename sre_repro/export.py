"""A run's kept weights as a folder that both Hugging Face and sentence-transformers load.

The folder's root is a plain HF model (config, weights, tokenizer: `AutoModel.from_pretrained(dir)`), and
`modules.json` beside them makes it a sentence-transformers model whose pooling is the run's `eval_pooler`:
  cls, avg             Pooling (cls / mean)
  cls_mlp              Pooling cls + Dense(tanh) with the MLP trained with it
  avg_first_last       WeightedLayerPooling over layers 1..L with weights [1, 0, ..., 0, 1], then mean
  avg_first_last_emb   the same over layers 0..L (the embedding output as "first"; no method trains with it)
  avg_top2             WeightedLayerPooling over the last two layers, then mean
(a weighted mean with weights 1 and 1 is (first + last) / 2, which is the book's pooler).
"""
import contextlib
import json
import sys
from pathlib import Path

import torch

from . import runs
from .errors import SreError
from .methods import get_method
from .settings import readable_mode
from .train import starts_outdated, trained_method

NOT_EMBEDDING_KINDS = {*runs.EVALUATION_SIZE_KNOBS, "mlm"}


def find_record(run: str, results_root=None) -> dict:
    """A run named by its record file, `method/config_hash`, or a bare config hash."""
    path, root = Path(run), runs.results_dir(results_root)
    if path.suffix != ".json":
        matches = [] if "/" in run else sorted(root.glob(f"*/{run}.json"))
        if len(matches) > 1:
            raise SreError(f"run {run!r} names {len(matches)} records: give it as method/{run}")
        path = matches[0] if matches else root / f"{run}.json"
    if not path.is_file():
        raise SreError(f"no run record {path}: give a record file, method/config_hash, or a config hash from "
                       f"{root}")
    try:
        record = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError):
        raise SreError(f"{path} is not a readable JSON record: recompute its run with `sre-repro train --force`") from None
    if not isinstance(record, dict) or record.get("digest") != runs.content_digest(record):
        raise SreError(f"{path} does not match its digest (edited by hand or damaged): recompute it with "
                       "`sre-repro train --force`")
    kind = record.get("kind")
    if kind in NOT_EMBEDDING_KINDS or "config" not in record:
        raise SreError(f"{path} is a {kind!r} record, not a trained sentence encoder: export a method's run"
                       + (" (pretraining already wrote its model to output_dir)" if kind == "mlm" else ""))
    if reasons := runs.stale_reasons(record, results_root) or starts_outdated(record["config"], record, results_root):
        raise SreError(f"{path} is stale ({reasons[0]}): rerun it with `sre-repro train --force` before exporting")
    return record


@contextlib.contextmanager
def quiet_transformers():
    """transformers' warnings and infos off for a block."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)


def export(run: str, to, results_root=None, data_dir=None) -> Path:
    """Write the run's encoder to `to` (HF + sentence-transformers); returns the folder."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Pooling, Transformer, WeightedLayerPooling

    out = Path(to)
    if out.exists() and not out.is_dir():
        raise SreError(f"{out} is a file, not a folder: export into a new folder (--to a path that does not exist)")
    if out.exists() and any(out.iterdir()):
        raise SreError(f"{out} is not empty: export into a new folder")
    record = find_record(run, results_root)
    cfg = record["config"]
    try:  # before any training the kept weights may need
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SreError(f"cannot create {out} ({exc.strerror}): export into a new folder you can write") from None
    method = trained_method(cfg, device="cpu", data_dir=data_dir)
    encoder, pooler = method.encoder, cfg["eval_pooler"]
    encoder.model.save_pretrained(out)
    encoder.tokenizer.save_pretrained(out)

    layers = encoder.model.config.num_hidden_layers
    max_len = min(512, getattr(encoder.tokenizer, "model_max_length", 512),
                  getattr(encoder.model.config, "max_position_embeddings", 512))
    with quiet_transformers():  # its load report lists the unused pooler.dense weights as MISSING: noise here
        transformer = Transformer(str(out), max_seq_length=max_len,
                                  config_kwargs={"output_hidden_states": pooler.startswith("avg_")})
    dim = transformer.get_embedding_dimension()
    stack = [transformer]
    if pooler.startswith("avg_"):
        start = {"avg_first_last": 1, "avg_first_last_emb": 0, "avg_top2": layers - 1}[pooler]
        weights = [1.0] + [0.0] * (layers - start - 1) + [1.0]
        stack.append(WeightedLayerPooling(dim, num_hidden_layers=layers, layer_start=start,
                                          layer_weights=torch.nn.Parameter(torch.tensor(weights))))
    stack.append(Pooling(dim, pooling_mode="cls" if pooler.startswith("cls") else "mean"))
    if pooler == "cls_mlp":
        dense = Dense(dim, dim, activation_function=torch.nn.Tanh())
        dense.linear.load_state_dict(encoder.mlp.dense.state_dict())
        stack.append(dense)
    model = SentenceTransformer(modules=stack, device="cpu")
    model.save(str(out), model_name=f"sre-repro-{cfg['method']}")
    (out / "sre_repro_run.json").write_text(json.dumps(
        {k: record.get(k) for k in ("kind", "config", "config_hash", "fingerprints", "metrics")}, indent=1, default=str))
    (out / "README.md").write_text(model_card(record, out))  # in place of sentence-transformers' generic template
    for path in out.rglob("*"):  # some writers go through 0600 temporary files
        path.chmod(readable_mode() | (0o111 if path.is_dir() else 0))
    return out


def model_card(record: dict, out: Path) -> str:
    """The exported folder's README: what run it is, its scores, and how to load it (and what AutoModel gives)."""
    from .data.sts import STS_TASKS

    cfg, metrics = record["config"], record["metrics"]
    sts = metrics.get("sts", {})
    scores = " | ".join(f"{sts[t]:.2f}" for t in [*STS_TASKS, "avg"] if t in sts)
    paragraph = " ".join(sys.modules[get_method(cfg["method"]).__module__].__doc__.strip().split("\n\n")[0].split())
    about = paragraph.split(": ")[0]  # what the method file's docstring names it
    knobs = ", ".join(f"{k}={cfg[k]}" for k in ("model_name", "train_data", "max_steps", "batch_size", "max_len", "lr",
                                                   "head_lr", "seed", "eval_pooler") if k in cfg)
    backbone_only = ("The [CLS] vector of AutoModel is *not* this embedding: the run's MLP is in `2_Dense/`"
                     if cfg["eval_pooler"] == "cls_mlp" else
                     f"AutoModel gives the token states only: pool them as `{cfg['eval_pooler']}` yourself to get this "
                     "embedding")
    return f"""# sre-repro {cfg['method']} run {record['config_hash']}

The sentence encoder of one training run of the sre-repro book: method `{cfg['method']}` ({about})
Exported by `python -m sre_repro export`; the run's full record is `sre_repro_run.json`.

- config: {knobs} (every knob in `sre_repro_run.json`)
- STS-B dev (kept checkpoint): {metrics.get('stsb_dev_best', float('nan')):.2f} at step {metrics.get('best_step')}
- STS test, Spearman x 100 ({', '.join(t for t in [*STS_TASKS, 'avg'] if t in sts)}): {scores}

## Load it

With sentence-transformers (the embedding the book evaluates, pooling `{cfg['eval_pooler']}` included):

```python
from sentence_transformers import SentenceTransformer
model = SentenceTransformer("{out.name}")
embeddings = model.encode(["A man is playing a guitar.", "Someone plays an instrument."])
```

With transformers, the folder's root is a plain model: `AutoModel.from_pretrained("{out.name}")` and
`AutoTokenizer.from_pretrained("{out.name}")` load the backbone. {backbone_only}.
"""
