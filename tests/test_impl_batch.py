"""The compiled batch readers (``core.batch``, ``core.pyobj``): exact words and lengths, and a
refusal (no write outside the scratch) for anything but non-empty plain ``bytes``."""

from __future__ import annotations

import random
import sys

import numpy as np
import pytest

from kvoffload.impl import CPUOffloadingManager
from kvoffload.impl.core import batch as _batch
from kvoffload.impl.core import rows
from kvoffload.impl.core import cpython as _pyobj


def words(block_hash: bytes) -> list[int]:
    padded = block_hash + b"\x00" * (-len(block_hash) % 8)
    return np.frombuffer(padded, "<u8").tolist()


def test_layout_is_recognised_on_cpython() -> None:
    if sys.implementation.name == "cpython" and sys.maxsize == 2**63 - 1:
        assert _pyobj.LAYOUT_OK and CPUOffloadingManager.direct


@pytest.mark.skipif(not _pyobj.LAYOUT_OK, reason="no CPython object layout")
def test_gather_matches_numpy_pack_on_random_lengths() -> None:
    rng = random.Random(3)
    for _ in range(50):
        hashes = [rng.randbytes(rng.randint(1, 70)) for _ in range(rng.randint(1, 40))]
        q1 = np.full((64, 9), 7, np.uint64)
        lens1 = np.zeros(64, np.int64)
        addrs = np.zeros(64, np.int64)
        widest = _batch.gather(id(hashes), len(hashes), q1, lens1, addrs, id(bytes))
        assert widest == max((len(h) + 7) // 8 for h in hashes)
        assert addrs[: len(hashes)].tolist() == [id(h) for h in hashes]  # the hints' keys
        q2 = np.zeros((64, 9), np.uint64)
        rows.pack(hashes, q2)
        assert lens1[: len(hashes)].tolist() == [len(h) for h in hashes]
        for i, h in enumerate(hashes):
            nw = (len(h) + 7) // 8
            assert q1[i, :nw].tolist() == words(h) == q2[i, :nw].tolist()


@pytest.mark.skipif(not _pyobj.LAYOUT_OK, reason="no CPython object layout")
def test_gather_refuses_odd_elements_and_wide_rows() -> None:
    class Sub(bytes):
        pass

    q = np.zeros((8, 5), np.uint64)
    lens = np.zeros(8, np.int64)
    addrs = np.zeros(8, np.int64)
    for bad in ([b"a", bytearray(b"b")], [b"a", Sub(b"b")], [b"a", b""], [b"a", "s"], [b"a", 3]):
        assert _batch.gather(id(bad), len(bad), q, lens, addrs, id(bytes)) == _batch.GATHER_BAD
    wide = [b"x" * 41]
    assert _batch.gather(id(wide), 1, q, lens, addrs, id(bytes)) == _batch.GATHER_WIDE
    many = [b"x"] * 9
    assert _batch.gather(id(many), 9, q, lens, addrs, id(bytes)) == _batch.GATHER_WIDE
    assert _batch.gather(id(many), 9, np.zeros((16, 5), np.uint64), np.zeros(16, np.int64), addrs,
                         id(bytes)) == _batch.GATHER_WIDE  # more hashes than addresses fit


@pytest.mark.parametrize("direct", [True, False])
def test_both_front_ends_give_the_same_answers(direct: bool) -> None:
    impl = CPUOffloadingManager(num_blocks=8, policy="arc")
    impl.direct = direct and CPUOffloadingManager.direct
    hashes = [b"a" * 32, b"b" * 36, b"c" * 7, b"d" * 100, b"e" * 32]
    out = impl.prepare_store(iter(hashes))
    assert out is not None and out.block_hashes_to_store == hashes
    impl.complete_store(tuple(hashes[:4]))
    assert impl.lookup(hashes) == 4 and impl.lookup([b"d" * 99]) == 0
    impl.check_invariants()
