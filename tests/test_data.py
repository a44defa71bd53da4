"""Loaders against the known counts; missing and corrupt files give one clear error."""
import shutil

import pytest

from sre_repro.data import corpora, sts
from sre_repro.data.paths import check, data_file, resolve_data_dir
from sre_repro.errors import SreError


@pytest.mark.parametrize("task,count", [("STS12", 3108), ("STS13", 1500), ("STS14", 3750), ("STS15", 3000),
                                        ("STS16", 1186)])
def test_sts_years_match_senteval_counts(data_dir, task, count):
    assert sum(len(p) for p in sts.load_sts_year(task, data_dir).values()) == count


def test_sts13_has_no_smt_and_empty_gold_is_dropped(data_dir):
    assert "SMT" not in sts.load_sts_year("STS13", data_dir)
    with_unscored = sts.load_sts_year("STS15", data_dir, keep_unscored=True)
    assert sum(len(p) for p in with_unscored.values()) > 3000


@pytest.mark.parametrize("task,counts", [("STSBenchmark", (5749, 1500, 1379)), ("SICKRelatedness", (4500, 500, 4927))])
def test_split_counts(data_dir, task, counts):
    assert tuple(len(sts.load_split(task, s, data_dir)) for s in ("train", "dev", "test")) == counts


def test_stsb_first_dev_pair(data_dir):
    dev = sts.load_split("STSBenchmark", "dev", data_dir)
    assert (dev.sent1[0], dev.sent2[0], dev.gold[0]) == (
        "a man with a hard hat is dancing .", "a man wearing a hard hat is dancing .", 5.0)  # SentEval's tokenised copy


def test_unlabeled_sts_matches_the_papers_89192(data_dir):
    assert len(corpora.unlabeled_sts(data_dir, deduplicate=False)) == corpora.PAPER_UNLABELED_STS_COUNT == 89192
    assert len(corpora.unlabeled_sts(data_dir)) == 47328


def test_other_corpora_counts(data_dir):
    assert len(corpora.wiki1m(data_dir)) == 11913
    triplets = corpora.snli_triplets(data_dir)
    assert len(triplets) == 5864 and all(len(t) == 3 for t in triplets)
    assert [len(corpora.qqp(s, data_dir)) for s in ("dev", "test")] == [10000, 10000]
    assert sum(label for *_, label in corpora.qqp("dev", data_dir)) == 5000
    assert len(corpora.askubuntu_ids("dev", data_dir)) == 200
    counts = corpora.bookcorpus_token_counts(data_dir)
    assert len(counts) == 30522 and sum(counts.values()) == 1_098_720_840


def test_nltk_corpus_is_read_offline(data_dir):
    sents = corpora.nltk_sentences("inaugural", data_dir)
    assert len(sents) > 4000 and sents[0] == "Fellow - Citizens of the Senate and of the House of Representatives:"


def _copy(data_dir, tmp_path, rel):
    target = tmp_path / "d" / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(data_dir / rel, target)
    return tmp_path / "d", target


def test_missing_file_names_file_dir_and_fix(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SreError, match=r"STSBenchmark/sts-dev.csv is missing from data dir .*empty: run `sre-repro download"):
        sts.load_split("STSBenchmark", "dev", tmp_path / "empty")


def test_corrupt_file_is_detected(data_dir, tmp_path):
    rel = "senteval/downstream/STS/STSBenchmark/sts-dev.csv"
    root, target = _copy(data_dir, tmp_path, rel)
    target.write_text(target.read_text().replace("dancing", "Dancing", 1))
    with pytest.raises(SreError, match="corrupt"):
        data_file(rel, root)


def test_missing_data_dir(tmp_path):
    with pytest.raises(SreError, match="does not exist: pass --data-dir"):
        resolve_data_dir(tmp_path / "nope")


def test_check_reports_missing_and_corrupt(data_dir, tmp_path):
    rel = "quora/dev.txt"
    root, target = _copy(data_dir, tmp_path, rel)
    missing, corrupt, ok = check(root)
    assert ok == 1 and not corrupt and rel not in missing and len(missing) > 3000
    target.write_text("x")
    assert check(root)[1] == [rel]


def test_full_check_of_the_shared_data_passes(data_dir):
    missing, corrupt, ok = check(data_dir)
    assert (missing, corrupt) == ([], []) and ok == 3605
