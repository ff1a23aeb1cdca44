"""Which build of each entry point a manager calls: compiled, or the plain-Python twin.

Numba compiles an entry point on its first call (seconds each in a fresh environment) or
loads it from its cache (``cache=True``: ``__pycache__`` beside the sources, or the user
cache directory — ``$NUMBA_CACHE_DIR``, else ``$XDG_CACHE_HOME/numba`` — when the package
directory is read-only). So that a first use does not wait for that, the first manager
starts one background thread that compiles (or loads) every entry point in turn, with
the exact argument types a manager passes; until an entry point is ready, calls run its
twin (``twin.ops``: the same source, uncompiled) on the same state arrays.

``KVOFFLOAD_COMPILE`` chooses: ``background`` (default), ``eager`` (compile on first
use, in the caller: benchmarks and the boundscheck lane), ``twin`` (never compile).
"""

from __future__ import annotations

import importlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["MODES", "NAMES", "READY", "compiled", "entry", "mode", "start", "twin", "wait"]

MODES = ("background", "eager", "twin")
HEAD_START_S = 0.25  # seconds the background thread waits before it starts
#: Every entry point, in the order the background thread builds them (most used first).
NAMES = ("lookup", "prepare_store", "store_ok", "touch", "prepare_load", "complete_load", "store_fail", "arc_finish",
         "arc_store_misses", "rerank", "rerank_blocks")

_lock = threading.Lock()
#: Entry points compiled so far, by name (callers look here first: one dict lookup): each
#: the compiled overload of ``_signature(name)`` itself, called without type dispatch.
READY: dict[str, Callable[..., Any]] = {}
_ready = READY
_twins: dict[str, Callable[..., Any]] = {}
_thread: threading.Thread | None = None
_failure: list[BaseException] = []


def mode() -> str:
    """The compile mode (``KVOFFLOAD_COMPILE``); ``ValueError`` if unknown."""
    value = os.environ.get("KVOFFLOAD_COMPILE", "background")
    if value not in MODES:
        raise ValueError(f"KVOFFLOAD_COMPILE={value!r} is not one of {', '.join(MODES)}")
    return value


def twin(name: str) -> Callable[..., Any]:
    """The plain-Python build of entry point ``name`` (uint64 arithmetic wraps, as compiled)."""
    built = _twins.get(name)
    if built is None:
        function = getattr(importlib.import_module("kvoffload.impl.core.twin.ops"), name)

        def built(*args: Any) -> Any:
            with np.errstate(over="ignore"):
                return function(*args)

        _twins[name] = built
    return built


def _compiled(name: str) -> Any:
    return getattr(importlib.import_module("kvoffload.impl.core.ops"), name)


def _signature(name: str) -> tuple[Any, ...]:
    """The argument types a manager passes to ``name`` (C-contiguous arrays, int64 scalars)."""
    from numba import typeof as numba_typeof

    typeof: Callable[[Any], Any] = numba_typeof
    u64, i64 = np.zeros(1, np.uint64), np.zeros(1, np.int64)
    arrays = (u64, np.zeros((1, 1), np.uint64), i64, np.zeros(1, np.int32), np.zeros(1, np.int8), np.zeros(1))
    return (*map(typeof, arrays), typeof(0), typeof(0), typeof(np.zeros((1, 1), np.uint64)), typeof(i64))


def _build(name: str) -> None:
    # ``compile`` returns the overload's own entry point: calling it skips the dispatcher's
    # per-call type resolution (8 arrays: ~40% of a call's fixed cost). Safe because the
    # manager passes exactly ``_signature``'s types (its own C-contiguous arrays, ints).
    entry_point = _compiled(name).compile(_signature(name))
    with _lock:
        _ready[name] = entry_point


def _build_all() -> None:
    # A head start for the caller's first calls: numba's import and cache loads are
    # Python code that would otherwise share the GIL with them (warm start: ~0.65 -> ~0.5 s).
    time.sleep(HEAD_START_S)
    try:
        for name in NAMES:
            if name not in _ready:
                _build(name)
    except BaseException as error:  # pragma: no cover - reported by ``wait``; the twin keeps answering
        _failure.append(error)


def start() -> None:
    """Start compiling (``background``), or nothing (``eager``: on first use; ``twin``)."""
    global _thread
    if mode() != "background":
        return
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_build_all, name="kvoffload-compile", daemon=True)
            _thread.start()


def compiled(name: str) -> Callable[..., Any]:
    """The compiled build of ``name``, compiling (or loading) it now if needed."""
    if name not in _ready:
        _build(name)
    return _ready[name]


def entry(name: str) -> Callable[..., Any]:
    """The build of ``name`` to call now: compiled if ready, else per the mode."""
    ready = _ready.get(name)
    if ready is not None:
        return ready
    if mode() == "eager":
        return compiled(name)
    return twin(name)


def wait() -> None:
    """Block until every entry point is compiled (benchmarks call this before timing)."""
    if mode() == "twin":
        return
    start()
    if _thread is not None:
        _thread.join()
    for name in NAMES:
        compiled(name)
    if _failure:
        raise RuntimeError("compiling the core failed") from _failure[0]
