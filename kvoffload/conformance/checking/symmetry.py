"""The model checker's hash alphabet and its symmetry reduction (issue 15).

The alphabet has up to three distinguished hashes (``--distinguished``), kept apart from all others because a target
may confuse them (I8): h0 (32 bytes), h1 (shares h0's first 8 bytes: a 64-bit fingerprint
collision) and h2 (h0's first 16 bytes: a prefix of h0). Every further hash is *free*:
32 bytes, unrelated to all others in its first 8 bytes, so a conforming target treats the
free hashes alike. Two states that differ only by a renaming of free hashes are one state
(``canonical``), and a call that uses a free hash absent from the state is generated only
for the first such hashes, in order (``canonical_calls``): renaming maps it onto the others.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

__all__ = ["DISTINGUISHED", "hash_alphabet", "Relabel", "canonical_calls"]

_BASE = bytes.fromhex("00112233445566778899aabbccddeeff0123456789abcdeffedcba9876543210")
#: h0, h1 (fingerprint collision with h0), h2 (prefix of h0).
DISTINGUISHED = 3


def hash_alphabet(size: int = 3, distinguished: int = DISTINGUISHED) -> list[bytes]:
    """``size`` hashes: the first ``distinguished`` of h0, h1, h2 as above, then free
    hashes (all of them free with ``distinguished=0``: no I8 relation in the alphabet)."""
    if size < 1:
        raise ValueError(f"the hash alphabet needs at least 1 hash, not {size}")
    if not 0 <= distinguished <= DISTINGUISHED:
        raise ValueError(f"distinguished={distinguished} is not in 0..{DISTINGUISHED}")
    fixed = [_BASE, _BASE[:8] + bytes(range(0xE0, 0xF8)), _BASE[:16]][:distinguished]
    free = [bytes([0x40 + i]) + bytes(range(0x41, 0x60)) for i in range(max(0, size - distinguished))]
    return (fixed + free)[:size]


class Relabel:
    """Renames hashes to small ints: distinguished ones to their index, free ones by
    first occurrence, so equal-up-to-renaming states get equal keys."""

    def __init__(self, distinguished: Sequence[bytes]) -> None:
        self.labels: dict[bytes, int] = {h: i for i, h in enumerate(distinguished)}
        self._next = len(distinguished)

    def __call__(self, h: bytes) -> int:
        label = self.labels.get(h)
        if label is None:
            label = self.labels[h] = self._next
            self._next += 1
        return label

    def many(self, hashes: Iterable[bytes]) -> tuple[int, ...]:
        return tuple(self(h) for h in hashes)


def canonical_calls(
    alphabet: Sequence[bytes], in_state: set[bytes], longest: int, distinguished: int = DISTINGUISHED
) -> list[tuple[bytes, ...]]:
    """Every ordered sequence of 1..``longest`` distinct hashes of ``alphabet``, up to
    renaming of the free hashes (those past the first ``distinguished``) absent from the
    state: those occur in alphabet order (the first fresh hash used is the first fresh
    one, the second the second, ...)."""
    fresh = [h for h in alphabet[distinguished:] if h not in in_state]
    universe = [h for h in alphabet if h not in fresh] + fresh[:longest]
    rank = {h: i for i, h in enumerate(fresh[:longest])}
    calls: list[tuple[bytes, ...]] = []
    for size in range(1, min(longest, len(universe)) + 1):
        for seq in itertools.permutations(universe, size):
            used = [rank[h] for h in seq if h in rank]
            if used == list(range(len(used))):
                calls.append(seq)
    return calls
