"""The self-describing block record every tier writes (T1, T3).

A record is ``header | block hash | payload``: the header holds a magic number, the
lengths, the layout digest (T3) and a checksum of the payload. A reader checks all of it
(the hash byte for byte) before a byte is served, so a torn or bit-flipped write, a slot
that now holds another hash, or bytes of another layout are a failed read, never a wrong
load (T1, T5). The payload starts at ``payload_at`` (``HEAD_BYTES`` by default; the disk
tier puts it at the next page, so that it can write it straight from the caller's
page-aligned buffer, without a staging copy).
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np

from .checksum import checksum64

__all__ = [
    "HEADER",
    "HEAD_BYTES",
    "MAX_HASH_BYTES",
    "RecordError",
    "layout_digest",
    "record_size",
    "pack_header",
    "verify_record",
]

_MAGIC = b"KVOT"
#: magic, hash length, payload length, checksum, layout digest (16 bytes).
HEADER = struct.Struct("<4sHIQ16s")  # 34 bytes, padded below
_HEADER_BYTES = 64
MAX_HASH_BYTES = 96
#: Header and hash: where a record's payload starts unless the writer leaves a gap.
HEAD_BYTES = _HEADER_BYTES + MAX_HASH_BYTES


class RecordError(Exception):
    """A record failed verification (T1); the message says which check."""


def layout_digest(model: str, dtype: str, block_shape: tuple[int, ...]) -> bytes:
    """T3: 16 bytes naming one KV layout; two layouts never share a namespace."""
    text = f"{model}|{dtype}|{','.join(str(int(d)) for d in block_shape)}"
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def copy_bytes(dst: memoryview, src: memoryview) -> None:
    """``dst[:] = src`` for byte views of equal length, without holding the GIL.

    A memoryview slice assignment copies under the GIL, so the tier's I/O threads copied
    one at a time (the staging copy of a 8 MiB block is milliseconds); numpy's copy of
    plain bytes releases it, so they copy in parallel."""
    np.copyto(np.frombuffer(dst, dtype=np.uint8), np.frombuffer(src, dtype=np.uint8))


def record_size(payload_bytes: int) -> int:
    """Bytes of a contiguous record holding ``payload_bytes`` (header and a hash of any allowed size)."""
    return HEAD_BYTES + payload_bytes


def _check_hash(block_hash: bytes) -> None:
    if not 0 < len(block_hash) <= MAX_HASH_BYTES:
        raise ValueError(f"T1: block hashes of 1..{MAX_HASH_BYTES} bytes, got {len(block_hash)}")


def pack_header(buffer: memoryview, digest: bytes, block_hash: bytes, payload_bytes: int, *,
                payload: memoryview | None = None) -> None:
    """Write header and hash into ``buffer[:HEAD_BYTES]``; the checksum covers ``payload``
    (default: the ``payload_bytes`` after the head in ``buffer``, a contiguous record)."""
    _check_hash(block_hash)
    start = _HEADER_BYTES
    buffer[start : start + len(block_hash)] = block_hash
    buffer[start + len(block_hash) : HEAD_BYTES] = bytes(MAX_HASH_BYTES - len(block_hash))
    body = buffer[HEAD_BYTES : HEAD_BYTES + payload_bytes] if payload is None else payload
    if len(body) != payload_bytes:
        raise ValueError(f"payload of {len(body)} bytes, the header says {payload_bytes}")
    HEADER.pack_into(buffer, 0, _MAGIC, len(block_hash), payload_bytes, checksum64(body), digest)


def verify_record(buffer: memoryview, digest: bytes, block_hash: bytes, payload_bytes: int, *,
                  payload_at: int = HEAD_BYTES) -> memoryview:
    """T1: the payload (at ``payload_at``) of a record that holds ``block_hash`` of this
    layout, or ``RecordError``."""
    if len(buffer) < payload_at + payload_bytes:
        raise RecordError(f"T1: record of {len(buffer)} bytes is short")
    magic, hash_len, length, crc, stored_digest = HEADER.unpack_from(buffer, 0)
    if magic != _MAGIC:
        raise RecordError("T1: no record here (bad magic)")
    if stored_digest != digest:
        raise RecordError("T3: record of another KV layout")
    start = _HEADER_BYTES
    if hash_len != len(block_hash) or bytes(buffer[start : start + hash_len]) != block_hash:
        raise RecordError("T1: the record holds another block hash")
    if length != payload_bytes:
        raise RecordError(f"T1: payload length {length}, expected {payload_bytes}")
    payload = buffer[payload_at : payload_at + payload_bytes]
    if checksum64(payload) != crc:
        raise RecordError("T1: checksum mismatch (torn or corrupt record)")
    return payload
