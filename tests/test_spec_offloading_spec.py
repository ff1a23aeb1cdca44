"""Example-based tests of the offloading spec's configuration and wiring (S1–S4)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from kvoffload.spec import (
    CPULoadStoreSpec,
    GPULoadStoreSpec,
    OffloadingHandler,
    OffloadingSpec,
    ReferenceManager,
)


class TrivialSpec(OffloadingSpec):
    """The smallest concrete spec; counts what it allocates after validation."""

    allocations = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # S4: validate first
        TrivialSpec.allocations += 1
        self._manager = ReferenceManager(4)

    def get_manager(self) -> ReferenceManager:
        return self._manager

    def get_handlers(self, kv_caches: Mapping[str, Any], attn_backends: Mapping[str, Any]) -> Iterator:
        return iter(())


class NullHandler(OffloadingHandler):
    def __init__(self, kv_caches: Mapping[str, Any], direction: str) -> None:
        self.kv_caches = kv_caches
        self.direction = direction

    def transfer_async(self, job_id, spec) -> bool:
        return True

    def get_finished(self):
        return []

    def wait(self, job_ids) -> None:
        return None


class WiredSpec(TrivialSpec):
    """A spec that keeps S3: one manager, one handler per direction over the given caches."""

    def get_handlers(self, kv_caches, attn_backends):
        yield GPULoadStoreSpec, CPULoadStoreSpec, NullHandler(kv_caches, "store")
        yield CPULoadStoreSpec, GPULoadStoreSpec, NullHandler(kv_caches, "load")


def value_error(*args: Any, **kwargs: Any) -> str:
    with pytest.raises(ValueError) as err:
        TrivialSpec(*args, **kwargs)
    return str(err.value)


# ---------------------------------------------------------------------------------- S1


def test_S1_gpu_block_sizes_that_are_multiples_of_hash_block_size_are_accepted() -> None:
    spec = TrivialSpec(16, [16, 32, 64])
    assert spec.hash_block_size == 16
    assert spec.gpu_block_sizes == (16, 32, 64)
    assert spec.block_size_factor == 1
    assert spec.offloaded_block_sizes == (16, 32, 64)
    assert TrivialSpec(16, []).gpu_block_sizes == ()


@pytest.mark.parametrize(
    ("hash_block_size", "gpu_block_sizes", "key", "value"),
    [
        (16, [32, 24], "gpu_block_sizes[1]", "24"),
        (16, [8], "gpu_block_sizes[0]", "8"),
        (16, [0], "gpu_block_sizes[0]", "0"),
        (16, [-16], "gpu_block_sizes[0]", "-16"),
        (16, [True], "gpu_block_sizes[0]", "True"),
        (16, [32.0], "gpu_block_sizes[0]", "32.0"),
        (0, [16], "hash_block_size", "0"),
        (-16, [16], "hash_block_size", "-16"),
        (True, [16], "hash_block_size", "True"),
        (16.0, [16], "hash_block_size", "16.0"),
        ("16", [16], "hash_block_size", "'16'"),
    ],
)
def test_S1_bad_block_sizes_are_configuration_errors(hash_block_size, gpu_block_sizes, key, value) -> None:
    message = value_error(hash_block_size, gpu_block_sizes)
    assert key in message and value in message


# ---------------------------------------------------------------------------------- S2


@pytest.mark.parametrize(
    ("gpu_block_sizes", "block_size", "factor"),
    [([16], 16, 1), ([16], 64, 4), ([32, 32, 32], 96, 3), ([16, 32], None, 1)],
)
def test_S2_block_size_factor(gpu_block_sizes, block_size, factor) -> None:
    extra = {} if block_size is None else {"block_size": block_size}
    spec = TrivialSpec(16, gpu_block_sizes, extra)
    assert spec.block_size_factor == factor
    assert spec.offloaded_block_sizes == tuple(s * factor for s in gpu_block_sizes)


def test_S2_other_extra_config_keys_do_not_set_the_factor() -> None:
    spec = TrivialSpec(16, [16, 32], {"num_cpu_blocks": 100, "eviction_policy": "arc"})
    assert spec.block_size_factor == 1


@pytest.mark.parametrize(
    ("gpu_block_sizes", "block_size", "value"),
    [
        ([16], 24, "24"),  # not a multiple of the GPU block size
        ([32], 16, "16"),  # smaller than (so not a multiple of) the GPU block size
        ([16, 32], 64, "64"),  # groups of different GPU block sizes
        ([], 64, "64"),  # no group
        ([16], 0, "0"),
        ([16], -32, "-32"),
        ([16], True, "True"),
        ([16], 32.0, "32.0"),
        ([16], "32", "'32'"),
    ],
)
def test_S2_bad_block_size_is_a_configuration_error(gpu_block_sizes, block_size, value) -> None:
    message = value_error(16, gpu_block_sizes, {"block_size": block_size})
    assert "block_size" in message and value in message


# ---------------------------------------------------------------------------------- S3


def test_S3_get_manager_same_object_and_one_handler_per_direction() -> None:
    spec = WiredSpec(16, [16], {"block_size": 32})
    manager = spec.get_manager()
    assert spec.get_manager() is manager and spec.get_manager() is manager
    kv_caches = {"layer.0": object(), "layer.1": object()}
    handlers = list(spec.get_handlers(kv_caches, {"layer.0": None, "layer.1": None}))
    assert [(src, dst) for src, dst, _ in handlers] == [
        (GPULoadStoreSpec, CPULoadStoreSpec),
        (CPULoadStoreSpec, GPULoadStoreSpec),
    ]
    assert all(isinstance(handler, OffloadingHandler) for _, _, handler in handlers)
    assert all(handler.kv_caches is kv_caches for _, _, handler in handlers)
    assert GPULoadStoreSpec.medium() == "GPU" and CPULoadStoreSpec.medium() == "CPU"


def test_S3_offloading_spec_is_abstract_in_its_factories() -> None:
    with pytest.raises(TypeError):
        OffloadingSpec(16, [16])  # type: ignore[abstract]


# ---------------------------------------------------------------------------------- S4


def test_S4_errors_name_key_and_value_and_nothing_is_allocated() -> None:
    before = TrivialSpec.allocations
    cases = [
        ((16, [16, 40]), {}, ("gpu_block_sizes[1]", "40")),
        ((16, [16]), {"extra_config": {"block_size": 40}}, ("block_size", "40")),
        ((16, [16, 32]), {"extra_config": {"block_size": 32}}, ("block_size", "32")),
        ((0, [16]), {}, ("hash_block_size", "0")),
    ]
    for args, kwargs, (key, value) in cases:
        message = value_error(*args, **kwargs)
        assert key in message and value in message, message
    assert TrivialSpec.allocations == before
    TrivialSpec(16, [16])
    assert TrivialSpec.allocations == before + 1


@pytest.mark.parametrize("bad", [0, -1, True, 2.0, "4"])
def test_S4_model_constructors_reject_bad_sizes_naming_key_and_value(bad) -> None:
    from kvoffload.spec import ReferenceARCPolicy, ReferenceCPUBackend, ReferenceLRUPolicy

    for make, key in [
        (lambda: ReferenceManager(bad), "num_blocks"),
        (lambda: ReferenceManager(4, block_size=bad), "block_size"),
        (lambda: ReferenceCPUBackend(bad), "num_blocks"),
        (lambda: ReferenceLRUPolicy(bad), "cache_capacity"),
        (lambda: ReferenceARCPolicy(bad), "cache_capacity"),
    ]:
        with pytest.raises(ValueError) as err:
            make()
        assert key in str(err.value) and repr(bad) in str(err.value)
