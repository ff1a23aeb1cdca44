"""The ``uva`` kernel's address arithmetic, run by Triton's CPU interpreter (H2, H3).

Skipped where Triton is not installed (CI's CPU torch has none); on a GPU the kernel is
checked through the handlers by ``test_cuda_copy.py``. Every layout and dtype width is
cut into segments and copied both ways between scattered rows; rows not named must keep
their poison bytes.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from kvoffload.impl.copy import kv_planes, uva  # noqa: E402

SHAPES = {
    "blocks": (7, 3, 5),
    "kv_blocks": (2, 7, 4, 3),
    "layers_blocks": (3, 7, 2, 5),
    "layers_kv_blocks": (3, 2, 7, 3),
    "page": (7, 40),
}
POISON = 0x5A


@pytest.fixture
def interpreter(monkeypatch):
    """Triton reads TRITON_INTERPRET when a kernel is decorated: rebuild it under the flag."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    uva._kernel.cache_clear()
    yield
    uva._kernel.cache_clear()


@pytest.mark.parametrize("dtype", [torch.int8, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("layout", sorted(SHAPES))
def test_H3_uva_kernel_moves_exactly_the_named_rows(interpreter, layout, dtype):
    if layout == "page" and dtype != torch.int8:
        pytest.skip("page is a 1-byte layout")
    gen = torch.Generator().manual_seed(1)
    shape = SHAPES[layout]
    raw = torch.randint(0, 256, (*shape[:-1], shape[-1] * dtype.itemsize), dtype=torch.uint8, generator=gen)
    tensor = raw.view(dtype)  # random bits: NaN payloads too
    planes = kv_planes(tensor, layout)
    host = [torch.full((9, *p.shape[1:]), 0, dtype=p.dtype) for p in planes]
    for h in host:
        h.view(torch.uint8).fill_(POISON)
    table = uva.SegmentTable.build(planes, host)
    gpu, sub = torch.tensor([3, 0, 6, 3]), torch.tensor([8, 1, 2, 5])
    uva.copy_rows(table, True, torch.stack((gpu, sub)))
    for plane, h in zip(planes, host):
        for g, s in zip(gpu.tolist(), sub.tolist()):
            assert torch.equal(h[s], plane[g])
        assert bool((h[[0, 3, 4, 6, 7]].view(torch.uint8) == POISON).all())
    target = torch.zeros_like(tensor)
    target.view(torch.uint8).fill_(POISON)
    back = kv_planes(target, layout)
    uva.copy_rows(uva.SegmentTable.build(back, host), False, torch.tensor([[1, 5], [8, 2]]))
    for plane, b in zip(planes, back):
        assert torch.equal(b[1], plane[3]) and torch.equal(b[5], plane[6])
        assert bool((b[[0, 2, 3, 4, 6]].view(torch.uint8) == POISON).all())
