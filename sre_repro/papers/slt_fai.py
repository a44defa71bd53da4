"""SLT-FAI ("Unsupervised Sentence Representation Learning with Frequency-induced Adversarial Tuning and
Incomplete Sentence Filtering"), as the paper reports it (`shared/papers/slt_fai.md`). Spearman x 100;
STS12-16 ("all"), STS-B test, SICK-R test; BERT-base; the rows marked † in the paper (ConSERT, SimCSE) were
rerun by the authors at batch size 32. The paper has no appendix and no transfer tasks; Figures 3-7 give no
numbers (Figure 4's text: best at lambda = 50 %, good at 30-50 %).
"""
COLUMNS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness", "avg"]

# Table 1: trained on the STS sentences (ConSERT block) and on 1M Wikipedia sentences (SimCSE block)
TABLE1 = {
    "ConSERT": [65.28, 77.93, 68.18, 78.51, 74.94, 72.51, 66.54, 71.98],
    "ConSERT + SLT-FAI": [65.20, 79.66, 70.23, 80.18, 75.88, 73.67, 68.24, 73.29],
    "ConSERT + SLT-FAI w/o ISF": [63.67, 78.71, 69.66, 79.77, 75.82, 74.30, 67.64, 72.80],
    "ConSERT + SLT-FAI w/o AT": [63.69, 77.55, 69.70, 79.81, 75.86, 73.92, 66.85, 72.48],
    "SimCSE": [67.93, 78.90, 71.72, 81.49, 77.10, 76.79, 68.24, 74.60],
    "SimCSE + SLT-FAI": [67.80, 82.12, 73.22, 82.42, 77.69, 78.85, 71.19, 76.18],
    "SimCSE + SLT-FAI w/o ISF": [67.56, 81.40, 73.39, 81.21, 78.26, 77.59, 70.22, 75.66],
    "SimCSE + SLT-FAI w/o AT": [66.48, 82.16, 73.48, 81.40, 77.16, 76.58, 70.25, 75.36],
}

# Table 1's other rows (transcribed only: average STS). Untrained rows are GloVe (the paper does not say which;
# 61.32 is SBERT's 300d GloVe row) and BERT-base.
TABLE1_OTHERS = {
    "GloVe (avg.)": 61.32, "BERT [CLS]": 31.40, "BERT (avg.)": 52.57, "BERT-large [CLS]": 31.96, "BERT-large (avg.)": 48.91,
    "BERT-flow (STS)": 69.57, "BERT-large-flow (STS)": 70.76,
    "USE": 71.22, "CLEAR": 61.80, "BERT-flow (wiki)": 66.55, "BERT-whitening": 66.28, "IS-BERT": 66.58,
    "CT-BERT": 72.05, "SG-OPT": 74.62, "SCD-BERT": 74.19,
}
WIKI_BASELINES = ["USE", "CLEAR", "BERT-flow (wiki)", "BERT-whitening", "IS-BERT", "CT-BERT", "SG-OPT", "SCD-BERT"]

# The text's own numbers (Sec. 4.2); where they differ from Table 1's rows the chapter says so
TEXT_GAINS = {"SLT-FAI over ConSERT": 1.31, "SLT-FAI over SimCSE": 1.59,
              "w/o ISF loses (ConSERT, SimCSE)": (0.49, 0.52), "w/o AT loses (ConSERT, SimCSE)": (0.81, 0.82)}

# Sec. 4.1: the paper's settings
SETTINGS = {"alpha": 1.0, "beta": 1.0, "lambda": 0.5, "epsilon": 0.2, "batch": 32,
            "warm-up (epochs)": {"ConSERT": 0.5, "SimCSE": 0.1}}
# Figure 4's grid of lambda and the text's reading of it
FIGURE4_RATES = [0.1, 0.3, 0.5, 0.7, 0.9]
FIGURE4_BEST = 0.5
