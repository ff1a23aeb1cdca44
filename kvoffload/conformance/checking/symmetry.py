"""The model checker's hash alphabet and its symmetry reduction (issue 15).

Every *free* hash is 32 bytes and they all share one 16-byte head (``HEAD``), so every
pair of free hashes shares its first 8 and its first 16 bytes: a target that keys on a
prefix of the bytes (a 64-bit fingerprint of the first word, a 128-bit one) confuses
every pair (I8), with every hash interchangeable already. The one *distinguished* hash
(``--distinguished 1``) is ``HEAD`` itself: a prefix of every free hash (I8's prefix
case), kept apart from the others by name. A conforming target treats the free hashes
alike, so two states that differ only by a renaming of free hashes are one state
(``Relabel``), and a call that uses a free hash absent from the state is generated only
for the first such hashes, in order (``canonical_calls``): renaming maps it onto the
others. The production manager's own fingerprint mixes every word, so a collision of
its fingerprints is not an alphabet relation: ``impl.factories``' ``colliding_*``
managers make every pair collide (again symmetric).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Sequence

__all__ = ["DISTINGUISHED", "HEAD", "hash_alphabet", "distinguished_text", "Relabel", "canonical_calls"]

#: The 16 bytes every free hash starts with; the distinguished hash is this head alone.
HEAD = bytes.fromhex("00112233445566778899aabbccddeeff")
#: At most one distinguished hash: ``HEAD``, a prefix of every free hash.
DISTINGUISHED = 1


def hash_alphabet(size: int = 3, distinguished: int = DISTINGUISHED) -> list[bytes]:
    """``size`` hashes: ``HEAD`` first if ``distinguished`` is 1, then free hashes
    (``HEAD`` + 16 bytes of their own; all of them free with ``distinguished=0``)."""
    if size < 1:
        raise ValueError(f"the hash alphabet needs at least 1 hash, not {size}")
    if not 0 <= distinguished <= DISTINGUISHED:
        raise ValueError(f"distinguished={distinguished} is not in 0..{DISTINGUISHED}")
    free = [HEAD + bytes([0x40 + i]) + bytes(range(0x41, 0x50)) for i in range(size - distinguished)]
    return [HEAD][:distinguished] + free


def distinguished_text(distinguished: int) -> str:
    """Free hashes share a 16-byte head; the distinguished one (``HEAD``) is that head."""
    if distinguished:
        return "h0 is the 16-byte head every other hash starts with (a prefix: I8), the rest share it and are"
    return "all share their first 16 bytes and are all"


class Relabel(dict[bytes, int]):
    """Renames hashes to small ints: distinguished ones to their index, free ones by
    first occurrence, so equal-up-to-renaming states get equal keys. A dict whose missing
    keys get the next label: ``name(h)`` of a known hash is one C-level lookup (the
    checker renames every hash of every state it reaches)."""

    def __init__(self, distinguished: Sequence[bytes]) -> None:
        super().__init__(zip(distinguished, range(len(distinguished))))

    def __missing__(self, h: bytes) -> int:
        label = self[h] = len(self)
        return label

    __call__ = dict.__getitem__


def canonical_calls(
    alphabet: Sequence[bytes], in_state: Iterable[bytes], longest: int, distinguished: int = DISTINGUISHED
) -> list[tuple[bytes, ...]]:
    """Every ordered sequence of 1..``longest`` distinct hashes of ``alphabet``, up to
    renaming of the free hashes (those past the first ``distinguished``) absent from the
    state: those occur in alphabet order (the first fresh hash used is the first fresh
    one, the second the second, ...). Memoised: shared by every state with the same hashes."""
    return list(_canonical_calls(tuple(alphabet), frozenset(in_state), longest, distinguished))


@functools.cache
def _canonical_calls(alphabet: tuple[bytes, ...], in_state: frozenset[bytes], longest: int,
                     distinguished: int) -> tuple[tuple[bytes, ...], ...]:
    fresh = [h for h in alphabet[distinguished:] if h not in in_state]
    universe = [h for h in alphabet if h not in fresh] + fresh[:longest]
    rank = {h: i for i, h in enumerate(fresh[:longest])}
    # kept: the fresh hashes a sequence uses are the first ones, in order (permutations of too many yield none)
    return tuple(seq for size in range(1, longest + 1) for seq in itertools.permutations(universe, size)
                 if (used := [rank[h] for h in seq if h in rank]) == list(range(len(used))))
