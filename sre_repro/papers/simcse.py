"""SimCSE (Gao et al., EMNLP 2021) and the "without training" baselines, as the papers report them.

Source: the rows are transcribed from PaSeR's Table 1 (unsupervised) and Table 2 (supervised)
(`shared/papers/paser.md`), which quote SimCSE's Table 5 and Table B.1 digit for digit; the SimCSE README
gives 76.25 for unsup-simcse-bert-base-uncased. BYOP's Table 7 (`byop.md`) re-ran SimCSE-BERT-base: 76.95.
All numbers: Spearman x 100 on STS12-16 ("all"), STS-B test, SICK-R test; BERT-base-uncased.
"""
COLUMNS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness", "avg"]

WITHOUT_TRAINING = {
    "GloVe embeddings (avg., 300d 840B)": [55.14, 70.66, 59.73, 68.25, 63.66, 58.02, 53.76, 61.32],
    "BERT-base [CLS]": [21.54, 32.11, 21.28, 37.89, 44.24, 20.29, 42.42, 31.40],
    "BERT-base avg": [30.87, 59.89, 47.73, 60.29, 63.73, 47.29, 58.22, 52.57],
    "BERT-base first-last avg": [39.70, 59.38, 49.67, 66.03, 66.19, 53.87, 62.06, 56.70],
    "BERT-flow": [58.40, 67.10, 60.85, 75.16, 71.22, 68.66, 64.47, 66.55],
    "BERT-whitening": [57.83, 66.90, 60.90, 75.08, 71.31, 68.24, 63.73, 66.28],
}

UNSUP_SIMCSE = {
    "SimCSE-BERT-base (Gao et al.)": [68.40, 82.41, 74.38, 80.91, 78.56, 76.85, 72.23, 76.25],
    "SimCSE-BERT-base (BYOP's re-run)": [71.64, 82.68, 75.81, 82.25, 78.60, 78.93, 68.76, 76.95],
}

SUP_SIMCSE = {
    "SimCSE-BERT-base supervised (SNLI+MNLI)": [75.30, 84.67, 80.19, 85.40, 80.82, 84.25, 80.39, 81.57],
}

# Which paper row each of our evaluations corresponds to (pooler -> row of WITHOUT_TRAINING).
POOLER_ROWS = {"cls": "BERT-base [CLS]", "avg": "BERT-base avg",
               "avg_first_last_emb": "BERT-base first-last avg", "avg_first_last": "BERT-base first-last avg"}
# The paper's recipe (simcse/run_unsup_example.sh) and what the papers' seed spread looks like.
RECIPE = {"model": "bert-base-uncased", "data": "wiki1m (1M sentences)", "epochs": 1, "batch_size": 64,
          "lr": 3e-5, "max_len": 32, "temperature": 0.05, "eval_steps": 125, "seed": 42}
