"""Metrics of the connector (N3): what vLLM's stats path reads from ``get_stats()``, the
definitions the spec declares for its Prometheus frontend, and the info gauge's labels.

The families of vLLM's own CPU manager, under vLLM's names (so its dashboards keep
working): cache usage, write usage and read usage (gauges: the share of blocks pinned by
stores in flight, by loads in flight, and both), the allocation-size histogram, and
``stores_skipped`` when admission is on (N2). Ours beside them, counted since the last
``get_stats()``: lookup hits and misses (per key, as vLLM asks), blocks stored,
blocks evicted, refused stores (``prepare_store`` answered ``None``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from vllm.distributed.kv_transfer.kv_connector.v1.offloading.metrics import OffloadingConnectorStats
from vllm.v1.kv_offload.base import (
    OffloadingCounterMetadata,
    OffloadingGaugeMetadata,
    OffloadingHistogramMetadata,
    OffloadingMetricMetadata,
)

from ...spec.clauses import implements
from ..manager import CPUOffloadingManager

__all__ = [
    "CACHE_USAGE",
    "WRITE_USAGE",
    "READ_USAGE",
    "ALLOCATION_SIZE",
    "STORES_SKIPPED",
    "OUR_COUNTERS",
    "INFO_KEYS",
    "metric_definitions",
    "ManagerStats",
]

# vLLM's CPU manager's names (CPUOffloadingMetrics in vllm/v1/kv_offload/cpu/common.py).
CACHE_USAGE = "vllm:kv_offload_cpu_cache_usage_perc"
WRITE_USAGE = "vllm:kv_offload_cpu_cache_write_usage_perc"
READ_USAGE = "vllm:kv_offload_cpu_cache_read_usage_perc"
ALLOCATION_SIZE = "vllm:kv_offload_cpu_allocation_size"
STORES_SKIPPED = "vllm:kv_offload_stores_skipped"

#: Our counters: metric name → the adapter's ``counters`` key it reports the growth of.
OUR_COUNTERS: dict[str, str] = {
    "kvoffload:lookup_hits": "lookup_hit",
    "kvoffload:lookup_misses": "lookup_miss",
    "kvoffload:stored_blocks": "store_blocks",
    "kvoffload:evicted_blocks": "evicted_blocks",
    "kvoffload:refused_stores": "prepare_store_refused",
}
_COUNTER_HELP = {
    "kvoffload:lookup_hits": "Per-key offload lookups answered HIT.",
    "kvoffload:lookup_misses": "Per-key offload lookups answered MISS.",
    "kvoffload:stored_blocks": "Offloaded blocks allocated for a store (prepare_store).",
    "kvoffload:evicted_blocks": "Offloaded blocks evicted to make room for stores.",
    "kvoffload:refused_stores": "prepare_store calls refused: nothing evictable (M5).",
}

#: Labels of ``vllm:kv_offload_config_info`` (0.33): vLLM's CPU spec's four, then ours.
INFO_KEYS = (
    "cpu_num_chunks",
    "cpu_blocks_per_chunk",
    "cpu_kv_cache_size_bytes",
    "cpu_kv_cache_size_tokens",
    "eviction_policy",
    "store_threshold",
)


@implements("N3")
def metric_definitions(extra_config: Mapping[str, Any]) -> dict[str, OffloadingMetricMetadata]:
    """N3: every metric ``ManagerStats.collect`` may report, for vLLM's Prometheus frontend."""
    definitions: dict[str, OffloadingMetricMetadata] = {
        CACHE_USAGE: OffloadingGaugeMetadata(
            documentation="Share of offloaded blocks pinned by stores or loads in flight (0.0-1.0)."
        ),
        WRITE_USAGE: OffloadingGaugeMetadata(
            documentation="Share of offloaded blocks pinned by stores in flight (0.0-1.0)."
        ),
        READ_USAGE: OffloadingGaugeMetadata(
            documentation="Share of offloaded blocks pinned by loads in flight (0.0-1.0)."
        ),
        ALLOCATION_SIZE: OffloadingHistogramMetadata(
            documentation="Offloaded blocks allocated by each prepare_store call that stores.",
            buckets=(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144),
        ),
    }
    for name, help_text in _COUNTER_HELP.items():
        definitions[name] = OffloadingCounterMetadata(documentation=help_text)
    if _threshold(extra_config) >= 2:
        definitions[STORES_SKIPPED] = OffloadingCounterMetadata(
            documentation="Stores skipped: the chunk had not been offered store_threshold times (N2)."
        )
    return definitions


def _threshold(extra_config: Mapping[str, Any]) -> int:
    value = extra_config.get("store_threshold", 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


#: Allocation sizes kept between two ``collect`` calls: vLLM calls ``get_stats`` only
#: when it logs stats, so without a bound the list would grow for the server's lifetime.
MAX_ALLOCATION_SAMPLES = 4096


@implements("N3")
class ManagerStats:
    """The counters' values at the last ``collect`` and the allocation sizes since."""

    def __init__(self) -> None:
        self._reported: Counter[str] = Counter()
        self.allocation_sizes: list[int] = []

    def allocated(self, blocks: int) -> None:
        """One ``prepare_store`` allocated ``blocks`` blocks (the first samples are kept)."""
        if len(self.allocation_sizes) < MAX_ALLOCATION_SAMPLES:
            self.allocation_sizes.append(blocks)

    def collect(
        self, core: CPUOffloadingManager, counters: Counter[str], skipped: int | None
    ) -> OffloadingConnectorStats:
        """N3: one stats payload: gauges now, counters and histogram since the last call.

        ``skipped``: stores refused by admission since the last call, ``None`` when
        admission is off (the metric is then not declared either).
        """
        stats = OffloadingConnectorStats()
        pending, reading = core.blocks_in_flight()
        capacity = core.num_blocks
        stats.set_gauge(CACHE_USAGE, (pending + reading) / capacity)
        stats.set_gauge(WRITE_USAGE, pending / capacity)
        stats.set_gauge(READ_USAGE, reading / capacity)
        for size in self.allocation_sizes:
            stats.observe_histogram(ALLOCATION_SIZE, size)
        self.allocation_sizes.clear()
        for name, key in OUR_COUNTERS.items():
            stats.increase_counter(name, counters[key] - self._reported[key])
            self._reported[key] = counters[key]
        if skipped is not None:
            stats.increase_counter(STORES_SKIPPED, skipped)
        return stats


@implements("N3")
def config_info(
    *,
    num_blocks: int,
    blocks_per_chunk: int,
    bytes_per_block: int,
    tokens: int | None,
    policy: str,
    store_threshold: int,
) -> dict[str, str | int | float | bool]:
    """N3: the labels of the info gauge, ``INFO_KEYS`` in order (``None`` reads "None",
    as vLLM's ``ConfigInfo.as_config_info`` writes it)."""
    values = (num_blocks, blocks_per_chunk, num_blocks * bytes_per_block, tokens, policy, store_threshold)
    return {key: "None" if value is None else value for key, value in zip(INFO_KEYS, values)}
