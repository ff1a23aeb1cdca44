"""Factories of vLLM secondary tiers for ``kvoffload conform tier`` (T7–T11), with the
keywords it calls them with: ``f(primary_kv_view=, workdir=, num_blocks=, enable_events=)``.

vLLM's own tiers (0.32/0.33: the in-memory example and the file-system tier) and ours (the
disk tier), each built as vLLM's ``SecondaryTierFactory`` would, from a real
``OffloadingConfig`` and vLLM's CPU ``OffloadingSpec`` (``standalone_spec``). Run from ``tests/vllm_lane``:
``kvoffload conform tier tier_factories:vllm_fs_tier``.
"""

from __future__ import annotations

import os
from typing import Any

from kvoffload.impl.vllm.tiers import standalone_spec as offloading_spec


def vllm_example_tier(primary_kv_view: memoryview, workdir: str, num_blocks: int,
                      enable_events: bool = False) -> Any:
    """vLLM's ``ExampleSecondaryTierManager`` (unbounded, in memory; ``num_blocks`` unused)."""
    from vllm.v1.kv_offload.tiering.example.manager import ExampleSecondaryTierManager

    return ExampleSecondaryTierManager(offloading_spec(primary_kv_view.strides[0], enable_events),
                                       primary_kv_view, "example")


def vllm_fs_tier(primary_kv_view: memoryview, workdir: str, num_blocks: int, enable_events: bool = False) -> Any:
    """vLLM's ``FileSystemTierManager`` (files under ``workdir``, unbounded; two I/O threads)."""
    from vllm.v1.kv_offload.tiering.fs.manager import FileSystemTierManager

    return FileSystemTierManager(offloading_spec(primary_kv_view.strides[0], enable_events), primary_kv_view, "fs",
                                 root_dir=workdir, n_read_threads=1, n_write_threads=1,
                                 enable_kv_events=enable_events)


def kvoffload_disk_tier(primary_kv_view: memoryview, workdir: str, num_blocks: int,
                        enable_events: bool = False) -> Any:
    """Our ``KVOffloadDiskTier``: ``num_blocks`` slots of one file under ``workdir``, exact LRU."""
    from kvoffload.impl.vllm.tiers import KVOffloadDiskTier

    return KVOffloadDiskTier(offloading_spec(primary_kv_view.strides[0], enable_events), primary_kv_view,
                             "kvoffload-disk", path=os.path.join(workdir, "kv.blocks"), num_blocks=num_blocks,
                             io_threads=2)
