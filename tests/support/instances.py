"""Data sets for the exact engine's tests."""

import numpy as np


def noisy_xor(n, seed):
    rng = np.random.RandomState(seed)
    X = np.round(rng.rand(n, 6), 3)
    y = ((X[:, 0] > 0.5) ^ (X[:, 1] > 0.3) | (rng.rand(n) < 0.2)).astype(int)
    return X, y
