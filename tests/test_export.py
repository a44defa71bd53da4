"""`sre-repro export`: the folder that sentence-transformers loads gives the book's embeddings."""
import json

import numpy as np
import pytest
from transformers import AutoModel

from sre_repro import runs
from sre_repro.cli import main
from sre_repro.errors import SreError
from sre_repro.export import export
from sre_repro.settings import readable_mode
from sre_repro.train import train
from sre_repro.train import trained_method

SENTENCES = ["A man is playing a guitar.", "Two dogs run on the beach near the sea, barking at the waves.", "hi"]


@pytest.mark.parametrize("pooler,eval_pooler", [("cls", "cls_mlp"), ("cls", "cls"), ("avg", "avg"),
                                                ("avg_first_last", "avg_first_last"),
                                                ("avg_top2", "avg_top2")])
def test_sentence_transformers_reload_gives_the_books_embeddings(pooler, eval_pooler, tmp_path, monkeypatch, capfd):
    from sentence_transformers import SentenceTransformer

    monkeypatch.setenv("SRE_REPRO_WORK", str(tmp_path / "w"))
    record = train({"method": "simcse", "scale": "smoke", "pooler": pooler, "eval_pooler": eval_pooler},
                   results_root=tmp_path / "r", work_root=tmp_path / "w")
    capfd.readouterr()
    out = export(f"simcse/{record['config_hash']}", tmp_path / "export", results_root=tmp_path / "r")
    assert "LOAD REPORT" not in capfd.readouterr().err  # transformers' report of the unused pooler weights
    card = (out / "README.md").read_text()  # the run's own card, not sentence-transformers' template
    assert card.startswith(f"# sre-repro simcse run {record['config_hash']}") and f"pooling `{eval_pooler}`" in card
    assert ("*not* this embedding" in card) == (eval_pooler == "cls_mlp")
    assert {p.stat().st_mode & 0o777 for p in out.rglob("*") if p.is_file()} == {readable_mode()}  # 0644, not 0600
    ours = trained_method(record["config"], device="cpu").encode(SENTENCES)
    theirs = SentenceTransformer(str(out), device="cpu", local_files_only=True).encode(SENTENCES)
    assert np.abs(theirs - ours).max() < 1e-5
    assert np.abs(ours).max() > 0.1  # not two zero vectors agreeing
    assert AutoModel.from_pretrained(out).config.hidden_size == ours.shape[1]  # the root is a plain HF model too
    assert json.loads((out / "sre_repro_run.json").read_text())["config_hash"] == record["config_hash"]


def test_export_refuses_what_it_cannot_export(tmp_path, capsys):
    with pytest.raises(SreError, match="no run record"):
        export("simcse/0000000000000000", tmp_path / "x", results_root=tmp_path)
    (tmp_path / "eval").mkdir()
    signed = lambda record: json.dumps({**record, "digest": runs.content_digest(record)})  # noqa: E731
    (tmp_path / "eval" / "abc.json").write_text(signed({"kind": "eval", "config": {}}))
    with pytest.raises(SreError, match="not a trained sentence encoder"):
        export("abc", tmp_path / "x", results_root=tmp_path)
    (tmp_path / "simcse").mkdir()
    (tmp_path / "simcse" / "old.json").write_text(signed({"kind": "simcse", "config": {}, "fingerprints": {"simcse-x": "0"}}))
    with pytest.raises(SreError, match="is stale .*simcse-x: fingerprint 0 is now None.*rerun it"):
        export("simcse/old", tmp_path / "x", results_root=tmp_path)
    assert main(["export", str(tmp_path / "simcse" / "old.json"), "--to", str(tmp_path / "x")]) == 2
    assert "is stale" in capsys.readouterr().err and not (tmp_path / "x").exists()
