"""SARCSE (Liu et al., 2024, "Self-Adaptive Reconstruction with Contrastive Learning for Unsupervised
Sentence Embeddings"), as the paper reports it (`shared/papers/sarcse.md`). Spearman x 100; STS12-16,
STS-B test, SICK-R test; RoBERTa unless a row says otherwise.
"""
COLUMNS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness", "avg"]

# Table 1
TABLE1_BASE = {
    "RoBERTa-base first-last avg.": [40.88, 58.74, 49.07, 65.63, 61.48, 58.55, 61.63, 56.57],
    "RoBERTa-base whitening": [46.99, 63.24, 57.23, 71.36, 68.99, 61.36, 62.91, 61.73],
    "DeCLUTR-RoBERTa-base": [52.41, 75.19, 65.52, 77.12, 78.63, 72.41, 68.62, 69.99],
    "SimCSE-RoBERTa-base": [70.16, 81.77, 73.24, 81.36, 80.65, 80.22, 68.56, 76.57],
    "SARCSE-RoBERTa-base": [73.35, 80.89, 75.37, 83.00, 81.39, 82.18, 70.43, 78.09],
    "SARCSE w/o SAL": [72.62, 80.77, 73.84, 81.95, 80.72, 80.69, 69.43, 77.15],
    "SARCSE w/o SAL & decoder": [71.64, 77.20, 71.82, 80.88, 79.50, 77.90, 67.90, 75.26],
}
TABLE1_LARGE = {
    "RoBERTa-large first-last avg.": [41.24, 55.81, 47.99, 64.01, 57.81, 53.47, 56.95, 53.90],
    "SimCSE-RoBERTa-large": [72.86, 83.99, 75.62, 84.77, 81.80, 81.98, 71.26, 78.90],
    "SARCSE-RoBERTa-large": [72.28, 84.26, 76.81, 84.81, 80.69, 82.50, 72.53, 79.13],
}

# Table 2 (Appendix A): batch size -> {model: row}; RoBERTa-base
TABLE2_BATCH = {
    32: {"SimCSE": [69.65, 81.00, 73.02, 82.03, 79.59, 79.90, 68.43, 76.23],
         "SARCSE": [73.11, 79.76, 73.23, 81.04, 79.71, 78.97, 69.71, 76.50]},
    64: {"SimCSE": [69.12, 80.42, 72.02, 81.70, 80.20, 79.82, 67.32, 75.80],
         "SARCSE": [73.35, 80.89, 75.37, 83.00, 81.39, 82.18, 70.43, 78.09]},
    128: {"SimCSE": [67.18, 80.51, 72.03, 81.20, 78.95, 78.91, 68.48, 75.32],
          "SARCSE": [72.05, 80.59, 73.78, 82.13, 80.96, 80.59, 68.28, 76.91]},
    192: {"SimCSE": [69.29, 81.41, 73.06, 81.87, 80.18, 79.80, 68.88, 76.36],
          "SARCSE": [73.05, 78.97, 73.38, 81.58, 80.07, 79.27, 68.24, 76.37]},
    256: {"SimCSE": [68.25, 81.53, 73.76, 82.34, 80.76, 80.35, 68.88, 76.55],
          "SARCSE": [72.51, 79.89, 73.49, 81.86, 80.76, 80.51, 68.32, 76.76]},
    512: {"SimCSE": [70.16, 81.77, 73.24, 81.36, 80.65, 80.22, 68.56, 76.57],
          "SARCSE": [73.12, 79.47, 73.16, 81.53, 80.48, 80.62, 68.69, 76.72]},
}

# Table 3 (Appendix B): theta -> SARCSE row; RoBERTa-base
TABLE3_THETA = {
    0.0: [73.05, 81.24, 73.89, 82.07, 81.19, 81.64, 68.90, 77.43],
    0.1: [73.35, 80.89, 75.37, 83.00, 81.39, 82.18, 70.43, 78.09],
    0.2: [71.61, 79.01, 73.24, 81.76, 80.60, 80.49, 69.08, 76.54],
    0.3: [74.71, 80.15, 73.18, 81.91, 80.00, 80.22, 69.33, 77.07],
    0.4: [73.22, 80.91, 73.65, 82.01, 80.84, 81.11, 68.70, 77.21],
    0.5: [71.51, 80.87, 73.91, 82.42, 80.94, 81.05, 69.44, 77.16],
    0.6: [72.16, 80.33, 73.92, 82.16, 80.61, 80.84, 69.58, 77.09],
}

# Table 4 (Appendix C): alignment, uniformity, STS avg; RoBERTa-base
TABLE4_GEOMETRY = {
    "first-last avg.": {"alignment": 0.021, "uniformity": -0.215, "avg": 56.57},
    "SimCSE": {"alignment": 0.213, "uniformity": -2.618, "avg": 76.57},
    "SARCSE": {"alignment": 0.148, "uniformity": -2.213, "avg": 78.09},
}

# The paper's recipe (Sec. 3.1)
RECIPE = {"model": "roberta-base", "data": "wiki1m (1M sentences)", "epochs": 1, "batch_size": 64, "lr": 1e-5,
          "temperature": 0.05, "theta": 0.1, "lam": 50, "alpha": 1, "beta": 2.5e-4, "gamma": 2.5e-4,
          "co_t": 500, "co_c": 3}
