"""How the core's functions are built: numba-compiled, or their plain-Python twin.

Every module of this package is imported twice from the same files: as
``kvoffload.impl.core.*`` (each :func:`kernel` is ``numba.njit(cache=True)``, cached per
numba build: :mod:`kvoffload.impl.jitcache`) and as
``kvoffload.impl.core.twin.*`` (see :mod:`.twin`), where :func:`kernel` returns the
function unchanged. The twin runs the very same code on the very same state arrays,
without compiling anything: the manager uses it while the compiled entry points are
being compiled (or loaded from numba's cache) in a background thread, so a first use
does not wait for numba (issue 12, item 5). Answers are identical by construction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["TWIN", "kernel"]

#: True in the plain-Python twin of the package.
TWIN: bool = ".twin." in __name__


def kernel(**options: Any) -> Callable[[Any], Any]:
    """``@kernel()``: ``njit(cache=True, **options)`` compiled without reference counting
    (numba's ``_nrt=False``), or the function itself in the twin.

    Why no reference counting: nothing in the core allocates an array or keeps one past
    a call (every array is the manager's, or a view of one, and the manager holds them
    for the call), and the counting costs. A counted function increments and decrements
    the count of every array it takes (an atomic, out-of-line ``NRT_incref`` /
    ``NRT_decref``), and so does every IR-inlined function inside it: ~30 ns per block in
    a per-block loop of list or table helpers under numba 0.68. An entry point called
    from Python paid more: unboxing each array argument made a counted wrapper of it, an
    allocation (an entry point with 1 hash: 431 ns per call counted, 188 not). Compiled
    without it, numba refuses any allocation at compile time, so none can creep in."""
    if TWIN:
        return lambda function: function
    from ..jitcache import cached_njit

    return cached_njit(_nrt=False, **options)
