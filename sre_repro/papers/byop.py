"""BYOP ("Bootstrap Your Own PLM: Boosting Semantic Features of PLMs for Unsupervised Contrastive Learning",
anonymous ACL submission), as the paper reports it (`shared/papers/byop.md`). Spearman x 100 on STS12-16,
STS-B test and SICK-R test; transfer tasks in accuracy. "BYOPC"/"BYOPD": constant/dynamic margin, single
loss; "-M": multi-task loss. Table 1 repeats Table 7's averages and adds SimCSE + IFM.
"""
COLUMNS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness", "avg"]
TRANSFER_COLUMNS = ["MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC", "avg"]
PLMS = {"BERT-base": "bert-base-uncased", "BERT-large": "bert-large-uncased", "RoBERTa-base": "roberta-base",
        "RoBERTa-large": "roberta-large"}

# Table 1: SimCSE + IFM (average STS only; the other rows are Table 7's averages)
TABLE1_IFM = {"BERT-base": 77.39, "BERT-large": 77.99, "RoBERTa-base": 76.97, "RoBERTa-large": 77.78}

# Table 7 (Appendix D): per task; SimCSE and RankCSE-ListMLE rows with their BYOP variants
TABLE7 = {
    'BERT-base': {
        '[CLS] embedding': [21.54, 32.11, 21.28, 37.89, 44.24, 20.29, 42.42, 31.4],
        'Avg. embeddings': [30.87, 59.89, 47.73, 60.29, 63.73, 47.29, 58.22, 52.57],
        'SimCSE': [71.64, 82.68, 75.81, 82.25, 78.6, 78.93, 68.76, 76.95],
        'SimCSE +BYOPC': [71.84, 82.86, 76.16, 82.61, 79.07, 79.11, 69.61, 77.32],
        'SimCSE +BYOPD': [72.04, 82.86, 76.36, 82.78, 79.12, 79.24, 69.72, 77.45],
        'SimCSE +BYOPC-M': [71.67, 82.88, 76.02, 82.45, 79.09, 79.14, 69.98, 77.32],
        'SimCSE +BYOPD-M': [71.86, 82.85, 76.23, 82.64, 79.07, 79.13, 69.66, 77.35],
        'RankCSE-ListMLE': [74.53, 85.77, 78.12, 84.71, 81.48, 81.76, 74.37, 80.11],
        'RankCSE-ListMLE +BYOPC': [76.16, 85.97, 78.92, 84.9, 81.23, 82.6, 73.91, 80.53],
        'RankCSE-ListMLE +BYOPD': [76.35, 85.98, 78.82, 84.85, 81.23, 82.61, 73.71, 80.51],
    },
    'BERT-large': {
        '[CLS] embedding': [27.67, 30.76, 22.59, 29.98, 42.74, 26.75, 43.44, 32.0],
        'Avg. embeddings': [27.67, 55.79, 44.49, 51.67, 61.88, 47.01, 53.85, 48.91],
        'SimCSE': [70.8, 85.58, 77.34, 84.27, 79.31, 79.07, 72.82, 78.46],
        'SimCSE +BYOPC': [72.45, 85.15, 76.42, 84.0, 79.56, 80.19, 74.43, 78.89],
        'SimCSE +BYOPD': [71.72, 85.55, 77.86, 85.06, 79.08, 80.11, 75.2, 79.23],
        'SimCSE +BYOPC-M': [71.52, 84.88, 77.37, 84.42, 79.47, 80.39, 75.5, 79.08],
        'SimCSE +BYOPD-M': [69.8, 83.52, 76.52, 83.61, 78.38, 79.46, 76.16, 78.21],
        'RankCSE-ListMLE': [74.33, 86.18, 78.75, 85.3, 81.07, 81.27, 74.75, 80.24],
        'RankCSE-ListMLE +BYOPC': [75.59, 86.58, 79.5, 85.74, 80.73, 81.86, 74.45, 80.64],
        'RankCSE-ListMLE +BYOPD': [75.61, 86.55, 79.59, 85.71, 80.62, 81.99, 74.65, 80.67],
    },
    'RoBERTa-base': {
        '[CLS] embedding': [16.67, 45.56, 30.36, 55.08, 56.98, 38.82, 61.9, 43.62],
        'Avg. embeddings': [32.11, 56.33, 45.22, 61.34, 61.98, 55.4, 62.03, 53.49],
        'SimCSE': [68.65, 81.7, 73.44, 82.3, 81.09, 80.51, 68.76, 76.64],
        'SimCSE +BYOPC': [70.57, 82.69, 74.88, 82.76, 81.66, 82.04, 68.71, 77.62],
        'SimCSE +BYOPD': [69.92, 82.31, 74.34, 82.29, 81.28, 81.88, 69.99, 77.43],
        'SimCSE +BYOPC-M': [70.44, 82.53, 74.36, 83.09, 81.65, 81.51, 69.69, 77.61],
        'SimCSE +BYOPD-M': [70.51, 82.49, 74.56, 82.59, 81.61, 81.65, 70.44, 77.69],
        'RankCSE-ListMLE': [73.45, 84.56, 76.0, 83.96, 82.67, 82.8, 69.89, 79.05],
        'RankCSE-ListMLE +BYOPC': [73.24, 84.97, 76.79, 84.18, 82.52, 83.52, 71.33, 79.51],
        'RankCSE-ListMLE +BYOPD': [73.15, 84.98, 76.85, 84.19, 82.49, 83.51, 71.32, 79.5],
    },
    'RoBERTa-large': {
        '[CLS] embedding': [19.25, 22.97, 14.93, 33.41, 38.01, 17.3, 40.63, 26.64],
        'Avg. embeddings': [33.63, 57.22, 45.67, 63.0, 61.18, 50.59, 58.38, 52.81],
        'SimCSE': [70.85, 83.67, 75.83, 84.24, 80.27, 82.42, 72.41, 78.53],
        'SimCSE +BYOPC': [70.89, 84.06, 76.39, 84.52, 79.94, 82.33, 71.77, 78.56],
        'SimCSE +BYOPD': [70.34, 83.92, 75.5, 84.34, 80.46, 82.17, 71.9, 78.38],
        'SimCSE +BYOPC-M': [72.31, 83.91, 76.03, 84.83, 80.12, 81.99, 73.43, 78.95],
        'SimCSE +BYOPD-M': [71.79, 83.82, 76.15, 84.36, 80.68, 82.57, 71.16, 78.65],
        'RankCSE-ListMLE': [73.69, 84.38, 76.75, 85.54, 82.18, 83.38, 72.01, 79.7],
        'RankCSE-ListMLE +BYOPC': [72.84, 84.95, 77.43, 85.21, 80.85, 83.56, 71.84, 79.53],
        'RankCSE-ListMLE +BYOPD': [74.69, 84.46, 76.52, 85.36, 82.21, 83.36, 72.31, 79.84],
    },
}

# Table 2: mean and std over 3 seeds, average STS (the two best variants per PLM from Table 1)
TABLE2_SEEDS = {
    "BERT-base": {"SimCSE": (75.83, 0.71), "SimCSE +BYOPD": (76.81, 0.62), "SimCSE +BYOPD-M": (76.43, 0.81)},
    "BERT-large": {"SimCSE": (77.14, 1.45), "SimCSE +BYOPD": (78.98, 0.34), "SimCSE +BYOPC-M": (78.78, 0.30)},
    "RoBERTa-base": {"SimCSE": (76.77, 0.06), "SimCSE +BYOPC": (77.51, 0.21), "SimCSE +BYOPD-M": (77.44, 0.40)},
    "RoBERTa-large": {"SimCSE": (78.04, 0.64), "SimCSE +BYOPC-M": (78.27, 0.65), "SimCSE +BYOPD-M": (78.06, 0.52)},
}

# Table 6 (Appendix B): the settings behind Table 1: (batch size, lr, tau, margin or None, perturbation)
TABLE6_SETTINGS = {
    "BYOPC": {"BERT-base": (64, 3e-5, 0.05, 0.01, "n-"), "BERT-large": (64, 1e-5, 0.05, 0.04, "p-n-"),
              "RoBERTa-base": (128, 1e-5, 0.05, 0.03, "p-"), "RoBERTa-large": (256, 3e-5, 0.05, 0.03, "p-n-")},
    "BYOPD": {"BERT-base": (64, 3e-5, 0.05, None, "n-"), "BERT-large": (64, 1e-5, 0.05, None, "p-"),
              "RoBERTa-base": (128, 1e-5, 0.05, None, "p-"), "RoBERTa-large": (256, 3e-5, 0.05, None, "p-")},
    "BYOPC-M": {"BERT-base": (64, 3e-5, 0.05, 0.07, "n-"), "BERT-large": (64, 1e-5, 0.05, 0.03, "p-n-"),
                "RoBERTa-base": (128, 1e-5, 0.05, 0.005, "n-"), "RoBERTa-large": (256, 3e-5, 0.05, 0.02, "p+n-")},
    "BYOPD-M": {"BERT-base": (64, 3e-5, 0.05, None, "p+n-"), "BERT-large": (64, 1e-5, 0.05, None, "p-n-"),
                "RoBERTa-base": (128, 1e-5, 0.05, None, "p+"), "RoBERTa-large": (256, 3e-5, 0.05, None, "n-")},
}

# Tables 8 and 9 (Appendix E): BYOPD with other perturbations, single / multi-task loss, average STS. The
# first entry is the variant of Table 6 ("BYOPD" / "BYOPD-M"); the paper lists four others per PLM.
TABLE8_SINGLE = {
    "BERT-base": {"BYOPD": 77.45, "p-n-": 77.15, "p+n-": 77.11, "p+": 77.25, "p-": 75.46},
    "BERT-large": {"BYOPD": 79.23, "p-n-": 77.79, "p+n-": 77.36, "p+": 77.80, "n-": 77.76},
    "RoBERTa-base": {"BYOPD": 77.43, "p-n-": 77.10, "p+n-": 77.20, "p+": 77.24, "n-": 76.56},
    "RoBERTa-large": {"BYOPD": 78.38, "p-n-": 78.20, "p+n-": 77.54, "p+": 77.67, "n-": 77.78},
}
TABLE9_MULTI = {
    "BERT-base": {"BYOPD-M": 77.35, "p-n-": 77.12, "p+": 77.03, "p-": 76.80, "n-": 77.29},
    "BERT-large": {"BYOPD-M": 78.21, "p+n-": 78.09, "p+": 77.18, "p-": 77.40, "n-": 78.05},
    "RoBERTa-base": {"BYOPD-M": 77.69, "p-n-": 77.46, "p+n-": 77.09, "p-": 77.48, "n-": 76.91},
    "RoBERTa-large": {"BYOPD-M": 78.65, "p-n-": 77.16, "p+n-": 77.36, "p+": 77.85, "p-": 77.49},
}

# Table 10 (Appendix F): transfer-task accuracy
TABLE10 = {
    'BERT-base': {
        'Avg. embeddings': [81.5, 86.73, 95.22, 88.02, 85.94, 90.6, 73.68, 85.96],
        '[CLS] embedding': [81.83, 87.39, 95.48, 88.21, 86.49, 91.0, 72.29, 86.1],
        'SimCSE': [81.37, 86.49, 94.46, 88.66, 84.95, 87.6, 74.32, 85.41],
        '+BYOPC': [81.18, 86.25, 94.49, 88.86, 84.73, 86.8, 74.84, 85.31],
        '+BYOPD': [81.37, 85.94, 94.57, 88.66, 85.01, 87.0, 75.01, 85.37],
        '+BYOPC-M': [81.34, 86.49, 94.63, 89.01, 84.9, 86.8, 72.75, 85.13],
        '+BYOPD-M': [81.17, 86.39, 94.44, 88.79, 85.01, 86.8, 73.16, 85.11],
    },
    'BERT-large': {
        'Avg. embeddings': [84.3, 89.22, 95.6, 86.94, 89.29, 91.4, 71.65, 86.91],
        '[CLS] embedding': [85.89, 90.15, 95.83, 86.04, 89.95, 93.6, 69.86, 87.33],
        'SimCSE': [84.3, 87.98, 94.86, 88.78, 89.51, 93.0, 74.61, 87.58],
        '+BYOPC': [84.98, 88.08, 95.17, 89.08, 89.73, 90.4, 75.36, 87.54],
        '+BYOPD': [84.53, 88.77, 95.31, 89.26, 90.72, 92.2, 75.01, 87.97],
        '+BYOPC-M': [84.8, 88.5, 95.27, 90.02, 90.99, 91.4, 76.41, 88.2],
        '+BYOPD-M': [85.37, 88.69, 95.13, 89.54, 90.99, 92.2, 76.75, 88.38],
    },
    'RoBERTa-base': {
        'Avg. embeddings': [84.35, 88.34, 95.28, 86.13, 89.46, 93.2, 74.2, 87.28],
        '[CLS] embedding': [81.27, 84.77, 94.15, 84.18, 86.71, 81.2, 72.17, 83.49],
        'SimCSE': [81.75, 86.97, 93.43, 87.28, 86.99, 84.4, 75.01, 85.12],
        '+BYOPC': [81.44, 86.2, 93.03, 87.02, 86.11, 86.2, 75.65, 85.09],
        '+BYOPD': [82.33, 88.08, 92.99, 87.26, 85.89, 85.8, 76.12, 85.5],
        '+BYOPC-M': [81.49, 87.34, 93.25, 87.4, 87.42, 84.6, 75.01, 85.22],
        '+BYOPD-M': [82.23, 87.39, 93.41, 87.87, 87.64, 85.0, 75.42, 85.57],
    },
    'RoBERTa-large': {
        'Avg. embeddings': [85.46, 88.85, 96.04, 88.32, 91.27, 93.8, 73.74, 88.21],
        '[CLS] embedding': [83.04, 84.58, 95.48, 86.9, 88.47, 87.8, 69.8, 85.15],
        'SimCSE': [83.17, 88.4, 94.08, 88.57, 87.53, 91.2, 72.23, 86.45],
        '+BYOPC': [81.8, 87.42, 93.33, 88.42, 87.2, 93.0, 75.77, 86.71],
        '+BYOPD': [82.4, 87.18, 93.77, 88.16, 87.1, 90.6, 74.9, 86.3],
        '+BYOPC-M': [80.93, 87.47, 93.29, 88.41, 86.0, 90.4, 75.25, 85.96],
        '+BYOPD-M': [82.26, 87.26, 93.56, 88.14, 86.44, 91.4, 74.61, 86.24],
    },
}

# The recipe (Sec. 3, 4.2, Appendix B; SimCSE's settings): wiki1m, 1 epoch, STS-B dev every 250 steps
RECIPE = {"model": "bert-base-uncased", "data": "wiki1m (1M sentences)", "epochs": 1, "batch_size": 64, "lr": 3e-5,
          "temperature": 0.05, "max_len": 32, "eval_steps": 250, "margin_grid": [round(0.01 * k, 2) for k in range(1, 11)],
          "perturbation_grid": ["p-n-", "p+n-", "p+", "p-", "n-"]}
