"""What the installed vLLM's offloading interfaces offer, detected on its own classes.

One adapter serves vLLM 0.32.x and 0.33.x; each difference is a feature looked up here
once, at import, so the adapter never compares version strings.
"""

from __future__ import annotations

import dataclasses

from vllm.v1.kv_offload.base import OffloadingEvent, OffloadingManager, OffloadingSpec

__all__ = ["RESET_FENCE", "METADATA_ONLY_EVENTS", "CONFIG_INFO"]

#: 0.33: the connector calls ``on_reset_flushed()`` once the workers reported every job in
#: flight at ``reset_cache()`` (N1); 0.32 never does, and discards those jobs instead.
RESET_FENCE: bool = hasattr(OffloadingManager, "on_reset_flushed")

#: 0.33: ``OffloadingEvent(metadata_only=True)`` releases a failed store's keys without
#: announcing a public eviction (N4).
METADATA_ONLY_EVENTS: bool = "metadata_only" in {f.name for f in dataclasses.fields(OffloadingEvent)}

#: 0.33: the info gauge ``vllm:kv_offload_config_info`` (spec ``config_info_keys``,
#: manager ``config_info``, N3).
CONFIG_INFO: bool = hasattr(OffloadingSpec, "config_info_keys")
