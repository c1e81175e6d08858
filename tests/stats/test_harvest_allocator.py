"""Worker processes of the harvest keep freed memory for reuse (metastore.stats.harvest.allocator): a scan's
temporaries, freed and made again, come back without page faults."""

from __future__ import annotations

import subprocess
import sys

import pytest

_CYCLES = """
import resource, sys
import numpy as np
from metastore.stats.harvest.allocator import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory() and keep_freed_memory()
def cycle():
    arrays = [np.ones(250_000) for _ in range(8)]  # 2 MB each, held together as a scan's temporaries are
    del arrays
cycle()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    cycle()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", _CYCLES, mode], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_temporaries_are_reused_without_page_faults() -> None:
    default = _faults("default")
    kept = _faults("keep")
    # 10 cycles of 16 MB: with malloc's defaults the pages are given back and faulted in again (about 4,000 a
    # cycle); kept, they are reused
    assert default > 10_000
    assert kept < 200
