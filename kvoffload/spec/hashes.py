"""Reading ``hashes`` arguments exactly as the contract says (M0, M9, I8).

Every manager method takes "any iterable of bytes, possibly one-shot" (M0). The model
reads it once, front to back, into a list, and checks every element before anything
else happens, so a bad element can never leave a call half-applied (M9).
"""

from __future__ import annotations

from collections.abc import Iterable

from .clauses import implements
from .types import BlockHash

__all__ = ["read_hashes", "describe_hash"]


def describe_hash(block_hash: bytes) -> str:
    """A short printable form of a hash for error messages (first bytes in hex)."""
    shown = block_hash[:12].hex()
    more = "…" if len(block_hash) > 12 else ""
    return f"{shown}{more} ({len(block_hash)} bytes)"


@implements("M0", "M9", "I8")
def read_hashes(hashes: Iterable[bytes], argument: str = "block_hashes") -> list[BlockHash]:
    """Consume ``hashes`` once (M0) and return its elements as a list.

    Raises ``TypeError`` (M9) if ``hashes`` is not an iterable, is itself a single
    ``bytes``/``str`` object, or yields anything that is not ``bytes`` (``bytes``
    subclasses are accepted; ``bytearray``, ``str``, ``int`` are not), and
    ``ValueError`` for an empty hash (a block hash has non-zero length, see the
    contract's vocabulary). Nothing is returned partially: the caller validates the
    whole batch before it mutates anything.
    """
    if isinstance(hashes, (bytes, bytearray, memoryview, str)):
        raise TypeError(
            f"M9: {argument} must be an iterable of bytes hashes, "
            f"got a single {type(hashes).__name__} object"
        )
    try:
        iterator = iter(hashes)
    except TypeError:
        raise TypeError(
            f"M9: {argument} must be an iterable of bytes hashes, got {type(hashes).__name__}"
        ) from None
    batch: list[BlockHash] = []
    for position, block_hash in enumerate(iterator):
        if not isinstance(block_hash, bytes):
            raise TypeError(
                f"M9: {argument}[{position}] is {type(block_hash).__name__}, "
                "but block hashes must be bytes"
            )
        if len(block_hash) == 0:
            raise ValueError(f"M9: {argument}[{position}] is an empty hash; hashes have non-zero length")
        if type(block_hash) is not bytes:
            # I8: identity is the content. A bytes subclass may override __eq__, __hash__
            # or __bytes__; a memoryview copy reads the raw content and nothing else.
            block_hash = bytes(memoryview(block_hash))
        batch.append(block_hash)
    return batch
