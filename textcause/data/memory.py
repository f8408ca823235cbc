"""Keep freed memory in the process instead of returning it to the kernel after every batch.

Token-level SHERBERT batches are large (32 users x 60 posts x 32 tokens x 384 floats: about 94 MB
in float32, 47 MB in bfloat16), and glibc serves every allocation above its mmap threshold (at most
32 MB) with a fresh ``mmap`` that is unmapped again on free: each batch then page-faults its way
through new memory, which showed up as half of a fit's CPU time being system time. Raising the
thresholds with ``mallopt`` keeps such blocks in the heap for reuse. Other platforms: a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = [
    "keep_freed_memory",
]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_DONE = False


def keep_freed_memory(limit_bytes: int = 1 << 30) -> bool:
    """Serve allocations up to ``limit_bytes`` from the heap and keep freed heap memory (once per process).

    Returns:
        Whether glibc accepted the settings (False on other C libraries and platforms).
    """
    global _DONE
    if _DONE:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    _DONE = bool(mallopt(_M_MMAP_THRESHOLD, int(limit_bytes)) and mallopt(_M_TRIM_THRESHOLD, int(limit_bytes)))
    return _DONE
