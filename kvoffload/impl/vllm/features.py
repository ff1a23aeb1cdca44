"""What the installed vLLM's offloading interfaces offer, detected on its own classes.

One adapter serves vLLM 0.32.x and 0.33.x; each difference is a feature looked up here
once, at import, so the adapter never compares version strings.
"""

from __future__ import annotations

import dataclasses

from vllm.v1.kv_offload.base import OffloadingEvent, OffloadingManager, OffloadingSpec

from ...spec.rank_lru import LRU_ORDERS, detect_lru_order

__all__ = ["RESET_FENCE", "METADATA_ONLY_EVENTS", "CONFIG_INFO", "LRU_RANKS_REQUESTS", "lru_order"]

#: 0.33: the connector calls ``on_reset_flushed()`` once the workers reported every job in
#: flight at ``reset_cache()`` (N1); 0.32 never does, and discards those jobs instead.
RESET_FENCE: bool = hasattr(OffloadingManager, "on_reset_flushed")

#: 0.33: ``OffloadingEvent(metadata_only=True)`` releases a failed store's keys without
#: announcing a public eviction (N4).
METADATA_ONLY_EVENTS: bool = "metadata_only" in {f.name for f in dataclasses.fields(OffloadingEvent)}

#: 0.33: the info gauge ``vllm:kv_offload_config_info`` (spec ``config_info_keys``,
#: manager ``config_info``, N3).
CONFIG_INFO: bool = hasattr(OffloadingSpec, "config_info_keys")


def _lru_ranks_requests() -> bool:
    try:
        from vllm.v1.kv_offload.cpu.policies.lru import LRUCachePolicy
    except ImportError:  # pragma: no cover - both 0.32 and 0.33 have it
        return False
    return detect_lru_order(LRUCachePolicy(cache_capacity=1)) == "request-rank"


#: 0.33: vLLM's own ``LRUCachePolicy`` ranks an open request's keys by position (N9); 0.32's
#: is the contract's recency order (L1). Told as the conformance suite tells it.
LRU_RANKS_REQUESTS: bool = _lru_ranks_requests()


def lru_order(policy: str, asked: object = "auto") -> str:
    """The LRU order our manager keeps (N9): ``asked`` (``"recency"``, ``"request-rank"``),
    or with ``"auto"`` the installed vLLM's own (``request-rank`` on 0.33). Only LRU ranks by
    request; ``ValueError`` (S4) for anything else asked."""
    if asked == "auto":
        return "request-rank" if policy == "lru" and LRU_RANKS_REQUESTS else "recency"
    if asked not in LRU_ORDERS or (asked == "request-rank" and policy != "lru"):
        raise ValueError(f"S4: lru_order={asked!r} is not 'auto', 'recency' or 'request-rank' (LRU only)")
    return str(asked)
