"""CPUOffloadingSpec: configuration (S1, S2, S4) and wiring (S3) of our CPU offloading."""

from __future__ import annotations

import numpy as np
import pytest

from kvoffload import CPULoadStoreSpec, GPULoadStoreSpec
from kvoffload.impl import CPUOffloadingManager
from kvoffload.impl.cpu_spec import CPUOffloadingSpec


def test_S3_get_manager_builds_our_manager_once_from_the_config() -> None:
    spec = CPUOffloadingSpec(16, [16], {"num_blocks": 8, "eviction_policy": "arc", "block_size": 64})
    manager = spec.get_manager()
    assert isinstance(manager, CPUOffloadingManager)
    assert spec.get_manager() is manager
    assert spec.block_size_factor == 4
    # The manager really has 8 blocks: 8 distinct hashes fit, a 9th needs an eviction.
    hashes = [bytes([i]) * 32 for i in range(9)]
    output = manager.prepare_store(hashes[:8])
    assert output is not None and len(output.block_hashes_to_store) == 8
    assert manager.prepare_store(hashes[8:]) is None  # all 8 pending: nothing evictable


def test_S4_cpu_bytes_to_use_sizes_the_host_buffer_per_offloaded_block() -> None:
    # 4 GPU blocks per offloaded block (64 / 16) × 1000 bytes each = 4000 bytes a block.
    spec = CPUOffloadingSpec(
        16, [16], {"cpu_bytes_to_use": 10_000, "block_size": 64}, bytes_per_gpu_block=1000
    )
    assert spec.num_blocks == 2


@pytest.mark.parametrize(
    ("config", "kwargs", "key"),
    [
        ({}, {}, "num_blocks"),
        ({"num_blocks": 4, "cpu_bytes_to_use": 1024}, {}, "cpu_bytes_to_use"),
        ({"num_blocks": 0}, {}, "num_blocks=0"),
        ({"num_blocks": 4, "eviction_policy": "fifo"}, {}, "eviction_policy='fifo'"),
        ({"cpu_bytes_to_use": 1024}, {}, "bytes_per_gpu_block"),
        ({"cpu_bytes_to_use": 100}, {"bytes_per_gpu_block": 1000}, "cpu_bytes_to_use=100"),
        ({"num_blocks": 4, "kv_layout": 3}, {}, "kv_layout=3"),
        ({"num_blocks": 4, "block_size": 24}, {}, "block_size=24"),
    ],
)
def test_S4_bad_cpu_config_names_key_and_value(config: dict[str, object], kwargs: dict[str, int], key: str) -> None:
    with pytest.raises(ValueError, match=key.replace("(", r"\(")):
        CPUOffloadingSpec(16, [16], config, **kwargs)


def test_S3_get_handlers_yields_store_then_load_over_the_kv_caches() -> None:
    torch = pytest.importorskip("torch")
    spec = CPUOffloadingSpec(16, [16], {"num_blocks": 4, "block_size": 32, "kv_layout": "kv_blocks"})
    kv_caches = {f"layer{i}": torch.randn(2, 6, 16, 2, 8) for i in range(2)}
    triples = list(spec.get_handlers(kv_caches, {}))
    assert [(src, dst) for src, dst, _ in triples] == [
        (GPULoadStoreSpec, CPULoadStoreSpec),
        (CPULoadStoreSpec, GPULoadStoreSpec),
    ]
    (_, _, store), (_, _, load) = triples
    # Round trip: GPU blocks 0,1 → offloaded block 3 → GPU blocks 4,5 (f = 2).
    expected = {name: cache[:, 0:2].clone() for name, cache in kv_caches.items()}
    assert store.transfer_async(1, (GPULoadStoreSpec([0, 1]), CPULoadStoreSpec([3])))
    store.wait({1})
    assert store.get_finished() == [(1, True)]
    assert load.transfer_async(2, (CPULoadStoreSpec([3]), GPULoadStoreSpec([4, 5])))
    load.wait({2})
    assert load.get_finished() == [(2, True)]
    for name, cache in kv_caches.items():
        assert torch.equal(cache[:, 4:6], expected[name])


def test_S4_handlers_need_a_layout() -> None:
    pytest.importorskip("torch")
    spec = CPUOffloadingSpec(16, [16], {"num_blocks": 4})
    with pytest.raises(ValueError, match="kv_layout"):
        list(spec.get_handlers({}, {}))


def test_B4_of_checked_wraps_the_callers_array_as_the_constructor_would() -> None:
    ids = np.array([3, 1, 2], dtype=np.int64)
    fast, built = CPULoadStoreSpec.of_checked(ids), CPULoadStoreSpec(ids)
    assert type(fast) is CPULoadStoreSpec and fast.medium() == "CPU"
    assert fast.block_ids is ids  # no copy: the ids the caller made
    assert repr(fast) == repr(built) == "CPULoadStoreSpec([3, 1, 2])" and len(fast) == 3
    assert type(GPULoadStoreSpec.of_checked(ids)) is GPULoadStoreSpec
