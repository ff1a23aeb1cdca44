"""KV-cache offloading manager with a CLOCK (second-chance) eviction policy.

Implements the Manager section (M0-M10) of the KV-offloading contract on top of
two small internal components:

* ``CPUBackend`` -- owns ``num_blocks`` block ids in ``[0, num_blocks)`` and a
  FIFO free list of them.  Each allocated id belongs to exactly one live
  ``Block`` (no aliasing, I4).
* ``ClockPolicy`` -- a CLOCK ring.  Every present hash sits on the ring with a
  reference bit.  ``touch`` sets the bit; ``evict`` sweeps the hand: an
  eligible entry (ready, ``ref_cnt == 0``, not protected) with its bit set gets
  a second chance (bit cleared, hand moves on); an eligible entry with its bit
  clear is the victim.  Ineligible entries are stepped over untouched -- their
  bits are kept, since being pinned by a load or a store says nothing about
  whether they are worth keeping.  New entries are inserted just behind the
  hand (bit clear), i.e. they are the last ones the hand will reach.

  The ring is an ``OrderedDict`` rotated so that the hand is always at its
  front: "advance the hand past x" is ``move_to_end(x)``, "evict at the hand"
  is ``popitem(last=False)`` and "insert behind the hand" is a plain append.

Atomicity (I7): ``evict`` first checks, without touching anything, that ``n``
eligible entries exist; only then does it sweep.  A sweep that has enough
eligible entries always finishes, so a refused store never moves the hand or
clears a bit.  All argument validation happens before any mutation (M9).
"""

from __future__ import annotations

from collections import Counter, OrderedDict, deque
from typing import Iterable, Iterator, List, Optional, Tuple

from kvoffload.spec import (
    ContractViolation,
    CPULoadStoreSpec,
    OffloadingEvent,
    PrepareStoreOutput,
)

__all__ = ["Block", "CPUBackend", "ClockPolicy", "ClockOffloadingManager", "make_manager"]

BLOCK_SIZE = 16
MEDIUM = "CPU"

PENDING = -1
_INT32_MAX = 2**31 - 1


# --------------------------------------------------------------------------- helpers

def _short(h: bytes) -> str:
    hx = h.hex()
    return hx if len(hx) <= 24 else hx[:20] + "..(%dB)" % len(h)


def _read_hashes(hashes, what: str) -> List[bytes]:
    """Read ``hashes`` exactly once, front to back (M0), type-check every
    element (M9) and return a list of plain ``bytes``.

    Nothing in the manager is touched here, so a ``TypeError`` (or an exception
    raised by the caller's generator) leaves the manager as it was.
    """
    if isinstance(hashes, (str, bytes, bytearray, memoryview)):
        # A single hash (or a string) passed where an iterable of hashes is
        # expected: iterating it would yield ints / characters.
        raise TypeError(
            "%s: 'hashes' must be an iterable of bytes, not a single %s"
            % (what, type(hashes).__name__)
        )
    try:
        it = iter(hashes)
    except TypeError:
        raise TypeError(
            "%s: 'hashes' must be an iterable of bytes, got %s"
            % (what, type(hashes).__name__)
        ) from None
    out: List[bytes] = []
    append = out.append
    for i, h in enumerate(it):
        if type(h) is bytes:
            append(h)
        elif isinstance(h, bytes):
            # bytes subclass: fine, but key on a plain bytes copy so that an
            # overridden __eq__/__hash__ can never confuse two hashes (I8).
            append(bytes.__getitem__(h, slice(None)))
        else:
            raise TypeError(
                "%s: block hash #%d must be bytes, got %s"
                % (what, i, type(h).__name__)
            )
    return out


# --------------------------------------------------------------------------- backend

class Block:
    """One slot of offloaded space.  ``ref_cnt``: -1 pending, 0 ready/idle,
    k > 0 ready and read by k loads."""

    __slots__ = ("block_id", "ref_cnt")

    def __init__(self, block_id: int) -> None:
        self.block_id = block_id
        self.ref_cnt = PENDING

    def __repr__(self) -> str:
        return "Block(id=%d, ref_cnt=%d)" % (self.block_id, self.ref_cnt)


class CPUBackend:
    """Free-list allocator for ``num_blocks`` CPU block ids."""

    medium = MEDIUM
    block_size = BLOCK_SIZE

    def __init__(self, num_blocks: int) -> None:
        self.num_blocks = num_blocks
        self._free: deque = deque(range(num_blocks))
        self._live: dict = {}  # block_id -> Block

    def get_num_free_blocks(self) -> int:
        return len(self._free)

    def allocate_blocks(self, count: int) -> List[Block]:
        if count > len(self._free):
            raise ContractViolation(
                "B2", "asked for %d blocks, only %d free" % (count, len(self._free))
            )
        blocks = []
        for _ in range(count):
            bid = self._free.popleft()
            blk = Block(bid)
            self._live[bid] = blk
            blocks.append(blk)
        return blocks

    def free(self, block: Block) -> None:
        if self._live.get(block.block_id) is not block:
            raise ContractViolation(
                "B3", "block %r is not allocated by this backend" % (block,)
            )
        del self._live[block.block_id]
        self._free.append(block.block_id)

    def get_load_store_spec(self, blocks: Iterable[Block]) -> CPULoadStoreSpec:
        return CPULoadStoreSpec([b.block_id for b in blocks])


# --------------------------------------------------------------------------- policy

class _Entry:
    __slots__ = ("block", "referenced")

    def __init__(self, block: Block) -> None:
        self.block = block
        self.referenced = False


class ClockPolicy:
    """CLOCK / second-chance replacement over the present hashes."""

    def __init__(self) -> None:
        # Ring in hand order: the first key is the entry under the hand.
        self._ring: "OrderedDict[bytes, _Entry]" = OrderedDict()

    def __len__(self) -> int:
        return len(self._ring)

    def __contains__(self, h: bytes) -> bool:
        return h in self._ring

    def get(self, h: bytes) -> Optional[Block]:
        e = self._ring.get(h)
        return None if e is None else e.block

    def insert(self, h: bytes, block: Block) -> None:
        if h in self._ring:
            raise ContractViolation("P2", "hash %s is already present" % _short(h))
        # Behind the hand, reference bit clear: reached last by the hand.
        self._ring[h] = _Entry(block)

    def remove(self, h: bytes) -> None:
        if h not in self._ring:
            raise ContractViolation("P3", "hash %s is not present" % _short(h))
        del self._ring[h]

    def touch(self, hashes: List[bytes]) -> None:
        ring = self._ring
        for h in reversed(hashes):  # P4 order (irrelevant for bits, kept anyway)
            e = ring.get(h)
            if e is not None:
                e.referenced = True

    @staticmethod
    def _eligible(h: bytes, e: _Entry, protected) -> bool:
        return e.block.ref_cnt == 0 and h not in protected

    def can_evict(self, n: int, protected) -> bool:
        if n <= 0:
            return True
        found = 0
        for h, e in self._ring.items():
            if e.block.ref_cnt == 0 and h not in protected:
                found += 1
                if found >= n:
                    return True
        return False

    def evict(self, n: int, protected) -> Optional[List[Tuple[bytes, Block]]]:
        """Return exactly ``n`` (hash, block) victims in eviction order and
        remove them, or ``None`` with nothing changed (P5, I7)."""
        if n <= 0:
            return []
        if not self.can_evict(n, protected):
            return None
        ring = self._ring
        victims: List[Tuple[bytes, Block]] = []
        while len(victims) < n:
            h, e = next(iter(ring.items()))
            if e.block.ref_cnt == 0 and h not in protected:
                if e.referenced:
                    e.referenced = False  # second chance
                    ring.move_to_end(h)
                else:
                    del ring[h]  # hand moves to the next entry
                    victims.append((h, e.block))
            else:
                ring.move_to_end(h)  # pinned or protected: step over it
        return victims

    # introspection (tests / debugging)
    def snapshot(self) -> List[Tuple[bytes, bool]]:
        return [(h, e.referenced) for h, e in self._ring.items()]


# --------------------------------------------------------------------------- manager

class ClockOffloadingManager:
    """Scheduler-side offloading manager (contract section 'Manager')."""

    policy_cls = ClockPolicy
    backend_cls = CPUBackend

    def __init__(self, num_blocks: int, enable_events: bool = False) -> None:
        if isinstance(num_blocks, bool) or not isinstance(num_blocks, int):
            raise TypeError("num_blocks must be an int, got %s" % type(num_blocks).__name__)
        if num_blocks < 0:
            raise ValueError("num_blocks must be >= 0, got %d" % num_blocks)
        self.backend = self.backend_cls(num_blocks)
        self.policy = self.policy_cls()
        self._events: Optional[List[OffloadingEvent]] = [] if enable_events else None

    # ---- queries -------------------------------------------------------------------

    def lookup(self, hashes) -> int:
        hs = _read_hashes(hashes, "lookup")
        get = self.policy.get
        n = 0
        for h in hs:
            b = get(h)
            if b is None or b.ref_cnt < 0:
                break
            n += 1
        return n

    # ---- loads ---------------------------------------------------------------------

    def prepare_load(self, hashes) -> CPULoadStoreSpec:
        hs = _read_hashes(hashes, "prepare_load")
        get = self.policy.get
        blocks: List[Block] = []
        for h in hs:
            b = get(h)
            if b is None:
                raise ContractViolation("M2", "prepare_load: hash %s is not present" % _short(h))
            if b.ref_cnt < 0:
                raise ContractViolation(
                    "M2", "prepare_load: hash %s is pending (store not completed)" % _short(h)
                )
            blocks.append(b)
        for h, c in Counter(hs).items():  # ref_cnt is a C int32
            if get(h).ref_cnt + c > _INT32_MAX:
                raise ContractViolation("M2", "prepare_load: ref_cnt of %s would overflow int32" % _short(h))
        for b in blocks:
            b.ref_cnt += 1
        return self.backend.get_load_store_spec(blocks)

    def complete_load(self, hashes) -> None:
        hs = _read_hashes(hashes, "complete_load")
        get = self.policy.get
        counts = Counter(hs)
        for h, c in counts.items():
            b = get(h)
            if b is None:
                raise ContractViolation("M3", "complete_load: hash %s is not present" % _short(h))
            if b.ref_cnt < c:
                raise ContractViolation(
                    "M3",
                    "complete_load: hash %s has %d outstanding load(s), %d completion(s) given"
                    % (_short(h), max(b.ref_cnt, 0), c),
                )
        for h, c in counts.items():
            get(h).ref_cnt -= c

    # ---- recency -------------------------------------------------------------------

    def touch(self, hashes) -> None:
        hs = _read_hashes(hashes, "touch")
        self.policy.touch(hs)

    # ---- stores --------------------------------------------------------------------

    def prepare_store(self, hashes) -> Optional[PrepareStoreOutput]:
        hs = _read_hashes(hashes, "prepare_store")
        policy = self.policy
        protected = set(hs)
        to_store: List[bytes] = []
        seen = set()
        for h in hs:
            if h not in seen:
                seen.add(h)
                if h not in policy:
                    to_store.append(h)
        if not to_store:
            return PrepareStoreOutput(
                block_hashes_to_store=[],
                store_spec=self.backend.get_load_store_spec([]),
                block_hashes_evicted=[],
            )
        need = len(to_store) - self.backend.get_num_free_blocks()
        victims: List[Tuple[bytes, Block]] = []
        if need > 0:
            got = policy.evict(need, protected)
            if got is None:
                return None  # nothing changed (M5.4, I6, I7)
            victims = got
            for _h, b in victims:
                self.backend.free(b)
        blocks = self.backend.allocate_blocks(len(to_store))
        for h, b in zip(to_store, blocks):
            policy.insert(h, b)
        evicted = [h for h, _b in victims]
        if evicted and self._events is not None:
            self._events.append(self._event(evicted, removed=True))
        return PrepareStoreOutput(
            block_hashes_to_store=to_store,
            store_spec=self.backend.get_load_store_spec(blocks),
            block_hashes_evicted=evicted,
        )

    def complete_store(self, hashes, success: bool = True) -> None:
        hs = _read_hashes(hashes, "complete_store")
        get = self.policy.get
        if success:
            ready: List[bytes] = []
            for h in hs:
                b = get(h)
                if b is not None and b.ref_cnt == PENDING:
                    b.ref_cnt = 0
                    ready.append(h)
            if ready and self._events is not None:
                self._events.append(self._event(ready, removed=False))
        else:
            for h in hs:
                b = get(h)
                if b is not None and b.ref_cnt == PENDING:
                    self.policy.remove(h)
                    self.backend.free(b)

    # ---- events --------------------------------------------------------------------

    @staticmethod
    def _event(hashes: List[bytes], removed: bool) -> OffloadingEvent:
        return OffloadingEvent(
            block_hashes=list(hashes), block_size=BLOCK_SIZE, medium=MEDIUM, removed=removed
        )

    def take_events(self) -> Iterator[OffloadingEvent]:
        if not self._events:
            return iter(())
        out, self._events = self._events, []
        return iter(out)

    # ---- introspection (not part of the contract) ----------------------------------

    def get_num_free_blocks(self) -> int:
        return self.backend.get_num_free_blocks()

    def debug_state(self):
        """A comparable snapshot of every observable (and the policy's state)."""
        return {
            "free": self.backend.get_num_free_blocks(),
            "free_list": tuple(self.backend._free),
            "blocks": {h: (e.block.block_id, e.block.ref_cnt) for h, e in self.policy._ring.items()},
            "ring": tuple(self.policy.snapshot()),
            "events": None if self._events is None else tuple(
                (tuple(ev.block_hashes), ev.removed) for ev in self._events
            ),
        }


def make_manager(num_blocks: int, enable_events: bool = False) -> ClockOffloadingManager:
    return ClockOffloadingManager(num_blocks, enable_events)
