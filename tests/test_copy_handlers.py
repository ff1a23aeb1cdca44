"""Copy handlers against a plain per-block reference (H1–H4).

The reference below is a Python loop over blocks with tensor slicing; it shares no
index helper with ``kvoffload.impl.copy``. ``run_property`` is reused on CUDA by
``test_cuda_copy.py``.
"""

from __future__ import annotations

import random

import pytest

torch = pytest.importorskip("torch")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kvoffload.impl.copy import CopyPath, available_paths, build_cpu_handlers  # noqa: E402
from kvoffload.spec.errors import ContractViolation  # noqa: E402
from kvoffload.spec.types import CPULoadStoreSpec, GPULoadStoreSpec  # noqa: E402

BLOCK_DIM = {"blocks": 0, "kv_blocks": 1, "layers_blocks": 1, "layers_kv_blocks": 2, "page": 0}
DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.int8]


# -- the reference ------------------------------------------------------------------------


def make_kv(layout, dtype, num_gpu, inner, count, layers, gen, device="cpu"):
    shape = {
        "blocks": (num_gpu, *inner),
        "kv_blocks": (2, num_gpu, *inner),
        "layers_blocks": (layers, num_gpu, *inner),
        "layers_kv_blocks": (layers, 2, num_gpu, *inner),
        "page": (num_gpu, inner[0] * 4),
    }[layout]
    dtype = torch.int8 if layout == "page" else dtype
    out = {}
    for i in range(count):
        n = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
        bits = torch.randint(0, 256, (n,), dtype=torch.uint8, generator=gen)
        out[f"l{i}"] = bits.view(dtype).reshape(shape).to(device)
    return out


def block_bytes(t, layout, b):
    return t.view(torch.uint8).select(BLOCK_DIM[layout], b)


def ref_store(kv, layout, host, gpu_ids, cpu_ids, f):
    """host[name][sub-block] = bytes of the GPU block, one block at a time (H3)."""
    for i in range(len(gpu_ids)):
        offloaded = cpu_ids[i // f]
        sub = offloaded * f + i % f
        for name, t in kv.items():
            host[name][sub] = block_bytes(t, layout, gpu_ids[i]).clone()


def ref_load(kv, layout, host, cpu_ids, gpu_ids, f):
    """Fill the GPU blocks from the last len(gpu_ids) sub-blocks (H3)."""
    subs = []
    for c in cpu_ids:
        for j in range(f):
            subs.append(c * f + j)
    subs = subs[len(subs) - len(gpu_ids) :]
    for g, sub in zip(gpu_ids, subs):
        for name, t in kv.items():
            block_bytes(t, layout, g).copy_(host[name][sub])


def same_bytes(a, b):
    return all(torch.equal(a[n].view(torch.uint8), b[n].view(torch.uint8)) for n in a)


# -- the property ---------------------------------------------------------------------------


def run_property(data, device, paths):
    draw = data.draw
    layout = draw(st.sampled_from(sorted(BLOCK_DIM)))
    dtype = draw(st.sampled_from(DTYPES))
    f = draw(st.sampled_from([1, 2, 4]))
    path = draw(st.sampled_from(paths))
    num_gpu = draw(st.integers(f + 1, 3 * f + 4))
    num_cpu = draw(st.integers(1, 4))
    inner = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    count = draw(st.integers(1, 3))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31)))
    kv = make_kv(layout, dtype, num_gpu, inner, count, draw(st.integers(1, 3)), gen, device)
    store, load = build_cpu_handlers(kv, layout, 16, f, num_cpu, path=path)

    ref_kv = {n: t.clone() for n, t in kv.items()}
    ref_host = {n: {} for n in kv}
    pending: dict[str, list[int]] = {"store": [], "load": []}
    reported: set[int] = set()
    job_id = 0

    def collect(handler, direction):
        for jid, ok in handler.get_finished():
            assert ok is True
            assert jid not in reported, "reported twice"
            assert pending[direction] and pending[direction][0] == jid, "out of order"
            pending[direction].pop(0)
            reported.add(jid)

    # Fill every offloaded block once, then run random jobs, syncing between them
    # (the caller protocol: no job reads what an in-flight job writes).
    fill = [("store", c) for c in range(num_cpu)]
    ops = fill + draw(st.lists(st.sampled_from(["store", "load", "poll"]), max_size=8))
    stored: set[int] = set()
    for op in ops:
        if op == "poll" or isinstance(op, str) and op == "load" and not stored:
            collect(store, "store")
            collect(load, "load")
            continue
        job_id += 1
        if isinstance(op, tuple):
            cpu_ids = [op[1]]
            direction = "store"
        else:
            direction = op
            pool = sorted(stored) if direction == "load" else list(range(num_cpu))
            k = draw(st.integers(1, min(len(pool), max(1, num_gpu // f))))
            cpu_ids = draw(st.permutations(pool))[:k]
        k = len(cpu_ids)
        if direction == "store":
            gpu_ids = [draw(st.integers(0, num_gpu - 1)) for _ in range(k * f)]  # repeats allowed
            store.wait(set(pending["store"]) | set(pending["load"]))
            load.wait(set(pending["load"]))
            assert store.transfer_async(job_id, (GPULoadStoreSpec(gpu_ids), CPULoadStoreSpec(cpu_ids)))
            ref_store(ref_kv, layout, ref_host, gpu_ids, cpu_ids, f)
            stored.update(cpu_ids)
        else:
            m = draw(st.integers(k * f - f + 1, min(k * f, num_gpu)))
            if m <= k * f - f:
                continue
            gpu_ids = draw(st.permutations(range(num_gpu)))[:m]
            store.wait(set(pending["store"]))
            load.wait(set(pending["load"]))
            assert load.transfer_async(job_id, (CPULoadStoreSpec(cpu_ids), GPULoadStoreSpec(gpu_ids)))
            ref_load(ref_kv, layout, ref_host, cpu_ids, gpu_ids, f)
        pending[direction].append(job_id)
    store.wait(set(pending["store"]))
    load.wait(set(pending["load"]))
    collect(store, "store")
    collect(load, "load")
    assert not pending["store"] and not pending["load"], "accepted jobs never reported"
    assert same_bytes(kv, ref_kv), "GPU tensors differ from the reference"
    # Read back every stored sub-block through the handler: checks the host side too.
    for c in sorted(stored):
        targets = list(range(f))
        job_id += 1
        assert load.transfer_async(job_id, (CPULoadStoreSpec([c]), GPULoadStoreSpec(targets)))
        ref_load(ref_kv, layout, ref_host, [c], targets, f)
        load.wait({job_id})
        assert load.get_finished() == [(job_id, True)]
        assert same_bytes(kv, ref_kv), f"offloaded block {c} read back wrong"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_H3_handlers_match_plain_indexing_reference(data):
    run_property(data, "cpu", [p.value for p in available_paths(torch.device("cpu"))])


# -- fixtures for the unit tests ------------------------------------------------------------


@pytest.fixture
def setup():
    gen = torch.Generator().manual_seed(0)
    kv = make_kv("kv_blocks", torch.float16, 8, (2, 3), 2, 1, gen)
    store, load = build_cpu_handlers(kv, "kv_blocks", 16, 2, 4)
    assert store.transfer_async(100, (GPULoadStoreSpec(range(8)), CPULoadStoreSpec([0, 1, 2, 3])))
    assert store.get_finished() == [(100, True)]
    return kv, store, load


def snapshot(kv, handler):
    return (
        {n: t.clone() for n, t in kv.items()},
        [h.clone() for h in handler.buffers.host_planes],
    )


BAD = {
    "store wrong medium": ("store", 1, lambda: (CPULoadStoreSpec([0]), GPULoadStoreSpec([0, 1]))),
    "load wrong medium": ("load", 1, lambda: (GPULoadStoreSpec([0, 1]), CPULoadStoreSpec([0]))),
    "store length": ("store", 1, lambda: (GPULoadStoreSpec([0, 1, 2]), CPULoadStoreSpec([0]))),
    "load too many": ("load", 1, lambda: (CPULoadStoreSpec([0]), GPULoadStoreSpec([0, 1, 2]))),
    "load too few": ("load", 1, lambda: (CPULoadStoreSpec([0, 1]), GPULoadStoreSpec([0, 1]))),
    "load none": ("load", 1, lambda: (CPULoadStoreSpec([0]), GPULoadStoreSpec([]))),
    "gpu out of range": ("store", 1, lambda: (GPULoadStoreSpec([0, 8]), CPULoadStoreSpec([0]))),
    "cpu out of range": ("store", 1, lambda: (GPULoadStoreSpec([0, 1]), CPULoadStoreSpec([4]))),
    "load gpu out of range": ("load", 1, lambda: (CPULoadStoreSpec([0]), GPULoadStoreSpec([7, 8]))),
    "load cpu out of range": ("load", 1, lambda: (CPULoadStoreSpec([9]), GPULoadStoreSpec([0, 1]))),
    "negative gpu": ("store", 1, lambda: (GPULoadStoreSpec([-1, 1]), CPULoadStoreSpec([0]))),
    "negative cpu": ("load", 1, lambda: (CPULoadStoreSpec([-1]), GPULoadStoreSpec([0, 1]))),
    "duplicate destination": ("store", 1, lambda: (GPULoadStoreSpec([0, 1, 2, 3]), CPULoadStoreSpec([1, 1]))),
    "duplicate load destination": ("load", 1, lambda: (CPULoadStoreSpec([0]), GPULoadStoreSpec([3, 3]))),
    "not a pair": ("store", 1, lambda: (GPULoadStoreSpec([0, 1]),)),
    "str job id": ("store", "1", lambda: (GPULoadStoreSpec([0, 1]), CPULoadStoreSpec([0]))),
    "bool job id": ("load", True, lambda: (CPULoadStoreSpec([0]), GPULoadStoreSpec([0, 1]))),
    "float job id": ("store", 1.0, lambda: (GPULoadStoreSpec([0, 1]), CPULoadStoreSpec([0]))),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_H1_refusals_move_nothing(setup, kind):
    kv, store, load = setup
    direction, job_id, spec = BAD[kind]
    handler = store if direction == "store" else load
    before_kv, before_host = snapshot(kv, handler)
    with pytest.raises((TypeError, ValueError, ContractViolation)) as info:
        handler.transfer_async(job_id, spec())
    if isinstance(info.value, ContractViolation):
        assert info.value.clause == "H1"
    assert "H1" in str(info.value)
    after_kv, after_host = snapshot(kv, handler)
    assert same_bytes(before_kv, after_kv)
    assert all(torch.equal(a, b) for a, b in zip(before_host, after_host))
    assert store.get_finished() == [] and load.get_finished() == []


def test_H1_job_id_in_flight_is_refused(setup):
    kv, store, load = setup
    assert store.transfer_async(1, (GPULoadStoreSpec([0, 1]), CPULoadStoreSpec([0])))
    before_kv, before_host = snapshot(kv, store)
    with pytest.raises(ContractViolation, match="in flight"):
        store.transfer_async(1, (GPULoadStoreSpec([2, 3]), CPULoadStoreSpec([1])))
    assert all(torch.equal(a, b) for a, b in zip(before_host, snapshot(kv, store)[1]))
    assert store.get_finished() == [(1, True)]  # once, for the accepted job
    # Once reported, the id may be used again (vLLM's ids are just unique in flight).
    assert store.transfer_async(1, (GPULoadStoreSpec([2, 3]), CPULoadStoreSpec([1])))
    assert store.get_finished() == [(1, True)]


def test_H2_order_exactly_once_and_wait(setup):
    kv, store, load = setup
    for jid in (5, 3, 9):
        assert load.transfer_async(jid, (CPULoadStoreSpec([jid % 4]), GPULoadStoreSpec([jid % 8, 7 - jid % 8])))
    load.wait({3})
    load.wait({12345})  # unknown ids are ignored
    assert load.get_finished() == [(5, True), (3, True), (9, True)]
    assert load.get_finished() == []
    load.wait({5})  # already reported: returns at once


def test_H3_partial_load_skips_prefix(setup):
    kv, store, load = setup
    before = {n: t.clone() for n, t in kv.items()}
    # Offloaded blocks 1 and 2 hold GPU blocks 2,3 and 4,5 (f = 2); a load into 3 GPU
    # blocks skips sub-block 2 (GPU block 2's copy).
    assert load.transfer_async(1, (CPULoadStoreSpec([1, 2]), GPULoadStoreSpec([0, 6, 1])))
    assert load.get_finished() == [(1, True)]
    for dst, src in ((0, 3), (6, 4), (1, 5)):
        for n in kv:
            assert torch.equal(kv[n][:, dst].view(torch.int16), before[n][:, src].view(torch.int16))


def test_H2_failed_copy_is_reported_false(setup, monkeypatch):
    import kvoffload.impl.copy.handlers as handlers

    kv, store, load = setup

    def boom(*args, **kwargs):
        raise RuntimeError("planted copy failure")

    monkeypatch.setattr(handlers, "store_rows", boom)
    assert store.transfer_async(7, (GPULoadStoreSpec([0, 1]), CPULoadStoreSpec([0])))
    assert store.transfer_async(8, (GPULoadStoreSpec([0, 1]), CPULoadStoreSpec([1])))
    assert store.get_finished() == [(7, False), (8, False)]
    monkeypatch.undo()
    assert store.transfer_async(7, (GPULoadStoreSpec([0, 1]), CPULoadStoreSpec([0])))
    assert store.get_finished() == [(7, True)]


def test_empty_jobs_complete(setup):
    kv, store, load = setup
    assert store.transfer_async(1, (GPULoadStoreSpec([]), CPULoadStoreSpec([])))
    assert load.transfer_async(2, (CPULoadStoreSpec([]), GPULoadStoreSpec([])))
    assert store.get_finished() == [(1, True)] and load.get_finished() == [(2, True)]


@pytest.mark.parametrize("path", [p.value for p in available_paths(torch.device("cpu"))])
def test_H4_every_cpu_path_handles_cross_layer_views(path):
    gen = torch.Generator().manual_seed(1)
    kv = make_kv("layers_kv_blocks", torch.bfloat16, 6, (3, 2), 1, 3, gen)
    ref = {n: t.clone() for n, t in kv.items()}
    host = {n: {} for n in kv}
    store, load = build_cpu_handlers(kv, "layers_kv_blocks", 16, 1, 6, path=path)
    ids = random.Random(0).sample(range(6), 6)
    assert store.transfer_async(1, (GPULoadStoreSpec(ids), CPULoadStoreSpec(range(6))))
    ref_store(ref, "layers_kv_blocks", host, ids, list(range(6)), 1)
    assert load.transfer_async(2, (CPULoadStoreSpec([5, 0]), GPULoadStoreSpec([0, 1])))
    ref_load(ref, "layers_kv_blocks", host, [5, 0], [0, 1], 1)
    assert store.get_finished() == [(1, True)] and load.get_finished() == [(2, True)]
    assert same_bytes(kv, ref)


def test_layout_validation():
    with pytest.raises(ValueError, match="unknown KV layout"):
        build_cpu_handlers({"a": torch.zeros(4, 2)}, "nope", 16, 1, 2)
    with pytest.raises(ValueError, match="must\\s+be 2"):
        build_cpu_handlers({"a": torch.zeros(3, 4, 2)}, "kv_blocks", 16, 1, 2)
    with pytest.raises(ValueError, match="page"):
        build_cpu_handlers({"a": torch.zeros(4, 8)}, "page", 16, 1, 2)
    with pytest.raises(ValueError, match="number of GPU blocks"):
        build_cpu_handlers({"a": torch.zeros(4, 2), "b": torch.zeros(5, 2)}, "blocks", 16, 1, 2)
    with pytest.raises(ValueError, match="block_size_factor"):
        build_cpu_handlers({"a": torch.zeros(4, 2)}, "blocks", 16, 0, 2)
    with pytest.raises(ValueError, match="unknown copy path"):
        build_cpu_handlers({"a": torch.zeros(4, 2)}, "blocks", 16, 1, 2, path="per_block_x")
    # Per-name layouts; a (2, 2, ...) tensor means what the caller says it means.
    store, _ = build_cpu_handlers(
        {"a": torch.zeros(2, 2, 3), "b": torch.zeros(2, 2, 3)}, {"a": "kv_blocks", "b": "blocks"}, 16, 1, 2
    )
    assert [tuple(p.shape) for p in store.buffers.host_planes] == [(2, 3), (2, 3), (2, 2, 3)]
