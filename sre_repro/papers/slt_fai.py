"""SLT-FAI ("Frequency-induced adversarial tuning and incomplete-sentence filtering"), as the paper reports it
(`shared/papers/slt_fai.md`). Spearman x 100; STS12-16, STS-B test, SICK-R test; BERT-base; baselines
rerun by the authors at batch size 32. The headline table only: the SLT-FAI chapter (issue 18) adds the rest.
"""
COLUMNS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness", "avg"]

# Table 1: trained on the STS sentences (ConSERT) and on 1M Wikipedia sentences (SimCSE)
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
