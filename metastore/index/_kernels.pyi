# The compiled per-key loops of index builds (metastore/index/_kernels.c); see metastore/index/kernels.py.
import numpy as np

def bloom_add(words: np.ndarray, keys: np.ndarray, k: int, hashed: bool, double_hashing: bool, /) -> int: ...
