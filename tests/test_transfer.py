"""SentEval transfer tasks: loaders against SentEval's counts (BYOP's Table 5), the protocol against a
direct scikit-learn nested cross-validation."""
import numpy as np
import pytest
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold

from sre_repro.errors import SreError
from sre_repro.evaluate.transfer import REGULARISATION, classify, evaluate_transfer, load_task, logistic, sample_train

COUNTS = {"MR": {"all": 10662}, "CR": {"all": 3775}, "SUBJ": {"all": 10000}, "MPQA": {"all": 10606},
          "SST2": {"train": 67349, "dev": 872, "test": 1821}, "TREC": {"train": 5452, "test": 500},
          "MRPC": {"train": 4076, "test": 1725}}


def hashed(sentences, n_features=64):
    return HashingVectorizer(n_features=n_features, alternate_sign=False).transform(sentences).toarray()


@pytest.mark.parametrize("task", sorted(COUNTS))
def test_loaders_give_senteval_s_counts(task, data_dir):
    data = load_task(task, data_dir)
    assert {split: len(labels) for split, (_, labels) in data.items()} == COUNTS[task]
    assert set(np.unique(data[next(iter(data))][1])) == set(range(6 if task == "TREC" else 2))


@pytest.mark.parametrize("solver", ["liblinear", "lbfgs"])
def test_kfold_protocol_equals_a_direct_nested_cross_validation(data_dir, solver):
    sentences, labels = load_task("MR", data_dir)["all"]
    pick = np.r_[0:300, 5331:5631]  # 300 positive, 300 negative reviews
    sentences, labels = [sentences[i] for i in pick], labels[pick]
    features = lambda s: hashed(s, 2048)  # noqa: E731
    ours = classify({"all": (sentences, labels)}, features, kfold=3, solver=solver)["acc"]

    x, outer_scores = features(sentences), []
    for train, test in StratifiedKFold(3, shuffle=True, random_state=1111).split(x, labels):
        inner = StratifiedKFold(3, shuffle=True, random_state=1111)
        mean_acc = [np.mean([LogisticRegression(C=c, solver=solver, random_state=1111, max_iter=1000)
                             .fit(x[train][a], labels[train][a]).score(x[train][b], labels[train][b])
                             for a, b in inner.split(x[train], labels[train])]) for c in REGULARISATION]
        best = REGULARISATION[int(np.argmax(mean_acc))]
        model = LogisticRegression(C=best, solver=solver, random_state=1111, max_iter=1000).fit(x[train], labels[train])
        outer_scores.append(model.score(x[test], labels[test]))
    assert ours == pytest.approx(100 * np.mean(outer_scores), abs=1e-9)
    assert 55 < ours < 90  # hashed words carry sentiment: above chance, below a real encoder


def test_dev_split_protocol_tests_the_model_that_won_on_dev(data_dir):
    """SST-2: one model per C on train, the best on dev is the one tested (SentEval's SplitClassifier)."""
    data = load_task("SST2", data_dir)
    subset = {split: (sentences[:n], labels[:n]) for (split, (sentences, labels)), n
              in zip(data.items(), (2000, 400, 400))}
    features = lambda s: hashed(s, 1024)  # noqa: E731
    ours = classify(subset, features)

    (x, y), (x_dev, y_dev), (x_test, y_test) = ((features(s), labels) for s, labels in subset.values())
    models = [logistic(c).fit(x, y) for c in REGULARISATION]
    dev = [m.score(x_dev, y_dev) for m in models]
    best = int(np.argmax(dev))
    assert ours["C"] == REGULARISATION[best] and ours["dev_acc"] == pytest.approx(100 * dev[best])
    assert ours["acc"] == pytest.approx(100 * models[best].score(x_test, y_test))
    assert 55 < ours["acc"] < 90


def test_sst2_training_sample_is_stratified_deterministic_and_all_at_zero(data_dir):
    data = load_task("SST2", data_dir)
    sentences, labels = data["train"]
    sample = sample_train(data, 10000)
    kept, kept_labels = sample["train"]
    assert len(kept) == len(kept_labels) == 10000
    assert kept_labels.mean() == pytest.approx(labels.mean(), abs=1e-4)  # the 55.8% positives kept
    rows = iter(zip(sentences, labels))  # the sample is rows of train, labels attached, in file order
    assert all(any(row == (s, y) for row in rows) for s, y in zip(kept, kept_labels))
    assert sample_train(data, 10000)["train"][0] == kept  # same seed, same sample
    assert sample["dev"] is data["dev"] and sample["test"] is data["test"]
    assert sample_train(data, 0) is data and sample_train(data, 10 ** 6) is data
    seen = []
    evaluate_transfer(lambda s: seen.append(len(s)) or hashed(s), tasks=["SST2"], data_dir=data_dir, sst2_train=3000)
    assert seen == [3000, 1821, 872]  # train (sampled), test, dev: only the sample is encoded
    with pytest.raises(SreError, match="sst2_train must be >= 0"):
        evaluate_transfer(hashed, tasks=["SST2"], data_dir=data_dir, sst2_train=-1)


def test_a_bad_solver_fails_before_anything_is_encoded(data_dir):
    encoded = []
    with pytest.raises(SreError, match="unknown solver 'adam'"):
        evaluate_transfer(lambda s: encoded.append(s) or hashed(s), tasks=["SST2"], data_dir=data_dir, solver="adam")
    assert encoded == []


def test_trec_is_one_vs_rest_over_six_classes_as_senteval_s_liblinear(data_dir):
    sentences, labels = load_task("TREC", data_dir)["train"]
    x = hashed(sentences[:1500], 512)
    model = logistic(1.0).fit(x, labels[:1500])
    assert len(model.estimators_) == 6  # one binary liblinear model per class
    scores = model.decision_function(x)
    assert (model.predict(x) == model.classes_[scores.argmax(axis=1)]).all()
    with pytest.raises(SreError, match="unknown solver 'adam'"):
        logistic(1.0, "adam")


def test_mrpc_features_and_bad_names(data_dir):
    seen = []
    out = evaluate_transfer(lambda s: seen.append(len(s)) or hashed(s)[:, :8], tasks=["MRPC"], data_dir=data_dir, kfold=2)
    assert seen == [4076, 4076, 1725, 1725] and out["avg"] == out["MRPC"]["acc"]
    with pytest.raises(SreError, match="unknown transfer task 'SST'"):
        load_task("SST", data_dir)
    with pytest.raises(SreError, match="unknown mrpc_features"):
        evaluate_transfer(hashed, tasks=["MRPC"], mrpc_features="uv")


def test_book_transfer_caches_and_encodes_with_the_right_weights(data_dir, monkeypatch):
    """The protocol itself is tested above; here a stand-in for it records which embeddings it was given."""
    import sre_repro.evaluate.cached as cached_module
    from sre_repro.chapters import byop as byop_chapter
    from sre_repro.encoder import load_encoder
    from sre_repro.train import trained_method

    probe = ["a man is playing a guitar", "the cat sleeps"]
    calls = []

    def fake_protocol(encode, tasks, data_dir, kfold, mrpc_features, solver, sst2_train, max_examples):
        calls.append((tasks, kfold, mrpc_features, solver, sst2_train))
        return {"probe": float(np.abs(encode(probe)).sum()), "avg": 0.0}

    monkeypatch.setattr(cached_module, "evaluate_transfer", fake_protocol)
    plm = byop_chapter.transfer({"model_name": "tiny-random", "pooler": "avg"}, "smoke", data_dir)
    assert calls == [(["TREC", "MRPC"], 2, "senteval", "liblinear", 0)]  # the smoke protocol (every SST-2 phrase)
    assert plm["metrics"]["probe"] == pytest.approx(float(np.abs(load_encoder("tiny-random", "avg").encode(probe)).sum()))
    again = byop_chapter.transfer({"model_name": "tiny-random", "pooler": "avg"}, "smoke", data_dir)
    assert len(calls) == 1 and again["created"] == plm["created"]  # served from the cache

    run = byop_chapter.transfer({"method": "simcse", "seed": 42}, "smoke", data_dir, tasks=["CR"], kfold=3)  # trains once
    trained = trained_method({"method": "simcse", "scale": "smoke", "seed": 42}, data_dir=data_dir)
    assert calls[-1] == (["CR"], 3, "senteval", "liblinear", 0)
    assert run["metrics"]["probe"] == pytest.approx(float(np.abs(trained.encode(probe)).sum()), rel=1e-5)
    assert run["metrics"]["probe"] != pytest.approx(plm["metrics"]["probe"], rel=1e-3)  # not the raw PLM
    assert run["config"]["run"]["method"] == "simcse" and len(run["fingerprints"]) == 2  # its variant and the run's
