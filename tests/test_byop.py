"""IFM and BYOP losses against hand computations of the BYOP paper's Eq. 3 on a 3 x 3 cosine matrix."""
import math

import pytest
import torch

from sre_repro.config import resolve
from sre_repro.errors import SreError
from sre_repro.methods.common import dynamic_margin, margin_info_nce, perturbed_cosines

# z1 = the unit vectors, z2 = unit rows, so cos(z1_i, z2_j) = Z2[j][i]
Z1 = torch.eye(3)
Z2 = torch.tensor([[0.8, 0.6, 0.0], [0.0, 1.0, 0.0], [0.6, 0.0, 0.8]])
COS = [[0.8, 0.0, 0.6], [0.6, 1.0, 0.0], [0.0, 0.0, 0.8]]
TAU = 0.5


def eq3(pos_shift, neg_shift):
    """Mean over anchors of -log e^{(c_ii + pos_i)/tau} / (e^{(c_ii + pos_i)/tau} + sum_j!=i e^{(c_ij + neg_ij)/tau})."""
    total = 0.0
    for i in range(3):
        positive = math.exp((COS[i][i] + pos_shift(i)) / TAU)
        negatives = sum(math.exp((COS[i][j] + neg_shift(i, j)) / TAU) for j in range(3) if j != i)
        total += -math.log(positive / (positive + negatives))
    return total / 3


def test_the_cosine_matrix_is_the_hand_one():
    assert torch.allclose(perturbed_cosines(torch.tensor(COS), "p+", 0.0), torch.tensor(COS))
    assert torch.allclose(perturbed_cosines(torch.tensor(COS), "p-n+", 0.1),
                          torch.tensor([[0.7, 0.1, 0.7], [0.7, 0.9, 0.1], [0.1, 0.1, 0.7]]))


def test_ifm_multi_task_loss_is_eq3():
    m = 0.1
    plain, ifm = eq3(lambda i: 0, lambda i, j: 0), eq3(lambda i: -m, lambda i, j: m)
    terms = margin_info_nce(Z1, Z2, TAU, "p-n+", m, "multi-task")
    assert terms["loss_plain"].item() == pytest.approx(plain, abs=1e-6)
    assert terms["loss_perturbed"].item() == pytest.approx(ifm, abs=1e-6)
    assert terms["loss"].item() == pytest.approx(0.5 * (plain + ifm), abs=1e-6)
    weighted = margin_info_nce(Z1, Z2, TAU, "p-n+", m, "multi-task", alpha=3.0)["loss"].item()
    assert weighted == pytest.approx((plain + 3 * ifm) / 4, abs=1e-6)  # the IFM code's (L + a L_adv)/(1 + a)


def test_ifm_makes_the_task_harder_and_byop_easier():
    m = 0.05
    plain = margin_info_nce(Z1, Z2, TAU, "p+", 0.0, "single")["loss"].item()
    ifm = margin_info_nce(Z1, Z2, TAU, "p-n+", m, "single")["loss"].item()
    byop = margin_info_nce(Z1, Z2, TAU, "p+n-", m, "single")["loss"].item()
    assert byop < plain < ifm
    assert byop == pytest.approx(eq3(lambda i: m, lambda i, j: -m), abs=1e-6)


def test_shift_invariance_n_minus_is_p_plus_and_p_minus_n_plus_is_twice_p_minus():
    m = 0.07
    n_minus = margin_info_nce(Z1, Z2, TAU, "n-", m, "single")["loss"]
    assert torch.allclose(n_minus, margin_info_nce(Z1, Z2, TAU, "p+", m, "single")["loss"])
    assert torch.allclose(margin_info_nce(Z1, Z2, TAU, "p-n+", m, "single")["loss"],
                          margin_info_nce(Z1, Z2, TAU, "p-", 2 * m, "single")["loss"])


def test_byopd_margin_is_the_positive_similarity_over_n_minus_1():
    cos = torch.tensor(COS, requires_grad=True)
    anchor, column = dynamic_margin(cos, "anchor"), dynamic_margin(cos, "column")
    assert not anchor.requires_grad  # detached, as in the official code
    assert torch.allclose(anchor.flatten(), torch.tensor([0.4, 0.5, 0.4]))  # (0.8, 1.0, 0.8) / (3 - 1)
    # n-: the paper gives row i the margin of anchor i; the official code gives column j the margin m_j
    paper = eq3(lambda i: 0, lambda i, j: -COS[i][i] / 2)
    code = eq3(lambda i: 0, lambda i, j: -COS[j][j] / 2)
    assert margin_info_nce(Z1, Z2, TAU, "n-", lambda c: dynamic_margin(c, "anchor"), "single")["loss"].item() == pytest.approx(paper, abs=1e-6)
    assert margin_info_nce(Z1, Z2, TAU, "n-", lambda c: dynamic_margin(c, "column"), "single")["loss"].item() == pytest.approx(code, abs=1e-6)
    assert paper != pytest.approx(code)


def test_bad_settings_are_named():
    with pytest.raises(SreError, match="unknown perturbation 'p\\*'"):
        resolve(overrides={"method": "byop", "perturbation": "p*"})
    with pytest.raises(SreError, match="unknown loss_mode 'both'"):
        resolve(overrides={"method": "ifm", "loss_mode": "both"})
    with pytest.raises(SreError, match="margin must be >= 0"):
        resolve(overrides={"method": "byop", "margin": -0.1})
    assert resolve(overrides={"method": "byop", "scale": "cpu"})["pooler"] == "avg"


def test_transcribed_tables_are_consistent():
    from sre_repro.papers import byop as paper
    for table in (paper.TABLE7, paper.TABLE10):
        for plm, rows in table.items():
            for name, row in rows.items():
                assert sum(row[:7]) / 7 == pytest.approx(row[7], abs=0.02), (plm, name)
    # Table 8/9's first rows are Table 7's BYOPD / BYOPD-M averages
    for plm in paper.PLMS:
        assert paper.TABLE8_SINGLE[plm]["BYOPD"] == paper.TABLE7[plm]["SimCSE +BYOPD"][7]
        assert paper.TABLE9_MULTI[plm]["BYOPD-M"] == paper.TABLE7[plm]["SimCSE +BYOPD-M"][7]


def test_methods_wire_their_settings_into_the_loss():
    from sre_repro.encoder import load_encoder
    from sre_repro.methods import get_method

    def build(name, **overrides):
        cfg = resolve(overrides={"method": name, "scale": "smoke", **overrides})
        method = get_method(name)(cfg, load_encoder(cfg["model_name"], cfg["eval_pooler"], device="cpu"))
        return method.eval()  # no dropout: the two views are equal, so the loss is a function of z alone

    sentences = ["a cat sat on the mat", "dogs bark at night", "the sun is hot", "rain again today"]
    byop = build("byop", margin_type="dynamic", perturbation="p+n-", loss_mode="multi-task", multitask_alpha=2.0)
    batch = byop.collate(sentences)
    z1, z2 = byop.encoder.embed(batch, pooler=byop.train_pooler).chunk(2)
    expected = margin_info_nce(z1, z2, 0.05, "p+n-", lambda c: dynamic_margin(c, "anchor"), "multi-task", 2.0)
    terms = byop.loss(batch)
    assert torch.allclose(terms["loss"], expected["loss"]) and terms["loss"].requires_grad
    ifm = build("ifm", margin=0.1)
    z1, z2 = ifm.encoder.embed(batch, pooler=ifm.train_pooler).chunk(2)
    assert torch.allclose(ifm.loss(batch)["loss"], margin_info_nce(z1, z2, 0.05, "p-n+", 0.1, "multi-task")["loss"])


def test_ifm_tracks_training_view_geometry_without_touching_the_training_randomness(data_dir):
    from sre_repro.evaluate.geometry import alignment
    from sre_repro.methods import get_method

    cfg = resolve(overrides={"method": "ifm", "scale": "smoke", "train_geometry_sentences": 20})
    ifm = get_method("ifm").build(cfg, "cpu", data_dir)
    ifm.eval()
    torch.manual_seed(5)
    first = ifm.training_geometry()
    after = torch.rand(1)
    torch.manual_seed(5)
    assert ifm.training_geometry() == first and torch.equal(torch.rand(1), after)  # same sample, own dropout seed
    assert not ifm.training  # the mode it was in comes back
    assert len(ifm._geometry_sample) == 20 and first["train_alignment"] > 0  # dropout views differ
    batch = ifm.collate(ifm._geometry_sample)
    ifm.eval()
    with torch.no_grad():
        z1, z2 = ifm.views(batch)
    assert alignment(z1, z2) == pytest.approx(0.0, abs=1e-10)  # without dropout the views coincide
    assert {"stsb_dev", "alignment", "train_alignment", "train_uniformity"} <= set(ifm.dev_metrics())


def test_paper_gains_are_differences_of_the_papers_averages():
    from sre_repro.chapters.byop import paper_gains
    gains = paper_gains("BERT-base")
    assert gains["SimCSE +BYOPD"] == pytest.approx(77.45 - 76.95) and gains["SimCSE +IFM"] == pytest.approx(77.39 - 76.95)


def test_a_margin_engages_when_it_changes_the_first_batchs_loss_by_one_percent():
    from sre_repro.chapters.byop import perturbation_engagement, perturbation_share
    simcse = [{"seed": 42, "training": {"loss_first": 2.00}}, {"seed": 43, "training": {"loss_first": 1.80}}]
    single = [{"seed": 43, "training": {"loss_first": 1.70, "terms": {}}}, {"seed": 42, "training": {"loss_first": 1.90}}]
    assert perturbation_share(single[0], simcse[1]) == (1.80, 1.70)  # the same seed's run gives the plain loss
    ok, why = perturbation_engagement(single, simcse)  # 5.6 % and 5 %
    assert ok and "5.56%" in why and "5.00%" in why
    multi = [{"seed": 42, "training": {"loss_first": 1.0, "terms": {"loss_plain": {"first": 2.0}, "loss_perturbed": {"first": 2.01}}}}]
    assert perturbation_share(multi[0]) == (2.0, 2.01)  # its own two terms, no reference needed
    ok, why = perturbation_engagement(multi, [])
    assert not ok and why.startswith("seed 42: changes the batch's loss by 0.50%")
    with pytest.raises(SreError, match="same seed"):
        perturbation_share(single[0], simcse[0])


def test_margin_table_reads_each_seed_against_the_same_seeds_run_without_the_margin():
    from sre_repro.chapters.byop import margin_table
    simcse = [{"seed": 42, "training": {"loss_first": 2.00}}, {"seed": 43, "training": {"loss_first": 1.80}}]
    byop = [{"seed": 43, "training": {"loss_first": 1.79, "terms": {}}}, {"seed": 42, "training": {"loss_first": 1.90}}]
    table = margin_table({"BYOP": (byop, simcse)})
    assert table.loc[("BYOP", 42), "change"] == "5.00%" and table.loc[("BYOP", 42), "engaged"] == "yes"
    assert table.loc[("BYOP", 43), "change"] == "0.56%" and table.loc[("BYOP", 43), "engaged"] == "no"
    assert table.loc[("BYOP", 43), "loss without the margin"] == 1.80


def test_axis_reading_sets_each_reading_against_simcse_seed_by_seed():
    from scipy import stats

    from sre_repro.chapters.byop import axis_reading

    def run(seed, avg):
        return {"seed": seed, "metrics": {"sts": {"avg": avg}}}
    simcse = [run(42, 50.0), run(43, 52.0), run(44, 51.0), run(45, 60.0)]  # seed 45: no BYOPD run, left out
    anchor = [run(42, 50.5), run(43, 52.5), run(44, 52.0)]
    column = [run(44, 50.0), run(42, 50.0), run(43, 53.0)]
    table = axis_reading({"anchor": anchor, "column": column}, simcse)
    assert list(table.columns[:3]) == ["seed 42", "seed 43", "seed 44"] and table.loc["SimCSE", "minus SimCSE"] == "–"
    d = [0.5, 0.5, 1.0]
    half = stats.t.ppf(0.975, 2) * stats.tstd(d) / 3 ** 0.5
    assert table.loc["anchor", "minus SimCSE"] == round(sum(d) / 3, 2)
    assert table.loc["anchor", "95% interval"] == f"[{sum(d) / 3 - half:.2f}, {sum(d) / 3 + half:.2f}]"
    assert table.loc["column", "minus SimCSE"] == 0.0


def test_the_chapter_declares_its_claims_with_the_papers_effects():
    from sre_repro.chapters.byop import CLAIMS, MARGIN
    assert [c.id for c in CLAIMS.values() if c.headline] == ["byopd_beats_simcse", "ifm_beats_simcse"]
    assert CLAIMS["byopd_beats_simcse"].paper_effect == pytest.approx(77.45 - 76.95)
    assert CLAIMS["rankcse_byopd_helps"].paper_effect == pytest.approx(80.51 - 80.11)
    assert CLAIMS["byopd_varies_less"].type == "variance" and CLAIMS["byopd_varies_less"].paper_effect == pytest.approx(0.62 / 0.71)
    assert all(c.components == (MARGIN,) for c in CLAIMS.values())  # a margin's claims: judged only where it engaged


def test_at_common_step_reads_every_run_at_the_last_step_all_of_them_evaluated():
    from sre_repro.chapters.byop import at_common_step

    def curve(*points):
        return {"dev_curve": [{"step": s, "train_alignment": a, "train_uniformity": u} for s, a, u in points]}
    runs = {"m = 0.01": curve((5, 1.0, -1.0), (10, 2.0, -2.0), (15, 3.0, -3.0)), "m = 0.1": curve((5, 4.0, -4.0), (10, 5.0, -5.0))}
    table = at_common_step(runs, prefix="train_")
    assert table.loc["m = 0.01", "step"] == 10 and table.loc["m = 0.01", "alignment"] == 2.0
    assert table.loc["m = 0.1", "uniformity"] == -5.0
