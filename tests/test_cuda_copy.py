"""The copy handlers on a CUDA device (H1–H4). Skipped cleanly without one.

One command on a GPU machine, from the repository root:

    PYTHONPATH=. python -m pytest tests/test_cuda_copy.py

The byte-exact properties are those of ``test_copy_handlers.py`` (loaded from its file,
whatever pytest's import mode), plus what only CUDA can show: pinned host buffers, one
stream per direction, a store ordered after the compute that produced its data, and
stores and loads in flight at once. Every layout and block-size factor is also run
deterministically with poisoned destinations: every byte that should move is compared
bit for bit, every byte that should not move must still be the poison, and a control
shows that one flipped byte fails the comparison.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kvoffload.conformance.lockstep.handler import check_handler  # noqa: E402
from kvoffload.impl.copy import CopyPath, available_paths, build_cpu_handlers  # noqa: E402
from kvoffload.spec.types import CPULoadStoreSpec, GPULoadStoreSpec  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "_copy_handler_properties", Path(__file__).with_name("test_copy_handlers.py")
)
assert _spec is not None and _spec.loader is not None
_props = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_props)

CUDA_PATHS = [p.value for p in available_paths(torch.device("cuda"))] if torch.cuda.is_available() else []
LAYOUTS = sorted(_props.BLOCK_DIM)
POISON = 0xA5


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_cuda_handlers_match_reference(data):
    _props.run_property(data, "cuda", CUDA_PATHS)


@pytest.mark.parametrize("path", CUDA_PATHS)
def test_cuda_handlers_conform(path):
    def factory(*args):
        return build_cpu_handlers(*args, path=path)

    result = check_handler(factory, max_examples=30, seed=0, device="cuda")
    assert result.ok, result.format()


def test_H4_pinned_buffers_and_own_streams():
    kv = {"a": torch.zeros(2, 4, 16, 8, 128, dtype=torch.bfloat16, device="cuda")}
    store, load = build_cpu_handlers(kv, "kv_blocks", 16, 1, 4)
    assert all(h.is_pinned() for h in store.buffers.host_planes)
    assert load.buffers is store.buffers
    streams = {store.engine.stream, load.engine.stream, torch.cuda.current_stream()}
    assert len(streams) == 3


@pytest.mark.parametrize("path", CUDA_PATHS)
def test_H4_store_waits_for_compute(path):
    """H4: data written by queued compute is what the store copies."""
    kv = {"a": torch.zeros(2, 8, 16, 8, 128, dtype=torch.bfloat16, device="cuda")}
    store, load = build_cpu_handlers(kv, "kv_blocks", 16, 1, 4, path=path)
    torch.cuda.synchronize()
    torch.cuda._sleep(200_000_000)  # keep the compute stream busy (~0.1 s)
    kv["a"][:, 3].fill_(7)
    assert store.transfer_async(1, (GPULoadStoreSpec([3]), CPULoadStoreSpec([2])))
    store.wait({1})
    assert store.get_finished() == [(1, True)]
    assert bool((store.buffers.host_planes[0][2].view(torch.bfloat16) == 7).all())
    assert bool((store.buffers.host_planes[1][2].view(torch.bfloat16) == 7).all())
    # And back: the load lands in another block only after get_finished says so.
    assert load.transfer_async(2, (CPULoadStoreSpec([2]), GPULoadStoreSpec([5])))
    load.wait({2})
    assert load.get_finished() == [(2, True)]
    assert bool((kv["a"][:, 5] == 7).all())
    assert bool((kv["a"][:, 4] == 0).all())


@pytest.mark.parametrize("path", CUDA_PATHS)
def test_failed_copy_reported_false_after_stream_drains(monkeypatch, path):
    import kvoffload.impl.copy.handlers as handlers

    kv = {"a": torch.zeros(6, 4, device="cuda")}
    store, load = build_cpu_handlers(kv, "blocks", 16, 1, 4, path=path)

    def boom(*args, **kwargs):
        raise RuntimeError("planted copy failure")

    monkeypatch.setattr(handlers, "load_rows", boom)
    monkeypatch.setattr(handlers.uva, "copy_rows", boom)
    assert load.transfer_async(1, (CPULoadStoreSpec([0]), GPULoadStoreSpec([0])))
    load.wait({1})
    assert load.get_finished() == [(1, False)]


def _poison(t):
    t.view(torch.uint8).fill_(POISON)


def _plane_rows(t, layout, b):
    """GPU block ``b`` of tensor ``t`` as bytes, one tensor per host plane (K before V),
    sliced by hand from the layout's shape (module ``_props.make_kv``)."""
    halves = {
        "blocks": lambda: [t.select(0, b)],
        "page": lambda: [t.select(0, b)],
        "kv_blocks": lambda: [t[0].select(0, b), t[1].select(0, b)],
        "layers_blocks": lambda: [t.select(1, b)],
        "layers_kv_blocks": lambda: [t[:, 0].select(1, b), t[:, 1].select(1, b)],
    }[layout]()
    return [h.contiguous().reshape(-1).view(torch.uint8).cpu() for h in halves]


def _rows_equal(kv, layout, host, gpu, sub):
    """Whether host sub-block ``sub`` holds GPU block ``gpu``'s bytes in every plane."""
    expected = [row for t in kv.values() for row in _plane_rows(t, layout, gpu)]
    assert len(expected) == len(host)
    got = [h[sub].contiguous().reshape(-1).view(torch.uint8) for h in host]
    return all(torch.equal(e, g) for e, g in zip(expected, got))


@pytest.mark.parametrize("factor", [1, 4])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("path", CUDA_PATHS)
def test_H3_every_layout_bit_exact_against_poison(path, layout, factor):
    """H2/H3 on CUDA: a scattered store and a load that starts inside an offloaded block
    move exactly their bytes; poisoned bytes elsewhere are untouched."""
    gen = torch.Generator().manual_seed(factor)
    num_gpu = 3 * factor + 3
    kv = _props.make_kv(layout, torch.bfloat16, num_gpu, (16, 2, 8), 2, 3, gen, "cuda")
    store, load = build_cpu_handlers(kv, layout, 16, factor, 4, path=path)
    host = store.buffers.host_planes
    for h in host:
        _poison(h)
    gpu_ids = torch.randperm(num_gpu, generator=gen)[: 2 * factor].tolist()
    assert store.transfer_async(1, (GPULoadStoreSpec(gpu_ids), CPULoadStoreSpec([3, 1])))
    store.wait({1})
    assert store.get_finished() == [(1, True)]
    subs = [3 * factor + i for i in range(factor)] + [factor + i for i in range(factor)]
    for g, sub in zip(gpu_ids, subs):
        assert _rows_equal(kv, layout, host, g, sub), (g, sub)
    for h in host:
        untouched = [s for s in range(4 * factor) if s not in subs]
        assert bool((h[untouched].view(torch.uint8) == POISON).all())
    # Control: one flipped byte in a stored row must fail the comparison.
    host[0][subs[0]].view(torch.uint8).reshape(-1)[-1] ^= 0xFF
    assert not _rows_equal(kv, layout, host, gpu_ids[0], subs[0])
    host[0][subs[0]].view(torch.uint8).reshape(-1)[-1] ^= 0xFF

    # Load from offloaded blocks [3, 1] into 2f - (f - 1) GPU blocks: the first f - 1
    # sub-blocks are a prefix already on the GPU, so the load starts inside block 3 (H3).
    skip = factor - 1
    targets = [b for b in range(num_gpu) if b not in gpu_ids][: 2 * factor - skip]
    before = {n: t.clone() for n, t in kv.items()}
    for t in kv.values():
        for b in targets:
            _poison(_props.block_bytes(t, layout, b))
    assert load.transfer_async(2, (CPULoadStoreSpec([3, 1]), GPULoadStoreSpec(targets)))
    load.wait({2})
    assert load.get_finished() == [(2, True)]
    for b, sub in zip(targets, subs[skip:]):
        assert _rows_equal(kv, layout, host, b, sub), (b, sub)
    for name, t in kv.items():
        for b in range(num_gpu):
            if b not in targets:
                assert torch.equal(_props.block_bytes(t, layout, b), _props.block_bytes(before[name], layout, b))


@pytest.mark.parametrize("path", CUDA_PATHS)
def test_H4_store_and_load_in_flight_at_once(path):
    """H4: a store and a load issued back to back, both behind busy compute, run on their
    own streams and both land exactly."""
    gen = torch.Generator().manual_seed(7)
    kv = _props.make_kv("kv_blocks", torch.bfloat16, 16, (16, 8, 128), 4, 1, gen, "cuda")
    store, load = build_cpu_handlers(kv, "kv_blocks", 16, 2, 8, path=path)
    assert store.transfer_async(1, (GPULoadStoreSpec([9, 8]), CPULoadStoreSpec([5])))
    store.wait({1})
    assert store.get_finished() == [(1, True)]
    expected = {n: t.clone() for n, t in kv.items()}
    for t in expected.values():
        t[:, 14], t[:, 15] = t[:, 9].clone(), t[:, 8].clone()  # sub-blocks 10, 11
    torch.cuda.synchronize()
    torch.cuda._sleep(200_000_000)  # the compute stream stays busy while both are issued
    assert store.transfer_async(2, (GPULoadStoreSpec([0, 1, 2, 3]), CPULoadStoreSpec([0, 1])))
    assert load.transfer_async(3, (CPULoadStoreSpec([5]), GPULoadStoreSpec([14, 15])))
    assert store.engine.stream != load.engine.stream
    assert torch.cuda.current_stream() not in (store.engine.stream, load.engine.stream)
    assert store.get_finished() == [] and load.get_finished() == []  # both wait on compute
    store.wait({2})
    load.wait({3})
    assert store.get_finished() == [(2, True)] and load.get_finished() == [(3, True)]
    assert _props.same_bytes(kv, expected)
    host = store.buffers.host_planes
    for t_index, t in enumerate(kv.values()):
        for half in range(2):
            plane = host[2 * t_index + half]
            assert torch.equal(plane[0:4].cpu(), t[half, 0:4].view(torch.int16).cpu())


@pytest.mark.skipif(CopyPath.UVA.value not in CUDA_PATHS, reason="needs Triton")
def test_uva_refuses_unpinned_host_memory():
    kv = {"a": torch.zeros(2, 4, 16, 8, 128, dtype=torch.bfloat16, device="cuda")}
    with pytest.raises(ValueError, match="pinned"):
        build_cpu_handlers(kv, "kv_blocks", 16, 1, 4, path="uva", pin_memory=False)


def test_auto_path_is_uva_on_pinned_memory_only():
    kv = {"a": torch.zeros(2, 4, 16, 8, 128, dtype=torch.bfloat16, device="cuda")}
    store, load = build_cpu_handlers(kv, "kv_blocks", 16, 1, 4)
    kernel = CopyPath.UVA if CopyPath.UVA.value in CUDA_PATHS else CopyPath.GATHER
    assert store.path is kernel and load.path is kernel
    store, load = build_cpu_handlers(kv, "kv_blocks", 16, 1, 4, pin_memory=False)
    assert store.path is CopyPath.GATHER and load.path is CopyPath.GATHER
