"""The RLE v2 bit-width table, the one place it is written (ORC Java ``SerializationUtils``).

A 5-bit code in each run header names the width of its packed values: codes 0..23 are widths 1..24, codes
24..31 the wide ones 26, 28, 30, 32, 40, 48, 56, 64. The decoders (:mod:`._rle`, :mod:`._run_headers`) map codes
to widths; the encoder (:mod:`._rle_encode`) rounds bit counts up to a width of the table and maps widths back to
codes. Scalar forms serve per-run Python loops, the numpy arrays serve vectorised lookups.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ._errors import OrcError

__all__ = [
    "CLOSEST_ALIGNED",
    "CLOSEST_FIXED",
    "WIDTHS",
    "WIDTH_CODE",
    "WIDTH_FROM_CODE",
    "closest_fixed_bits",
]

#: RLE v2 5-bit width codes → bit widths (codes 24..31 are the wide ones).
WIDTH_FROM_CODE: tuple[int, ...] = (*range(1, 25), 26, 28, 30, 32, 40, 48, 56, 64)
#: the same table as an array, for lookups over many headers at once
WIDTHS: npt.NDArray[np.int64] = np.asarray(WIDTH_FROM_CODE, dtype=np.int64)
#: widths the SPEED encoding strategy packs with (Java ``getClosestAlignedFixedBits``)
_ALIGNED_WIDTHS = (1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64)


def closest_fixed_bits(n: int) -> int:
    """The smallest width RLE v2 can encode that holds ``n`` bits (Java ``getClosestFixedBits``; 0 -> 1)."""
    if n <= 0:
        return 1
    for width in WIDTH_FROM_CODE:
        if n <= width:
            return width
    raise OrcError(f"bit width {n} is more than 64")


def _closest_aligned_bits(n: int) -> int:
    for width in _ALIGNED_WIDTHS:
        if n <= width:
            return width
    return 64


#: closest_fixed_bits(n) for n in 0..128: bit lengths of 64-bit values, and patch entries (patch width + gap
#: width, which a corrupt header may push past 64; the table answers 64 and the header check rejects the run)
CLOSEST_FIXED: npt.NDArray[np.int64] = np.asarray([closest_fixed_bits(min(n, 64)) for n in range(129)], dtype=np.int64)
#: Java ``getClosestAlignedFixedBits`` for n in 0..64
CLOSEST_ALIGNED: npt.NDArray[np.int64] = np.asarray([_closest_aligned_bits(n) for n in range(65)], dtype=np.int64)
#: the 5-bit code written for a bit count n in 0..64 (after rounding n up to a width of the table)
WIDTH_CODE: npt.NDArray[np.int64] = np.asarray(
    [WIDTH_FROM_CODE.index(closest_fixed_bits(n)) for n in range(65)], dtype=np.int64
)
