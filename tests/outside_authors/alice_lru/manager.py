"""CPU KV-cache offloading manager with an exact-LRU policy.

Implements the "Manager (OffloadingManager)" section of CONTRACT.md (M0-M10),
tolerates the strict-mode call patterns (C1-C3/C5 broken), keeps I1-I8, and
uses the LRU policy L1-L3 with P4's touch order.

Design
------
* ``self._blocks`` is an ``OrderedDict[bytes, _Block]`` that is *both* the
  block table and the LRU order (least recent first, most recent last).
* ``self._free`` is a stack of free block ids in ``[0, num_blocks)``.
* Every public method first materialises its ``hashes`` argument exactly once
  (M0) and validates all of it (types, M2/M3 preconditions, eviction
  feasibility) before the first mutation, so a call that raises or returns
  ``None`` has changed nothing (M9, I7).  ``lookup`` is the exception to the
  "read everything" rule: it is pure and stops reading at the first miss (M1).
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from typing import Iterable, Iterator, List, Optional

from kvoffload.spec import (
    ContractViolation,
    CPULoadStoreSpec,
    OffloadingEvent,
    PrepareStoreOutput,
)

__all__ = ["LRUOffloadingManager", "make_manager"]

BLOCK_SIZE = 16
MEDIUM = "CPU"
PENDING = -1
_INT32_MAX = 2**31 - 1


class _Block:
    __slots__ = ("block_id", "ref_cnt")

    def __init__(self, block_id: int) -> None:
        self.block_id = block_id
        self.ref_cnt = PENDING

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"_Block(id={self.block_id}, ref_cnt={self.ref_cnt})"


def _short(h: bytes) -> str:
    """Name a hash in an error message: full repr and full hex (never truncated)."""
    return f"{h!r} (hex {h.hex()})"


def _as_key(h: object, index: int) -> bytes:
    """Validate one element and return it as a plain ``bytes`` key.

    ``bytes`` subclasses are accepted (M9) but normalised to plain ``bytes``
    through the buffer protocol, so an overridden ``__eq__``/``__hash__`` or
    ``__bytes__`` on a subclass cannot confuse two distinct hashes (I8).
    """
    if type(h) is bytes:
        return h
    if isinstance(h, bytes):
        return b"".join((h,))
    raise TypeError(
        f"block hashes must be bytes; element {index} is {type(h).__name__}"
    )


def _check_container(hashes: object) -> None:
    # A lone bytes/str would otherwise be iterated element-wise; give a
    # clearer message than "element 0 is int".
    if isinstance(hashes, (bytes, bytearray, memoryview, str)):
        raise TypeError(
            "hashes must be an iterable of bytes, not a single "
            f"{type(hashes).__name__}"
        )


def _read_all(hashes: Iterable[bytes]) -> List[bytes]:
    """Read ``hashes`` once, front to back (M0), and type-check every element."""
    _check_container(hashes)
    it = iter(hashes)  # TypeError if not iterable
    return [_as_key(h, i) for i, h in enumerate(it)]


class LRUOffloadingManager:
    """Scheduler-side offloading manager over a CPU backend, exact LRU."""

    block_size = BLOCK_SIZE
    medium = MEDIUM

    def __init__(self, num_blocks: int, enable_events: bool = False) -> None:
        if isinstance(num_blocks, bool) or not isinstance(num_blocks, int):
            raise TypeError(f"num_blocks must be an int, got {type(num_blocks).__name__}")
        if num_blocks < 0:
            raise ValueError(f"num_blocks must be >= 0, got {num_blocks}")
        self.num_blocks = num_blocks
        self.enable_events = bool(enable_events)
        # hash -> block, least recently used first (L1).
        self._blocks: "OrderedDict[bytes, _Block]" = OrderedDict()
        # Stack of free ids; pop() hands out 0, 1, 2, ... first.
        self._free: List[int] = list(range(num_blocks - 1, -1, -1))
        self._events: List[OffloadingEvent] = []

    # ------------------------------------------------------------------ M1
    def lookup(self, hashes: Iterable[bytes]) -> int:
        _check_container(hashes)
        n = 0
        for i, h in enumerate(iter(hashes)):
            blk = self._blocks.get(_as_key(h, i))
            if blk is None or blk.ref_cnt == PENDING:
                break  # M1: may stop reading at the first miss
            n += 1
        return n

    # ------------------------------------------------------------------ M2
    def prepare_load(self, hashes: Iterable[bytes]) -> CPULoadStoreSpec:
        keys = _read_all(hashes)
        counts = Counter(keys)
        blocks = self._blocks
        for h in keys:  # validate in argument order: name the first bad hash
            blk = blocks.get(h)
            if blk is None:
                raise ContractViolation("M2", f"prepare_load: hash {_short(h)} is absent")
            if blk.ref_cnt == PENDING:
                raise ContractViolation(
                    "M2", f"prepare_load: hash {_short(h)} is pending (store not completed)"
                )
            if blk.ref_cnt + counts[h] > _INT32_MAX:
                raise ContractViolation(
                    "M2", f"prepare_load: ref_cnt of {_short(h)} would overflow int32"
                )
        ids = []
        for h in keys:
            blk = blocks[h]
            blk.ref_cnt += 1
            ids.append(blk.block_id)
        # M10: a load in flight is not a use -- the LRU order is untouched.
        return CPULoadStoreSpec(ids)

    # ------------------------------------------------------------------ M3
    def complete_load(self, hashes: Iterable[bytes]) -> None:
        keys = _read_all(hashes)
        counts = Counter(keys)
        blocks = self._blocks
        for h in keys:
            blk = blocks.get(h)
            if blk is None:
                raise ContractViolation("M3", f"complete_load: hash {_short(h)} is absent")
            if blk.ref_cnt < counts[h]:
                raise ContractViolation(
                    "M3",
                    f"complete_load: hash {_short(h)} completed {counts[h]} time(s) "
                    f"but has ref_cnt {blk.ref_cnt}",
                )
        for h, c in counts.items():
            blocks[h].ref_cnt -= c

    # ------------------------------------------------------------------ M4
    def touch(self, hashes: Iterable[bytes]) -> None:
        keys = _read_all(hashes)
        blocks = self._blocks
        # P4/L2: walk from last to first; the first hash ends up most recent.
        for h in reversed(keys):
            if h in blocks:
                blocks.move_to_end(h)

    # ------------------------------------------------------------------ M5
    def _select_victims(self, need: int, protected: set) -> Optional[List[bytes]]:
        """L3: the ``need`` least-recent ready, idle, unprotected hashes, or None."""
        if need <= 0:
            return []
        victims: List[bytes] = []
        for h, blk in self._blocks.items():  # least recent first
            if blk.ref_cnt == 0 and h not in protected:
                victims.append(h)
                if len(victims) == need:
                    return victims
        return None

    def prepare_store(self, hashes: Iterable[bytes]) -> Optional[PrepareStoreOutput]:
        keys = _read_all(hashes)
        blocks = self._blocks
        to_store: List[bytes] = []
        seen = set()
        for h in keys:
            if h not in blocks and h not in seen:
                seen.add(h)
                to_store.append(h)
        if not to_store:  # M5.2
            return PrepareStoreOutput(
                block_hashes_to_store=[],
                store_spec=CPULoadStoreSpec([]),
                block_hashes_evicted=[],
            )
        need = len(to_store) - len(self._free)
        victims = self._select_victims(need, set(keys))  # M5.3: all input protected
        if victims is None:
            return None  # M5.4: nothing touched
        # M5.5 -- commit.
        for h in victims:
            self._free.append(blocks.pop(h).block_id)
        ids = []
        for h in to_store:
            blk = _Block(self._free.pop())
            blocks[h] = blk  # new key -> most-recent end
            ids.append(blk.block_id)
        if self.enable_events and victims:
            self._events.append(
                OffloadingEvent(
                    block_hashes=list(victims),
                    block_size=self.block_size,
                    medium=self.medium,
                    removed=True,
                )
            )
        return PrepareStoreOutput(
            block_hashes_to_store=to_store,
            store_spec=CPULoadStoreSpec(ids),
            block_hashes_evicted=victims,
        )

    # ------------------------------------------------------------------ M6/M7
    def complete_store(self, hashes: Iterable[bytes], success: bool = True) -> None:
        if not isinstance(success, bool):
            try:
                import numpy as _np

                ok = isinstance(success, _np.bool_)
            except ImportError:  # pragma: no cover
                ok = False
            if not ok:
                raise TypeError(f"success must be a bool, got {type(success).__name__}")
            success = bool(success)
        keys = _read_all(hashes)
        blocks = self._blocks
        if success:
            stored: List[bytes] = []
            for h in keys:
                blk = blocks.get(h)
                if blk is not None and blk.ref_cnt == PENDING:
                    blk.ref_cnt = 0
                    stored.append(h)
            if self.enable_events and stored:
                self._events.append(
                    OffloadingEvent(
                        block_hashes=stored,
                        block_size=self.block_size,
                        medium=self.medium,
                        removed=False,
                    )
                )
        else:
            for h in keys:
                blk = blocks.get(h)
                if blk is not None and blk.ref_cnt == PENDING:
                    del blocks[h]
                    self._free.append(blk.block_id)

    # ------------------------------------------------------------------ M8
    def take_events(self) -> List[OffloadingEvent]:
        events, self._events = self._events, []
        return events

    # ------------------------------------------------------ introspection
    # Read-only helpers for tests and debugging; not part of the contract.
    def get_num_free_blocks(self) -> int:
        return len(self._free)

    def ref_cnt(self, h: bytes) -> Optional[int]:
        blk = self._blocks.get(h)
        return None if blk is None else blk.ref_cnt

    def block_id(self, h: bytes) -> Optional[int]:
        blk = self._blocks.get(h)
        return None if blk is None else blk.block_id

    def lru_order(self) -> List[bytes]:
        """Present hashes, least recently used first."""
        return list(self._blocks)

    def __len__(self) -> int:
        return len(self._blocks)

    def __iter__(self) -> Iterator[bytes]:
        return iter(list(self._blocks))


def make_manager(num_blocks: int, enable_events: bool = False) -> LRUOffloadingManager:
    return LRUOffloadingManager(num_blocks, enable_events)
