"""The compiled hash table's deletion (``table.table_delete``, I8's index), judged against
linear probing's own invariant rather than against the manager built on it.

Tags are chosen by their home slot, so that hypothesis can pile entries onto a few homes,
make clusters run past the table's end and delete anywhere in them. After every step each
live entry must be found from its home without crossing an empty slot (what ``find``
relies on), no deleted entry may remain, and nothing else may move in or out.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kvoffload.impl.core.table import _P1, table_delete

SIZE = 16
SHIFT = np.uint64(64 - 4)  # log2(SIZE) bits of home, as ``meta[SHIFT]`` for 16 slots


def _home(tag: int) -> int:
    """``table.home`` written out: the top bits of ``tag * _P1``."""
    return ((tag * int(_P1)) % (1 << 64)) >> int(SHIFT)


def _tags_by_home() -> dict[int, int]:
    """One 32-bit tag for each home slot (the smallest with that home)."""
    found: dict[int, int] = {}
    tag = 1
    while len(found) < SIZE:
        found.setdefault(_home(tag), tag)
        tag += 1
    return found


TAGS = _tags_by_home()


def _insert(table: np.ndarray, home: int, node: int) -> None:
    """Linear probing's insert: the first empty slot from ``home`` on."""
    s = home
    while table[s] != 0:
        s = (s + 1) % SIZE
    table[s] = np.uint64((TAGS[home] << 32) | (node + 1))


def _check(table: np.ndarray, live: dict[int, int]) -> None:
    """Every live node is reachable from its home before an empty slot; nothing else is stored."""
    stored = {int(v) & 0xFFFFFFFF: int(v) >> 32 for v in table if v != 0}
    assert stored == {node + 1: TAGS[home] for node, home in live.items()}
    for node, home in live.items():
        s = home
        while (int(table[s]) & 0xFFFFFFFF) != node + 1:
            assert table[s] != 0, f"node {node} (home {home}) lies past an empty slot"
            s = (s + 1) % SIZE


@settings(max_examples=300, deadline=None)
@given(
    homes=st.lists(st.sampled_from([0, 1, 2, 13, 14, 15]), min_size=1, max_size=SIZE - 1),
    order=st.randoms(use_true_random=False),
)
def test_deleting_keeps_every_other_entry_reachable_from_its_home(homes: list[int], order: object) -> None:
    """I8: after any deletion from crowded clusters (some wrapping past the last slot) every
    remaining entry is still found by probing from its home, and only the deleted one left."""
    table = np.zeros(SIZE, np.uint64)
    live = {}
    for node, home in enumerate(homes):
        _insert(table, home, node)
        live[node] = home
    victims = list(live)
    order.shuffle(victims)  # type: ignore[attr-defined]
    for node in victims:
        slot = next(s for s in range(SIZE) if (int(table[s]) & 0xFFFFFFFF) == node + 1)
        table_delete(table, SHIFT, slot)
        del live[node]
        _check(table, live)
    assert not table.any()
