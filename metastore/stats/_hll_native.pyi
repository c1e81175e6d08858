# Compiled HyperLogLog register loop (metastore/stats/_hll_native.c); see metastore/stats/hll.py.
import numpy as np

def max_packed_registers(bodies: bytes | bytearray | memoryview | np.ndarray, width: int, out: np.ndarray, /) -> None: ...
