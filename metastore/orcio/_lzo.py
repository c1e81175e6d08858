"""LZO1X block decompression in pure Python, for reading LZO-compressed ORC files (ORC Java writes them with
aircompressor; nothing installable here decodes LZO). Read-only and slow compared with the other codecs, which
is acceptable for a codec nobody writes any more. Every read and back-reference is bounds-checked, so corrupt
input raises OrcError instead of reading or writing out of range.

Instruction set (from the LZO1X format): a first byte > 17 starts with ``byte - 17`` literals; afterwards each
instruction byte ``t`` is
- ``t < 16`` after a match (or as first instruction): a literal run of ``t + 3`` bytes (``t == 0``: extended
  length); after a literal run, ``t < 16`` is a 3-byte match at distance ``2049 + (t >> 2) + (next << 2)``;
  after 1-3 trailing literals it is a 2-byte match at distance ``1 + (t >> 2) + (next << 2)``;
- ``t >= 64``: match of ``(t >> 5) + 1`` bytes at distance ``1 + ((t >> 2) & 7) + (next << 3)``;
- ``t >= 32``: match of ``(t & 31) + 2`` bytes (extended when 0), distance ``1 + (le16 >> 2)``;
- ``t >= 16``: match of ``(t & 7) + 2`` bytes (extended when 0), distance ``16384 + ((t & 8) << 11) +
  (le16 >> 2)``; distance 16384 exactly marks the end of the block.
The low 2 bits of the last distance byte give the number (0-3) of literals that follow a match.
"""

from __future__ import annotations

from ._errors import OrcError


class _Truncated(Exception):
    pass


def lzo1x_decompress(src: bytes, max_output: int) -> bytes:
    """Decompress one LZO1X block to at most ``max_output`` bytes."""
    try:
        return _decompress(src, max_output)
    except (_Truncated, IndexError):
        raise OrcError("corrupt LZO chunk: input ends inside an instruction") from None


def _extended_length(src: bytes, ip: int, base: int) -> tuple[int, int]:
    # a zero length field continues in following bytes: each 0 adds 255, the first non-zero byte ends it
    extra = 0
    n = len(src)
    while True:
        if ip >= n:
            raise _Truncated
        b = src[ip]
        ip += 1
        if b:
            return base + extra + b, ip
        extra += 255
        if extra > (1 << 31):
            raise OrcError("corrupt LZO chunk: run length overflows")


def _decompress(src: bytes, max_output: int) -> bytes:
    out = bytearray()
    n = len(src)
    ip = 0

    def copy_literals(count: int) -> None:
        nonlocal ip
        if ip + count > n:
            raise _Truncated
        if len(out) + count > max_output:
            raise OrcError(f"LZO chunk decompresses to more than the block size {max_output}")
        out.extend(src[ip : ip + count])
        ip += count

    def copy_match(distance: int, length: int) -> None:
        start = len(out) - distance
        if distance <= 0 or start < 0:
            raise OrcError("corrupt LZO chunk: match refers before the start of the output")
        if len(out) + length > max_output:
            raise OrcError(f"LZO chunk decompresses to more than the block size {max_output}")
        if distance >= length:
            out.extend(out[start : start + length])
        else:
            # overlapping copy repeats the last `distance` bytes
            pattern = bytes(out[start:])
            reps, rest = divmod(length, distance)
            out.extend(pattern * reps + pattern[:rest])

    if n == 0:
        raise _Truncated
    # state: 0 = expecting an instruction after a match with no trailing literals,
    #        4 = after a literal run of >= 4 bytes, 1..3 = after that many trailing literals
    state = 0
    if src[0] > 17:
        t = src[0] - 17
        ip = 1
        copy_literals(t)
        state = 4 if t >= 4 else t
    while True:
        if ip >= n:
            raise _Truncated
        t = src[ip]
        ip += 1
        if t < 16:
            if state == 0:
                length = t + 3
                if t == 0:
                    length, ip = _extended_length(src, ip, 18)
                copy_literals(length)
                state = 4
                continue
            if ip >= n:
                raise _Truncated
            low = src[ip]
            ip += 1
            if state == 4:
                copy_match(2049 + (t >> 2) + (low << 2), 3)
            else:
                copy_match(1 + (t >> 2) + (low << 2), 2)
            trailing = t & 3
        elif t >= 64:
            if ip >= n:
                raise _Truncated
            low = src[ip]
            ip += 1
            copy_match(1 + ((t >> 2) & 7) + (low << 3), (t >> 5) + 1)
            trailing = t & 3
        elif t >= 32:
            length = t & 31
            if length == 0:
                length, ip = _extended_length(src, ip, 31)
            if ip + 2 > n:
                raise _Truncated
            le16 = src[ip] | (src[ip + 1] << 8)
            ip += 2
            copy_match(1 + (le16 >> 2), length + 2)
            trailing = le16 & 3
        else:
            length = t & 7
            if length == 0:
                length, ip = _extended_length(src, ip, 7)
            if ip + 2 > n:
                raise _Truncated
            le16 = src[ip] | (src[ip + 1] << 8)
            ip += 2
            distance = ((t & 8) << 11) + (le16 >> 2)
            if distance == 0:
                if ip != n:
                    raise OrcError(f"corrupt LZO chunk: {n - ip} bytes after the end marker")
                return bytes(out)
            copy_match(distance + 16384, length + 2)
            trailing = le16 & 3
        if trailing:
            copy_literals(trailing)
        state = trailing
