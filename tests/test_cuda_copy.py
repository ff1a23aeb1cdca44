"""The copy handlers on a CUDA device (H1–H4). Skipped cleanly without one.

One command on a GPU machine, from the repository root:

    PYTHONPATH=. python -m pytest tests/test_cuda_copy.py

The byte-exact properties are those of ``test_copy_handlers.py`` (loaded from its file,
whatever pytest's import mode), plus what only CUDA can show: pinned host buffers, one
stream per direction, and a store ordered after the compute that produced its data.
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
from kvoffload.impl.copy import build_cpu_handlers  # noqa: E402
from kvoffload.spec.types import CPULoadStoreSpec, GPULoadStoreSpec  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "_copy_handler_properties", Path(__file__).with_name("test_copy_handlers.py")
)
assert _spec is not None and _spec.loader is not None
_props = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_props)

CUDA_PATHS = ["gather", "per_block", "runs"]


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


def test_failed_copy_reported_false_after_stream_drains(monkeypatch):
    import kvoffload.impl.copy.handlers as handlers

    kv = {"a": torch.zeros(6, 4, device="cuda")}
    store, load = build_cpu_handlers(kv, "blocks", 16, 1, 4)

    def boom(*args, **kwargs):
        raise RuntimeError("planted copy failure")

    monkeypatch.setattr(handlers, "load_rows", boom)
    assert load.transfer_async(1, (CPULoadStoreSpec([0]), GPULoadStoreSpec([0])))
    load.wait({1})
    assert load.get_finished() == [(1, False)]
