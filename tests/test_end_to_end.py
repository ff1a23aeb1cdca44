"""End to end (E1, E2): a scheduler loop driving a manager and a worker driving the copy
handlers on CPU tensors, with shared prefixes, evictions, loads that start inside an
offloaded block (H3), stores and loads left in flight across steps, and failed stores.

Every loaded GPU block is compared byte for byte with the content its hash was stored
with (E1); at the end no block is leaked (E2). The fuller fault-injecting simulation is
``kvoffload``'s reliability work; this is the contract's end-to-end clauses in miniature.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from kvoffload import CPULoadStoreSpec, GPULoadStoreSpec, OffloadingManager, ReferenceManager  # noqa: E402
from kvoffload.impl import CPUOffloadingManager  # noqa: E402
from kvoffload.impl.copy import build_cpu_handlers  # noqa: E402

FACTOR = 2  # GPU blocks per offloaded block (H3)
GPU_BLOCKS = 24
CPU_BLOCKS = 6
LAYERS = 2
BLOCK_SHAPE = (4, 2, 8)  # tokens, heads, head dim


def content(block_hash: bytes, layer: int, sub_block: int) -> Any:
    """The K and V data of one GPU-sized sub-block of ``block_hash`` (shape (2, …))."""
    seed = int.from_bytes(hashlib.sha256(block_hash + bytes([layer, sub_block])).digest()[:8], "little")
    generator = torch.Generator().manual_seed(seed)
    return torch.randn((2, *BLOCK_SHAPE), generator=generator)


def chain(root: int, labels: list[int]) -> list[bytes]:
    """vLLM-style hashes: each block's hash covers its prefix, so requests share prefixes."""
    hashes, parent = [], bytes([root]) * 32
    for label in labels:
        parent = hashlib.sha256(parent + bytes([label])).digest()
        hashes.append(parent)
    return hashes


def simulate(manager: OffloadingManager, seed: int, steps: int = 300) -> dict[str, int]:
    rng = random.Random(seed)
    kv_caches = {f"layer{i}": torch.zeros((2, GPU_BLOCKS, *BLOCK_SHAPE)) for i in range(LAYERS)}
    store, load = build_cpu_handlers(kv_caches, "kv_blocks", 4, FACTOR, CPU_BLOCKS)
    stats = dict(loads=0, blocks_loaded=0, corrupt=0, stores=0, failed_stores=0, refusals=0)
    pending_stores: list[tuple[int, list[bytes]]] = []
    pending_loads: list[tuple[int, list[bytes], list[int], int]] = []
    seen: set[bytes] = set()
    job_ids = iter(range(1, 10**9))
    reported: dict[int, bool] = {}
    busy: set[int] = set()  # GPU blocks that loads in flight write into

    def collect(handler: Any, job: int) -> bool:
        """H2: each job reported exactly once, whichever call reports it."""
        handler.wait({job})
        for finished, success in handler.get_finished():
            assert finished not in reported, f"job {finished} reported twice"
            reported[finished] = success
        return reported[job]

    def finish_store(job: int, hashes: list[bytes]) -> None:
        assert collect(store, job)
        success = rng.random() > 0.2  # the worker reports a failed copy (M7)
        if not success:
            stats["failed_stores"] += 1
        manager.complete_store(set(hashes), success=success)  # C3: a set, as vLLM passes

    def finish_load(job: int, hashes: list[bytes], gpu_ids: list[int], skip: int) -> None:
        assert collect(load, job)
        for position, gpu_id in enumerate(gpu_ids):
            sub = skip + position
            block_hash = hashes[sub // FACTOR]
            for layer in range(LAYERS):
                got = kv_caches[f"layer{layer}"][:, gpu_id]
                if not torch.equal(got, content(block_hash, layer, sub % FACTOR)):
                    stats["corrupt"] += 1
        stats["blocks_loaded"] += len(gpu_ids)
        busy.difference_update(gpu_ids)
        manager.complete_load(hashes)  # C2: same hashes as the prepare_load

    for _ in range(steps):
        request = chain(rng.randrange(3), [rng.randrange(2) for _ in range(rng.randint(1, 4))])
        seen.update(request)
        hits = manager.lookup(iter(request))
        if hits and rng.random() < 0.7:
            if len(pending_loads) >= 2:  # bound the GPU blocks held by loads in flight
                finish_load(*pending_loads.pop(0))
            hashes = request[:hits]
            spec = manager.prepare_load(hashes)
            m = hits * FACTOR - rng.randrange(FACTOR)  # H3: may start inside a block
            gpu_ids = rng.sample(sorted(set(range(GPU_BLOCKS)) - busy), m)
            busy.update(gpu_ids)  # the request owns them until its load is checked
            for gpu_id in gpu_ids:  # scribble, so a missed copy cannot pass
                for cache in kv_caches.values():
                    cache[:, gpu_id].fill_(float("nan"))
            job = next(job_ids)
            assert load.transfer_async(job, (spec, GPULoadStoreSpec(gpu_ids)))
            pending_loads.append((job, hashes, gpu_ids, hits * FACTOR - m))
            stats["loads"] += 1
        output = manager.prepare_store(request)
        if output is None:
            stats["refusals"] += 1
        elif output.block_hashes_to_store:
            to_store = output.block_hashes_to_store
            gpu_ids = rng.sample(sorted(set(range(GPU_BLOCKS)) - busy), len(to_store) * FACTOR)
            for index, gpu_id in enumerate(gpu_ids):
                for layer in range(LAYERS):
                    kv_caches[f"layer{layer}"][:, gpu_id] = content(to_store[index // FACTOR], layer, index % FACTOR)
            job = next(job_ids)
            assert isinstance(output.store_spec, CPULoadStoreSpec)
            assert store.transfer_async(job, (GPULoadStoreSpec(gpu_ids), output.store_spec))
            # Copy now: later steps may reuse these GPU blocks (the model computes on).
            store.wait({job})
            pending_stores.append((job, to_store))
            stats["stores"] += 1
        # Complete some work in flight, in any order across directions (C6: after the copy).
        if pending_loads and rng.random() < 0.6:
            finish_load(*pending_loads.pop(0))
        if pending_stores and rng.random() < 0.6:
            finish_store(*pending_stores.pop(0))
    while pending_loads:
        finish_load(*pending_loads.pop(0))
    while pending_stores:
        finish_store(*pending_stores.pop(0))

    # E2 through the public API: every ready block is idle now, so storing CPU_BLOCKS new
    # hashes must succeed and evict exactly the ready ones; the rest were free.
    ready = sum(manager.lookup([block_hash]) for block_hash in seen)
    fresh = [bytes([0xFF, i]) * 16 for i in range(CPU_BLOCKS)]
    refill = manager.prepare_store(fresh)
    stats["ready"] = ready
    stats["leaked"] = -1 if refill is None else CPU_BLOCKS - len(refill.block_hashes_evicted) - (CPU_BLOCKS - ready)
    return stats


MANAGERS: list[tuple[str, Callable[..., OffloadingManager]]] = [
    ("reference-lru", lambda: ReferenceManager(num_blocks=CPU_BLOCKS, policy="lru")),
    ("reference-arc", lambda: ReferenceManager(num_blocks=CPU_BLOCKS, policy="arc")),
    ("production-lru", lambda: CPUOffloadingManager(num_blocks=CPU_BLOCKS, policy="lru")),
    ("production-arc", lambda: CPUOffloadingManager(num_blocks=CPU_BLOCKS, policy="arc")),
]


@pytest.mark.parametrize(("name", "factory"), MANAGERS, ids=[name for name, _ in MANAGERS])
def test_E1_loaded_blocks_hold_what_their_hash_stored(name: str, factory: Callable[..., OffloadingManager]) -> None:
    stats = simulate(factory(), seed=7)
    assert stats["loads"] > 20 and stats["failed_stores"] > 5 and stats["refusals"] > 0, stats
    assert stats["corrupt"] == 0, stats


@pytest.mark.parametrize(("name", "factory"), MANAGERS, ids=[name for name, _ in MANAGERS])
def test_E2_no_block_is_leaked(name: str, factory: Callable[..., OffloadingManager]) -> None:
    stats = simulate(factory(), seed=11)
    assert stats["leaked"] == 0, stats


def test_E1_the_check_catches_a_wrong_block() -> None:
    """Control: a manager that hands out another block's address is caught by E1."""

    class Aliasing(ReferenceManager):
        def prepare_load(self, block_hashes: Any) -> Any:
            spec = super().prepare_load(block_hashes)
            return CPULoadStoreSpec((spec.block_ids + 1) % CPU_BLOCKS)

    stats = simulate(Aliasing(num_blocks=CPU_BLOCKS), seed=7)
    assert stats["corrupt"] > 0
