"""PT-BERT ("A Sentence is Worth 128 Pseudo Tokens"), as the paper reports it (`shared/papers/pt_bert.md`).
Spearman x 100; STS12-16, STS-B test, SICK-R test; BERT-base. The headline table only: the PT-BERT chapter
(issue 19) adds the rest.
"""
COLUMNS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness", "avg"]

# Table 3
TABLE3 = {
    "MoCo": [68.35, 81.42, 73.34, 81.63, 78.61, 76.40, 68.50, 75.46],
    "SimCSE-BERT-base": [68.40, 82.41, 74.38, 80.91, 78.56, 76.85, 72.23, 76.25],
    "PT-BERT-base": [71.20, 83.76, 76.34, 82.63, 78.90, 79.42, 71.94, 77.74],
}
