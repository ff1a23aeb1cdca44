"""Hash strategies and argument shapes that find bugs (M0, C5, I8).

Pools are small so that hashes recur across calls; pool members share 8 or more leading
bytes, are prefixes or extensions of each other (I8), and have lengths from 8 to 36
bytes. Batches drawn from a pool overlap stored and new hashes; duplicates inside one
batch are drawn only in strict mode (C5). Every ``hashes`` argument is passed as a list,
a tuple, a set (``complete_store`` only, as vLLM does: C3) or a one-shot iterator
(``OneShot``, a generator, ``itertools.islice``), since vLLM passes the latter (M0).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hypothesis import strategies as st

__all__ = ["OneShot", "hash_pools", "batches", "ARG_KINDS", "ONE_SHOT_KINDS", "BAD_ELEMENTS", "make_argument", "listed",
           "large_pool", "fractional_ghosts"]

#: Argument shapes, in shrinking order (a failure that needs a one-shot argument shrinks
#: towards ``oneshot``, whose re-iteration the suite detects directly: M0).
ARG_KINDS: tuple[str, ...] = ("list", "tuple", "oneshot", "generator", "islice")
ONE_SHOT_KINDS = frozenset({"oneshot", "generator", "islice"})


class OneShot:
    """A one-shot iterator over ``items`` that notices being iterated again (M0).

    ``reiterated`` becomes true when ``iter()`` is called on it after it was exhausted,
    i.e. when a callee tries a second pass over its argument.
    """

    def __init__(self, items: Iterable[Any]) -> None:
        self._items = iter(list(items))
        self.exhausted = False
        self.reiterated = False

    def __iter__(self) -> OneShot:
        if self.exhausted:
            self.reiterated = True
        return self

    def __next__(self) -> Any:
        try:
            return next(self._items)
        except StopIteration:
            self.exhausted = True
            raise


@st.composite
def hash_pools(draw: st.DrawFn, min_size: int = 1, max_size: int = 10) -> list[bytes]:
    """A pool of distinct hashes, 8 to 36 bytes, that look alike (I8)."""
    size = draw(st.integers(min_size, max_size))
    pool: list[bytes] = []
    while len(pool) < size:
        shape = draw(st.sampled_from(("fresh", "same_head", "prefix", "extension"))) if pool else "fresh"
        if shape == "fresh":
            candidate = draw(st.binary(min_size=8, max_size=36))
        else:
            base = draw(st.sampled_from(pool))
            if shape == "same_head":  # agrees in its first 8+ bytes, differs after
                keep = draw(st.integers(8, max(8, len(base) - 1)))
                candidate = base[:keep] + draw(st.binary(min_size=1, max_size=36 - keep))
            elif shape == "prefix" and len(base) > 8:
                candidate = base[: draw(st.integers(8, len(base) - 1))]
            else:  # extension (or a prefix of an 8-byte base, which cannot exist)
                candidate = (base + draw(st.binary(min_size=1, max_size=max(1, 36 - len(base)))))[:36]
        if candidate in pool:  # keep the pool distinct without rejection sampling
            candidate = (candidate + bytes([len(pool) + 1]) * 8)[:36]
            while candidate in pool:
                candidate = bytes([(candidate[0] + 1) % 256]) + candidate[1:]
        pool.append(candidate)
    return pool


def batches(pool: Sequence[bytes], *, unique: bool, min_size: int = 0, max_size: int = 6) -> st.SearchStrategy[list[bytes]]:
    """Batches of pool hashes; duplicates only when ``unique`` is false (strict mode, C5)."""
    if not pool:
        return st.just([])
    longest = min(max_size, len(pool)) if unique else max_size
    return st.lists(st.sampled_from(list(pool)), min_size=min_size, max_size=longest, unique=unique)


#: Elements that are not ``bytes`` (M9), with their source form for reproductions.
BAD_ELEMENTS: tuple[tuple[str, Callable[[], object]], ...] = (
    ("'abc'", lambda: "abc"),
    ("bytearray(b'abcdefgh')", lambda: bytearray(b"abcdefgh")),
    ("7", lambda: 7),
    ("None", lambda: None),
)


def fractional_ghosts(arc: Any, pool: Sequence[bytes]) -> list[bytes]:
    """The hashes of ``pool`` in an ARC model's ghost lists whose hit moves ``p`` by a
    non-whole step (A3: |B2|/|B1| or |B1|/|B2| above 1 and not whole), in pool order:
    then ``p``'s fraction matters (A4's floor) and true division parts from a whole one."""
    b1, b2 = arc.b1, arc.b2
    return [h for h in pool if (h in b1 and len(b2) > len(b1) and not (len(b2) / len(b1)).is_integer())
            or (h in b2 and arc.p > 0 and len(b1) > len(b2) and not (len(b1) / len(b2)).is_integer())]


def listed(name: Callable[[object], str], items: Iterable[object]) -> str:
    """Source form of a list of ``items``, each rendered by ``name``."""
    return "[" + ", ".join(map(name, items)) + "]"


def make_argument(
    kind: str, items: Sequence[object], names: Callable[[object], str], extra: Sequence[bytes] = ()
) -> tuple[Iterable[Any], str]:
    """Build the argument of shape ``kind`` over ``items`` and its source form.

    ``extra`` are hashes placed after the end of an ``islice`` window (never read).
    """
    source = listed(names, items)
    if kind == "list":
        return list(items), source
    if kind == "tuple":  # the list's elements, in the tuple's and the set's brackets
        return tuple(items), f"({source[1:-1]}{',' if len(items) == 1 else ''})"
    if kind == "set":
        return set(items), f"{{{source[1:-1]}}}" if items else "set()"
    if kind == "oneshot":
        return OneShot(items), f"OneShot({source})"
    if kind == "generator":
        return (h for h in list(items)), f"(h for h in {source})"
    if kind == "islice":
        whole = [*items, *extra]
        return itertools.islice(whole, len(items)), f"itertools.islice({listed(names, whole)}, {len(items)})"
    raise ValueError(f"unknown argument kind {kind!r}")


def large_pool(size: int) -> list[bytes]:
    """``size`` distinct 14-byte hashes for examples of hundreds of blocks (the vLLM machine's
    large arm, ``lockstep.large``): drawing hundreds of hashes one by one would spend
    hypothesis' whole budget on the pool."""
    return [b"kvo-large-" + index.to_bytes(4, "big") for index in range(size)]
