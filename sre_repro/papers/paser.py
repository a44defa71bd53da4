"""PaSeR (Wu & Zhao, "Sentence Representation Learning with Generative Objective rather than Contrastive
Objective"), as the paper reports it (`shared/papers/paser.md`). Spearman x 100; STS12-16, STS-B test,
SICK-R test; BERT-base. The headline tables only: the PaSeR chapter (issue 17) adds the rest.
"""
COLUMNS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness", "avg"]

# Table 1: unsupervised
TABLE1 = {
    "SimCSE-BERT-base + MLM": [44.40, 66.60, 51.27, 67.48, 67.95, 52.44, 59.86, 58.57],
    "SimCSE-BERT-base": [68.40, 82.41, 74.38, 80.91, 78.56, 76.85, 72.23, 76.25],
    "PaSeR-BERT-base": [70.21, 83.88, 73.06, 83.87, 77.60, 79.19, 65.31, 76.16],
}
# Table 2: supervised (PaSeR starts from its best unsupervised checkpoint)
TABLE2 = {
    "SimCSE-BERT-base": [75.30, 84.67, 80.19, 85.40, 80.82, 84.25, 80.39, 81.57],
    "PaSeR-BERT-base": [78.40, 85.80, 80.79, 86.36, 82.95, 83.67, 80.31, 82.61],
}
