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

__all__ = ["TWIN", "kernel", "leaf"]

#: True in the plain-Python twin of the package.
TWIN: bool = ".twin." in __name__


def kernel(**options: Any) -> Callable[[Any], Any]:
    """``@kernel()``: ``njit(cache=True, **options)``, or the function itself in the twin."""
    if TWIN:
        return lambda function: function
    from ..jitcache import cached_njit

    return cached_njit(**options)


def leaf(**options: Any) -> Callable[[Any], Any]:
    """``@leaf()``: a :func:`kernel` compiled without reference counting (numba's
    ``_nrt=False``), for a function that allocates no array and returns none (it may
    call other leaves, never a function that returns an array).

    Why: a compiled function that takes arrays increments and decrements each one's
    reference count (an atomic, out-of-line ``NRT_incref`` / ``NRT_decref``) on every
    call, and so does every IR-inlined one (``inline="always"``) inside a counting caller:
    ~30 ns per block in a per-block loop calling list or table helpers, more than the
    work itself, under numba 0.68 (the dev environment; vLLM's 0.65 showed no such cost).
    A leaf has none (its caller holds the arrays for the call)."""
    return kernel(_nrt=False, **options)
