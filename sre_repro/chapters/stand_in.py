"""Chapter 00b (the stand-in PLM): its pretraining log and the token-norm statistics of its vocabulary."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..claims import Claim
from ..errors import SreError
from ..papers import simcse as paper

# What the edition needs of its stand-in (the book's own requirements, so no paper effect; whitening's is the
# SimCSE paper's SimCSE over BERT-whitening)
CLAIMS = {c.id: c for c in [
    Claim("simcse_gains_5_over_pooling", "SimCSE beats the raw model's best pooling by at least 5 points", "superiority",
          "SimCSE - the raw model's best pooling - 5, average STS", None),
    Claim("simcse_beats_whitening", "SimCSE beats the raw model with whitening", "superiority",
          "SimCSE - the raw model + whitening, average STS",
          paper.UNSUP_SIMCSE["SimCSE-BERT-base (Gao et al.)"][-1] - paper.WITHOUT_TRAINING["BERT-whitening"][-1]),
    Claim("raw_more_anisotropic", "the raw model is more anisotropic than SimCSE (same pooler)", "superiority",
          "the raw model's - SimCSE's anisotropy, STS-B test", None),
]}


def stand_in_log(path=None) -> dict:
    """The committed stand-in PLM's training log (models/sre-bert/training_log.json) and its folder. A model
    pretrained in stages has one log per stage under "stages" (oldest first); "curve" runs across them, its
    steps counted from the first stage's start, and "train_seconds" is their sum."""
    import json

    from ..encoder import resolve_model_path

    folder = Path(path or resolve_model_path("sre-bert"))
    log_file = folder / "training_log.json"
    if not log_file.is_file():
        raise SreError(f"{log_file} is missing: run `python -m sre_repro pretrain --config configs/sre-bert.yaml`")
    last = json.loads(log_file.read_text())
    stages = [*last.pop("earlier_stages", []), last]
    curve, offset = [], 0
    for number, stage in enumerate(stages, start=1):
        curve += [{**point, "step": offset + point["step"], "stage": number} for point in stage["curve"]]
        offset += stage["config"]["max_steps"]
    return {**last, "stages": stages, "curve": curve, "train_seconds": sum(s["train_seconds"] for s in stages),
            "path": str(folder)}


def token_norms(model: str, data_dir=None) -> pd.DataFrame:
    """Per vocabulary entry: the L2 norm of the model's input token embedding and the token's BookCorpus
    count (SLT-FAI's counts; the vocabulary must be bert-base-uncased's). Entries never seen are dropped."""
    from ..data.corpora import bookcorpus_token_counts
    from ..encoder import load_backbone

    backbone, tokenizer = load_backbone(model)
    counts = bookcorpus_token_counts(data_dir)
    vocab = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    if vocab != list(counts):
        raise SreError(f"model {model!r} does not use bert-base-uncased's vocabulary: token frequencies do not apply")
    norms = backbone.get_input_embeddings().weight.detach().norm(dim=1).numpy()
    frame = pd.DataFrame({"token": vocab, "norm": norms, "count": list(counts.values())})
    return frame[frame["count"] > 0].reset_index(drop=True)
