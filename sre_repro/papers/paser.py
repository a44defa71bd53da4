"""PaSeR (Wu & Zhao, "Sentence Representation Learning with Generative Objective rather than Contrastive
Objective"), as the paper reports it (`shared/papers/paser.md`). Spearman x 100; STS12-16, STS-B test,
SICK-R test; BERT-base. Every table the chapter regenerates; Figure 4 is a plot without printed values.
"""
COLUMNS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness", "avg"]

# Table 1: unsupervised (all 12 rows)
TABLE1 = {
    "GloVe embeddings": [55.14, 70.66, 59.73, 68.25, 63.66, 58.02, 53.76, 61.32],
    "BERT-base [CLS]": [21.54, 32.11, 21.28, 37.89, 44.24, 20.29, 42.42, 31.40],
    "BERT-base mean": [30.87, 59.89, 47.73, 60.29, 63.73, 47.29, 58.22, 52.57],
    "BERT-base first-last avg.": [39.70, 59.38, 49.67, 66.03, 66.19, 53.87, 62.06, 56.70],
    "BERT-flow": [58.40, 67.10, 60.85, 75.16, 71.22, 68.66, 64.47, 66.55],
    "BERT-whitening": [57.83, 66.90, 60.90, 75.08, 71.31, 68.24, 63.73, 66.28],
    "CT-BERT-base": [66.86, 70.91, 72.37, 78.55, 77.78, None, None, None],
    "ConSERT-base": [64.64, 78.49, 69.07, 79.72, 75.95, 73.97, 67.31, 72.74],
    "SimCSE-BERT-base + MLM": [44.40, 66.60, 51.27, 67.48, 67.95, 52.44, 59.86, 58.57],
    "SimCSE-BERT-base": [68.40, 82.41, 74.38, 80.91, 78.56, 76.85, 72.23, 76.25],
    "CMLM-BERT-base": [58.20, 61.07, 61.67, 73.32, 74.88, 76.60, 64.80, 67.22],
    "PaSeR-BERT-base": [70.21, 83.88, 73.06, 83.87, 77.60, 79.19, 65.31, 76.16],
}
# Table 2: supervised (PaSeR starts from its best unsupervised checkpoint)
TABLE2 = {
    "Universal Sentence Encoder": [64.49, 67.80, 64.61, 76.83, 73.18, 74.92, 76.69, 71.22],
    "SBERT-base": [70.97, 76.53, 73.19, 79.09, 74.30, 77.03, 72.91, 74.89],
    "SBERT-base-flow": [69.78, 77.27, 74.35, 82.01, 77.46, 79.12, 76.21, 76.60],
    "SBERT-base-whitening": [69.65, 77.57, 74.66, 82.27, 78.39, 79.52, 76.91, 77.00],
    "CT-SBERT-base": [74.84, 83.20, 78.07, 83.84, 77.93, 81.46, 76.42, 79.39],
    "ConSERT-BERT-base": [74.07, 83.93, 77.05, 83.66, 78.76, 81.36, 76.77, 79.37],
    "SimCSE-BERT-base": [75.30, 84.67, 80.19, 85.40, 80.82, 84.25, 80.39, 81.57],
    "PaSeR-BERT-base": [78.40, 85.80, 80.79, 86.36, 82.95, 83.67, 80.31, 82.61],
}
# Table 3: QQP retrieval and AskUbuntu reranking, [QQP MAP, QQP MRR@10, AskUbuntu MAP, AskUbuntu MRR@10]
TABLE3_COLUMNS = ["QQP MAP", "QQP MRR@10", "AskUbuntu MAP", "AskUbuntu MRR@10"]
TABLE3 = {
    "unsupervised": {"BERT-base": [72.15, 32.50, 41.51, 53.80], "BERT-whitening-base": [74.67, 61.43, 46.15, 60.11],
                     "SimCSE-BERT-base": [75.42, 62.69, 50.63, 63.49], "PaSeR-BERT-base": [76.30, 65.07, 50.51, 64.56]},
    "supervised": {"SimCSE-BERT-base": [76.17, 63.94, 51.50, 66.16], "PaSeR-BERT-base": [76.22, 65.13, 52.28, 67.31]},
}
# Tables 4, 5, 8, 9: [STS12-16 average, STS-B, SICK-R]
ABLATION_COLUMNS = ["STS12-16", "STSBenchmark", "SICKRelatedness"]
TABLE4_AUGMENTATION = {"BERT-[CLS]": [31.4, 20.3, 42.4], "none": [73.8, 74.5, 62.5], "rs": [74.2, 75.0, 63.5],
                       "rd": [74.2, 75.5, 63.8], "sr": [77.7, 79.3, 65.4], "sr+rd": [77.2, 77.5, 64.5],
                       "sr+rs": [77.3, 77.6, 63.1]}
TABLE5_MASKING = {"None (BERT-[CLS])": [31.4, 20.3, 42.4], "NP": [68.5, 68.2, 62.0], "VP": [63.8, 64.1, 58.3],
                  "NP+VP": [69.5, 70.4, 64.3], "RAKE top1": [73.5, 73.9, 62.4], "RAKE top2": [76.8, 77.6, 63.6],
                  "RAKE top3": [77.8, 79.4, 64.4], "RAKE top4": [77.6, 79.3, 64.6], "RAKE top5": [77.7, 79.3, 65.4]}
TABLE8_MN = {(0.1, 1.0): [77.2, 78.5, 64.6], (1.0, 1.0): [77.6, 78.7, 64.8], (10.0, 1.0): [77.7, 79.0, 65.1],
             (10.0, 0.1): [77.6, 79.0, 65.1], (10.0, 10.0): [77.7, 79.3, 65.4]}
# (its "First-last avg." averages the embedding output and the last layer, as PaSeR's evaluation.py does: the old
# SimCSE code's first-last, the book's avg_first_last_emb)
TABLE9_POOLER = {"avg": [76.2, 78.3, 65.7], "avg_top2": [75.6, 78.0, 66.1], "avg_first_last_emb": [76.2, 78.4, 65.8],
                 "cls": [77.7, 79.3, 65.4]}
# Table 10: STS-B cosine (mean, variance) per gold level
TABLE10_LEVELS = ["0-1", "1-2", "2-3", "3-4", "4-5"]
TABLE10 = {"BERT-[CLS]": [(0.86, 0.006), (0.88, 0.006), (0.89, 0.006), (0.90, 0.004), (0.90, 0.005)],
           "SimCSE": [(0.50, 0.013), (0.67, 0.014), (0.74, 0.010), (0.81, 0.008), (0.87, 0.006)],
           "PaSeR": [(0.55, 0.015), (0.74, 0.011), (0.81, 0.008), (0.86, 0.005), (0.92, 0.003)]}
# Figure 6 (App. D): STS-B alignment as the text quotes it (uniformity is only plotted)
FIGURE6_ALIGNMENT = {"PaSeR": 0.17, "SBERT": 0.19, "SimCSE": 0.24}
# Table 6 (QQP neighbours) and Table 7 (decoder reconstructions) are qualitative: the chapter shows its own.
TABLE7 = [("Work with a tool.", "_ with a tool", "Try"), ("At least 89 dead in china earthquakes",
          "At _ _ _ dead in china earthquakes", "least 7 dead."),
          ("Do I need a transit visa for a stop in London?", "Do I need a transit visa for a stop in _?", "UK"),
          ("There are two options for you", "There are _ _ for you", "options options")]
# Figure 4: average STS against decoder layers 1-8, "best close to 6"; no values printed.
FIGURE4_PEAK_LAYERS = 6
