"""One preallocated file of fixed-size slots: slot ``i`` lives at ``i * slot_bytes`` (T1).

Each slot holds one record (:mod:`.records`): its header and hash in the first page,
the payload from the second page on. A write is one ``pwritev`` of the header page and
the caller's payload, straight from its buffer when that is page-aligned and a whole
number of pages (vLLM's shared-region rows are), else one ``pwrite`` of the slot through
a page-aligned staging buffer per thread. Skipping that copy (8 MiB per vLLM-sized block,
with its cache misses) is what brings the tier's writes near the raw ``O_DIRECT`` rate on
a machine whose cores are shared. A read is one ``preadv`` of the whole slot into the
staging buffer: the destination is written only after the record verified (T1). So the
file can be opened with ``O_DIRECT`` (no page cache; slots are multiples of 4 KiB);
where the file system refuses ``O_DIRECT`` the file is opened without it. ``IOFaults``
injects failures for the fault runs: failed and torn writes, flipped bits, failed reads.
"""

from __future__ import annotations

import errno
import mmap
import os
import random
import threading

import attrs
import numpy as np

from .records import HEAD_BYTES, copy_bytes, pack_header, verify_record

__all__ = ["BlockFile", "IOFaults", "ALIGN"]

ALIGN = 4096
#: The payload's offset in a slot: the header page before it (HEAD_BYTES ≤ ALIGN).
_PAYLOAD_AT = ALIGN
assert HEAD_BYTES <= ALIGN


@attrs.define
class IOFaults:
    """Probabilities of injected faults, drawn from one seeded generator (thread-safe)."""

    seed: int = 0
    write_error: float = 0.0  # pwrite raises: the store must fail (T2)
    torn_write: float = 0.0  # half the new record lands, the write "succeeds" (T1)
    bit_flip: float = 0.0  # one payload byte flips on the medium after the write (T1)
    read_error: float = 0.0  # preadv raises: the load fails, nothing served (T1)
    doomed: set[bytes] = attrs.field(factory=set)  # hashes whose every write fails (T2)
    injected: dict[str, int] = attrs.field(factory=dict)
    _rng: random.Random = attrs.field(init=False)
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)

    def __attrs_post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def draw(self, kind: str) -> bool:
        """Whether to inject a fault of ``kind`` now (and count it)."""
        rate = float(getattr(self, kind))
        if rate <= 0.0:
            return False
        with self._lock:
            hit = self._rng.random() < rate
            if hit:
                self.injected[kind] = self.injected.get(kind, 0) + 1
        return hit

    def offset(self, bound: int) -> int:
        with self._lock:
            return self._rng.randrange(bound)


class BlockFile:
    """``num_slots`` slots of ``payload_bytes`` each in one preallocated file."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        num_slots: int,
        payload_bytes: int,
        digest: bytes,
        *,
        direct: bool = True,
        faults: IOFaults | None = None,
    ) -> None:
        if num_slots <= 0 or payload_bytes <= 0:
            raise ValueError(f"S4: num_slots={num_slots!r} and payload_bytes={payload_bytes!r} must be positive")
        self.path = os.fspath(path)
        self.num_slots = num_slots
        self.payload_bytes = payload_bytes
        self.digest = digest
        self.payload_at = _PAYLOAD_AT
        self.slot_bytes = _PAYLOAD_AT + -(-payload_bytes // ALIGN) * ALIGN
        self.faults = faults
        self.direct = False
        flags = os.O_RDWR | os.O_CREAT
        if direct and hasattr(os, "O_DIRECT"):
            try:
                self._fd = os.open(self.path, flags | os.O_DIRECT, 0o600)
                self.direct = True
            except OSError:
                self._fd = os.open(self.path, flags, 0o600)
        else:
            self._fd = os.open(self.path, flags, 0o600)
        os.ftruncate(self._fd, 0)  # stale records of an earlier run are never trusted
        os.posix_fallocate(self._fd, 0, self.slot_bytes * num_slots)
        self._local = threading.local()

    def _staging(self) -> mmap.mmap:
        buffer: mmap.mmap | None = getattr(self._local, "buffer", None)
        if buffer is None:
            buffer = mmap.mmap(-1, self.slot_bytes)  # page-aligned, as O_DIRECT needs
            self._local.buffer = buffer
        return buffer

    def _head(self) -> mmap.mmap:
        """This thread's header page (a zero-copy write sends it before the payload)."""
        head: mmap.mmap | None = getattr(self._local, "head", None)
        if head is None:
            head = mmap.mmap(-1, ALIGN)
            self._local.head = head
        return head

    def _offset(self, slot: int) -> int:
        if not 0 <= slot < self.num_slots:
            raise IndexError(f"B4: slot {slot} outside [0, {self.num_slots})")
        return slot * self.slot_bytes

    def _zero_copy(self, view: memoryview) -> bool:
        """Whether ``view`` can be written as it is: whole pages, page-aligned under O_DIRECT."""
        if self.payload_bytes % ALIGN:
            return False
        return not self.direct or np.frombuffer(view, dtype=np.uint8).ctypes.data % ALIGN == 0

    def _staged(self, block_hash: bytes, view: memoryview) -> memoryview:
        """The whole record in this thread's staging buffer (a copy of the payload)."""
        staging = memoryview(self._staging())
        body = staging[_PAYLOAD_AT : _PAYLOAD_AT + self.payload_bytes]
        copy_bytes(body, view)
        pack_header(staging, self.digest, block_hash, self.payload_bytes, payload=body)
        return staging

    def write(self, slot: int, block_hash: bytes, payload: memoryview | bytes) -> None:
        """Store ``payload`` under ``block_hash`` in ``slot``; ``OSError`` if it did not land (T2)."""
        offset = self._offset(slot)
        view = memoryview(payload).cast("B")
        if view.nbytes != self.payload_bytes:
            raise ValueError(f"payload of {view.nbytes} bytes, slots hold {self.payload_bytes}")
        faults = self.faults
        if faults is not None and (block_hash in faults.doomed or faults.draw("write_error")):
            raise OSError(errno.EIO, f"injected write error at slot {slot}")
        if faults is not None and faults.draw("torn_write"):
            self._tear(offset, self._staged(block_hash, view))
            return
        if self._zero_copy(view):
            head = memoryview(self._head())
            pack_header(head, self.digest, block_hash, self.payload_bytes, payload=view)
            written = os.pwritev(self._fd, [head, view], offset)
        else:
            written = os.pwrite(self._fd, self._staged(block_hash, view), offset)
        if written != self.slot_bytes:
            raise OSError(errno.EIO, f"short write at slot {slot}: {written} of {self.slot_bytes} bytes")
        if faults is not None and faults.draw("bit_flip"):
            self._flip(offset)

    def _tear(self, offset: int, staging: memoryview) -> None:
        """The first half of the new record over the old second half (a crash mid-write)."""
        old = memoryview(mmap.mmap(-1, self.slot_bytes))
        os.preadv(self._fd, [old], offset)
        half = self.slot_bytes // 2
        old[:half] = staging[:half]
        os.pwrite(self._fd, old, offset)

    def _flip(self, offset: int) -> None:
        assert self.faults is not None
        self.corrupt(offset // self.slot_bytes, self.faults.offset(self.payload_bytes))

    def corrupt(self, slot: int, payload_offset: int) -> None:
        """Fault injection: flip one payload byte of ``slot`` on the medium (T1)."""
        offset = self._offset(slot)
        page = memoryview(mmap.mmap(-1, self.slot_bytes))
        os.preadv(self._fd, [page], offset)
        page[_PAYLOAD_AT + payload_offset % self.payload_bytes] ^= 0x5A
        os.pwrite(self._fd, page, offset)

    def read(self, slot: int, block_hash: bytes, out: memoryview) -> None:
        """Copy the verified payload of ``block_hash`` into ``out``; ``RecordError``/``OSError`` else (T1).

        ``out`` is written only after every check passed: a failed read leaves it as it was.
        """
        offset = self._offset(slot)
        staging = memoryview(self._staging())
        if self.faults is not None and self.faults.draw("read_error"):
            raise OSError(errno.EIO, f"injected read error at slot {slot}")
        got = os.preadv(self._fd, [staging], offset)
        if got != self.slot_bytes:
            raise OSError(errno.EIO, f"short read at slot {slot}: {got} of {self.slot_bytes} bytes")
        payload = verify_record(staging, self.digest, block_hash, self.payload_bytes, payload_at=_PAYLOAD_AT)
        copy_bytes(memoryview(out).cast("B"), payload)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
