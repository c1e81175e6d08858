# Compiled Murmur3 hash64 loops (metastore/orcio/_murmur3_native.c); see metastore/orcio/_murmur3.py.
import numpy as np

def hash64_packed(
    buffer: bytes | bytearray | memoryview | np.ndarray, offsets: np.ndarray, seed: int, out: np.ndarray, /
) -> None: ...
def hash64_longs(values: np.ndarray, out: np.ndarray, /) -> None: ...
