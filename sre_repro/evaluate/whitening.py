"""BERT-whitening (Su et al. 2021): x -> (x - mu) U S^-1/2, optionally keeping the first k components.

scikit-learn's PCA(whiten=True) computes exactly this map (up to a constant factor and the sign of each
component, neither of which changes a cosine).
"""
from __future__ import annotations

import numpy as np
from sklearn.decomposition import PCA


class Whitening:
    def __init__(self, n_components: int | None = None):
        self.pca = PCA(n_components=n_components, whiten=True, svd_solver="full")

    def fit(self, embeddings: np.ndarray) -> "Whitening":
        self.pca.fit(np.asarray(embeddings, dtype=np.float64))
        return self

    def transform(self, embeddings: np.ndarray) -> np.ndarray:
        return self.pca.transform(np.asarray(embeddings, dtype=np.float64)).astype(np.float32)
