"""``make_manager``: the vLLM-facing manager without a vLLM config (benchmarks, tests)."""

from __future__ import annotations

from functools import partial

from ..manager import MANAGER_POLICIES, CPUOffloadingManager
from . import features
from .admission import StoreAdmission
from .manager import KVOffloadingManager

__all__ = ["make_manager"]


def make_manager(num_blocks: int, policy: str = "lru", enable_events: bool = False, store_threshold: int = 0,
                 max_tracker_size: int = 64_000, lru_order: str = "auto") -> KVOffloadingManager:
    """A ``KVOffloadingManager`` over ``num_blocks`` CPU blocks, ready for vLLM 0.32's
    ``OffloadingManager`` calls, built without an ``OffloadingConfig``.

    It is what ``KVOffloadingSpec(config).get_manager()`` returns for the same capacity,
    policy (``"lru"``, ``"arc"``, ``"s3fifo"`` or ``"sieve"``, exact; S1–S4, F, V) and events setting, and answers as
    vLLM's own ``CPUOffloadingManager(num_chunks=num_blocks, cache_policy="lru")`` does
    for LRU: keys are ``OffloadKey`` bytes, block ids lie in ``[0, num_blocks)``.
    ``store_threshold`` >= 2 turns on vLLM's store admission (N2; ``max_tracker_size``
    offers tracked). ``lru_order``: LRU's order, ``"recency"`` (L1, vLLM 0.32's) or
    ``"request-rank"`` (N9, vLLM 0.33's); ``"auto"`` takes the installed vLLM's. Bad
    arguments raise ``ValueError`` here, before anything is built::

        from kvoffload.impl.vllm import make_manager
        from vllm.v1.kv_offload.base import ReqContext

        manager = make_manager(1024, policy="arc")
        ctx = ReqContext(req_id="r1")
        manager.on_new_request(ctx)
        out = manager.prepare_store([b"k" * 36], ctx)
        manager.complete_store(out.keys_to_store, ctx)
        manager.lookup(b"k" * 36, ctx)          # LookupResult.HIT
    """
    if not isinstance(policy, str) or policy not in MANAGER_POLICIES:
        raise ValueError(f"S4: policy={policy!r} is not one of {list(MANAGER_POLICIES)}")
    # The adapter builds its first core at once: a bad num_blocks raises there (S4).
    for name, value, least in (("store_threshold", store_threshold, 0), ("max_tracker_size", max_tracker_size, 1)):
        if type(value) is not int or value < least:
            raise ValueError(f"N2: {name}={value!r} must be an integer >= {least}")
    order = features.lru_order(policy, lru_order)
    return KVOffloadingManager(
        partial(CPUOffloadingManager, num_blocks, policy=policy, enable_events=bool(enable_events), lru_order=order),
        admission=StoreAdmission(store_threshold, max_tracker_size),
    )
