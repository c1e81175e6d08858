# The compiled per-key loops of index builds (metastore/index/_kernels.c); see metastore/index/kernels.py.
from collections.abc import Sequence

import numpy as np

def bloom_add(words: np.ndarray, keys: np.ndarray, k: int, hashed: bool, double_hashing: bool, /) -> int: ...
def bloom_add_blocked(words: np.ndarray, keys: np.ndarray, rounds: int, hashed: bool, /) -> int: ...
def merge_runs(
    keys: Sequence[np.ndarray], ids: Sequence[np.ndarray | None], bases: Sequence[int], out_keys: np.ndarray,
    out_ids: np.ndarray, /,
) -> None: ...
def encode_int_leaf(
    keys: np.ndarray, ids: np.ndarray, offsets: np.ndarray | None, start: int, end: int, lo: int, hi: int,
    ids16: bool, /,
) -> bytes: ...
