"""``cached_njit``: ``numba.njit`` with an on-disk cache of its own per numba build.

numba names its cache files after the function only (``ops.lookup-57.py311.nbi``), not
after the numba that wrote them, and an index written by another numba version is
discarded on load and rewritten on save. This project runs under two numba builds at
once (the dev/CI environment and vLLM's, which pins an older one), both defaulting to
the same ``__pycache__`` beside the sources: each process of one environment threw away
what the other had saved and compiled the whole core again (~60 functions, tens of
seconds of CPU; issue 12 item 5), then saved it over the other's. Here every cache
location numba would pick (``$NUMBA_CACHE_DIR``, ``__pycache__``, the user cache
directory, …) gets a subdirectory named by the numba and llvmlite versions, so each
build keeps its own entries and loads them on every later start, and by a digest of the
compiled modules' sources (``source_digest``), so no entry compiled from other sources
(a callee changed in another file) is ever loaded.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["cache_tag", "cached_njit", "source_digest"]


def cache_tag() -> str:
    """The subdirectory name of this numba build's cache entries."""
    import numba

    llvmlite = importlib.import_module("llvmlite")  # no type information: imported by name
    return f"numba-{numba.__version__}-llvmlite-{llvmlite.__version__}-src-{source_digest()}"


@lru_cache(maxsize=None)
def source_digest() -> str:
    """A digest of every compiled module's source. numba keys a cache entry on the stamp of
    the entry point's own file only, so an entry point whose callee in another module
    changed (``ops.prepare_store`` calling ``evict.py``) loaded the old machine code: after
    an edit, a checkout or an upgrade that left that one file alone, stale code would run.
    A new digest is a new folder, so nothing compiled from other sources is ever loaded."""
    here = Path(__file__).parent
    digest = hashlib.sha256()
    replay = here.parent / "replay"
    compiled = [*(here / "core").glob("*.py"), here / "tiers" / "checksum.py", *replay.glob("_*.py")]
    for path in sorted(compiled):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _tagged(locator: type[Any], tag: str) -> type[Any]:
    """``locator`` with ``tag`` appended to the directory it chooses."""

    def get_cache_path(self: Any) -> str:
        return os.path.join(locator.get_cache_path(self), tag)

    return type(f"Tagged{locator.__name__}", (locator,), {"get_cache_path": get_cache_path})


@lru_cache(maxsize=None)
def _cache_class() -> type[Any]:
    """numba's ``FunctionCache`` with every default locator tagged (built once)."""
    from numba.core import caching

    tag = cache_tag()
    locators = [_tagged(locator, tag) for locator in caching.CompileResultCacheImpl._locator_classes]
    impl = type("TaggedCacheImpl", (caching.CompileResultCacheImpl,), {"_locator_classes": locators})
    return type("TaggedFunctionCache", (caching.FunctionCache,), {"_impl_class": impl})


def cached_njit(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """``@cached_njit(...)``: ``numba.njit(cache=True, ...)`` with this build's own cache."""
    from numba import njit

    if "cache" in options:
        raise TypeError("cached_njit always caches; do not pass cache=")

    def build(function: Callable[..., Any]) -> Any:
        dispatcher = njit(**options)(function)
        # What ``Dispatcher.enable_caching`` (``cache=True``) does, with the tagged class.
        dispatcher._cache = _cache_class()(function)
        return dispatcher

    return build
