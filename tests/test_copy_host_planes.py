"""Host planes the caller owns (``KVBuffers.build(..., host_planes=...)``): strided views
into one shared buffer, as ``KVOffloadTieringSpec`` lays them out in vLLM's shared offload
region (H3). Copies land in, and come back from, exactly the bytes of those views."""

from __future__ import annotations

import pytest
import torch

from kvoffload.impl.copy import CpuGpuHandler, Direction, KVBuffers
from kvoffload.spec.types import CPULoadStoreSpec, GPULoadStoreSpec

PAGES = (64, 32)  # two "page" tensors of different page sizes
FACTOR = 2
CHUNKS = 3
ROW = sum(PAGES) * FACTOR


def _shared() -> tuple[torch.Tensor, list[torch.Tensor]]:
    """One flat buffer of ``CHUNKS`` rows; per tensor a (CHUNKS·f, page) view, sub-block major."""
    base = torch.zeros(CHUNKS * ROW, dtype=torch.uint8)
    planes, offset = [], 0
    for page in PAGES:
        planes.append(torch.as_strided(base, (CHUNKS * FACTOR, page), (sum(PAGES), 1), offset))
        offset += page
    return base, planes


def _device() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return {f"t{i}": torch.randint(-128, 128, (6, page), dtype=torch.int8, generator=gen) for i, page in enumerate(PAGES)}


def test_H3_given_host_planes_receive_the_stores_and_feed_the_loads() -> None:
    base, planes = _shared()
    device = _device()
    buffers = KVBuffers.build(device, "page", 16, FACTOR, CHUNKS, host_planes=planes)
    store, load = CpuGpuHandler(buffers, Direction.STORE), CpuGpuHandler(buffers, Direction.LOAD)
    assert store.transfer_async(1, (GPULoadStoreSpec([4, 1]), CPULoadStoreSpec([2])))
    store.wait({1})
    row = base.view(CHUNKS, ROW)[2]
    page = sum(PAGES)
    expected = [device["t0"][4], device["t1"][4], device["t0"][1], device["t1"][1]]
    assert torch.equal(row, torch.cat([t.view(torch.uint8) for t in expected]))
    assert int(base.view(CHUNKS, ROW)[:2].sum()) == 0  # other rows untouched
    # Another process (a tier) rewrites the row: the load copies what is there now.
    row[:page] = 7
    assert load.transfer_async(2, (CPULoadStoreSpec([2]), GPULoadStoreSpec([0, 5])))
    load.wait({2})
    assert bool((device["t0"][0].view(torch.uint8) == 7).all()) and bool((device["t1"][0].view(torch.uint8) == 7).all())
    assert torch.equal(device["t0"][5], device["t0"][1])


@pytest.mark.parametrize(
    "planes",
    [
        lambda p: p[:1],  # one plane for two tensors
        lambda p: [p[0], p[1][:-1]],  # one sub-block short
        lambda p: [p[0], p[1].view(torch.int8)],  # another dtype than the device plane
    ],
)
def test_H3_host_planes_that_do_not_match_are_refused(planes) -> None:  # type: ignore[no-untyped-def]
    _, given = _shared()
    with pytest.raises(ValueError, match="H3"):
        KVBuffers.build(_device(), "page", 16, FACTOR, CHUNKS, host_planes=planes(given))
