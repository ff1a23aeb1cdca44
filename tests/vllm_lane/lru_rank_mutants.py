"""One-line bugs planted in the RANK logic of vLLM 0.33's own ``LRUCachePolicy`` (N9).

Each mutant is built from the installed vLLM's ``kv_offload/cpu/policies/lru.py`` (no
hand-written copy): its source with one line replaced, written as a module under a
directory the caller gives, and loaded by vLLM's ``CPUOffloadingManager`` through its
out-of-tree ``cache_policy_module_path``. Only meaningful where that file is 0.33's
(``has_request_rank_lru``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: name -> (the line as vLLM 0.33 writes it, the planted line)
MUTANTS: dict[str, tuple[str, str]] = {
    # a request's positioned insert ranks its head before its tail
    "insert_head_first": ("self._ranks[key] = (self._get_request_rank(req_context), -position)",
                          "self._ranks[key] = (self._get_request_rank(req_context), position)"),
    # the request's rank is drawn again at every access (per batch), not once
    "rank_per_batch": ("            state is None\n", "            True\n"),
    # touch ranks the keys first to last: the LAST key ends most recent
    "touch_not_reversed": ("self._update_recency(reversed(list(keys)))", "self._update_recency(list(keys))"),
    # a request keeps its rank across reset_cache (the generation is not checked)
    "generation_unchecked": ("or state.cache_generation != self._cache_generation", "or False"),
    # a request's observation stops at the first key it does not raise: the keys after it keep
    # lower ranks (mutation testing's seed-9 sample of 0.33's lru.py, docs/mutation-report.md)
    "observation_stops_early": ("            if self._ranks[key] >= rank:\n                continue\n",
                                "            if self._ranks[key] >= rank:\n                break\n"),
}


def lru_source() -> Path:
    """The installed vLLM's ``LRUCachePolicy`` source file."""
    from vllm.v1.kv_offload.cpu.policies import lru

    return Path(lru.__file__)


def has_request_rank_lru() -> bool:
    """Whether the installed vLLM's LRU is 0.33's request-rank order (N9)."""
    return "on_request_access" in lru_source().read_text(encoding="utf-8")


def write_mutant(name: str, directory: Path) -> str:
    """Write mutant ``name`` as a module in ``directory``; returns its module name."""
    original, planted = MUTANTS[name]
    source = lru_source().read_text(encoding="utf-8")
    if source.count(original) != 1:
        raise ValueError(f"{name}: {original!r} is not one line of {lru_source()}")
    module = f"kvoffload_lru_mutant_{name}"
    (directory / f"{module}.py").write_text(source.replace(original, planted), encoding="utf-8")
    return module


def mutant_factory(name: str, directory: Path) -> Callable[..., Any]:
    """A ``f(num_blocks=, enable_events=)`` factory of vLLM 0.33's ``CPUOffloadingManager``
    with mutant ``name``'s policy (loaded as an out-of-tree policy)."""
    from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager

    module = write_mutant(name, directory)
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))
    importlib.invalidate_caches()

    def factory(num_blocks: int, enable_events: bool = False) -> Any:
        return CPUOffloadingManager(num_blocks, cache_policy="LRUCachePolicy", cache_policy_module_path=module,
                                    enable_events=enable_events)

    factory.__qualname__ = factory.__name__ = f"mutant_{name}"
    factory.__module__ = __name__
    return factory
