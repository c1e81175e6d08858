# Compiled integer decoding loops (metastore/orcio/_decode_native.c); see metastore/orcio/_rle.py.
import numpy as np

def varints(
    data: bytes | bytearray | memoryview, pos: int, count: int, zigzag: bool, max_bytes: int, out: np.ndarray, /
) -> int: ...
def rle_v2(data: bytes | bytearray | memoryview, pos: int, count: int, signed: bool, out: np.ndarray, /) -> int: ...
