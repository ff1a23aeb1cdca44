"""``CPUOffloadingManager``: the production manager (M0–M10, I1–I8) over the compiled core.

Python does what only Python can (reading the argument once, type checks, building the
result lists and events); every lookup, ref-count change, eviction decision and list
update happens in one compiled call per method (one entry point of ``core.ops`` each), a whole
batch at a time. Behaviour is identical to ``kvoffload.spec.ReferenceManager`` of the same policy,
block ids aside.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from ..spec.errors import ContractViolation
from ..spec.hashes import describe_hash, read_hashes
from ..spec.interfaces import OffloadingManager
from ..spec.offloading_spec import positive_int
from ..spec.rank_lru import LRU_ORDERS
from ..spec.s3fifo import MAX_FREQUENCY as S3FIFO_MAX_FREQUENCY
from ..spec.s3fifo import s3fifo_sizes
from ..spec.types import (
    BlockHash,
    BlockStatus,
    CPULoadStoreSpec,
    OffloadingEvent,
    PrepareStoreOutput,
)
from .core import layout as L
from .core import runtime
from .core.layout import (
    CAP,
    ELIG,
    FIELDS,
    FPMASK,
    GHOST_HEAD,
    GHOST_SIZE,
    GHOST_TAIL,
    HS0,
    LIST_HEAD,
    LIST_TAIL,
    N1,
    NFREE,
    NGFREE,
    NODES,
    POLICIES,
    SHIFT,
    SLOW_PATH,
    ghost_slot,
    list_slot,
    span,
    table_size,
)
from .core.rows import pack
from .core.cpython import LAYOUT_OK
from .fingerprint import fingerprint_mask

__all__ = ["CPUOffloadingManager", "MANAGER_POLICIES"]

MANAGER_POLICIES = tuple(POLICIES)
_MAX_NODES = 2**31 - 2
#: ``rerank``'s modes: the observed keys first (they only rise), then the inserted ones.
_RANK_MODES = np.array([L.RANK_RAISE, L.RANK_SET], np.int64)
_NOT_BYTES = (bytes, bytearray, memoryview, str)
_KEY_WORDS = 5  # [length, 4 words]: 32-byte hashes; rows widen when longer hashes come
_Q_WORDS = 5  # batch rows: up to 40-byte hashes before the scratch widens

I64 = npt.NDArray[np.int64]
#: One flag per hash (``arc_finish``, ``arc_store_misses``): bools, or one byte each.
Flags = Sequence[bool] | bytes | bytearray
Op = Callable[..., int]
#: Per-hash values an entry point reads from ``io``: ``(layout.IO_OUT_A …, values)`` pairs.
Inputs = Sequence[tuple[int, Any]]
_READY = runtime.READY
#: The arrays of a manager's state (``__deepcopy__`` copies them, ``restore_state`` copies them back).
_STATE_ARRAYS = ("_table", "_keys", "_a64", "_a32", "_a8", "_pf", "_objects")
#: The arrays a copy owns: its state and per-batch scratch.
_ARRAYS = (*_STATE_ARRAYS, "_q", "_io")
#: The named views ``_bind_views`` keeps, and their spans by (num_blocks, ghost nodes).
_BOUND_VIEWS = ("meta", "ts", "ref", "hpos", "free", "bprev", "bnext", "lst", "gnext")
_VIEW_SPANS: dict[tuple[int, int], list[tuple[str, int, slice]]] = {}


def _pick(hashes: list[BlockHash], idx: I64, count: int) -> list[BlockHash]:
    """``[hashes[i] for i in idx[:count]]`` (``idx`` increasing, distinct)."""
    if count == len(hashes):
        return list(hashes)
    if count == 0:
        return []
    if count == 1:
        return [hashes[int(idx[0])]]
    return list(itemgetter(*idx[:count].tolist())(hashes))


class CPUOffloadingManager(OffloadingManager):
    """An ``OffloadingManager`` for ``num_blocks`` CPU blocks, LRU, ARC, S3-FIFO or SIEVE (exact).

    ``fingerprint`` is a test seam (``"default"``, ``"constant"``, ``"low_bits:K"``,
    see :mod:`kvoffload.impl.fingerprint`): it makes fingerprints collide on purpose;
    answers never change (I8). ``medium`` is ``"CPU"``; block ids lie in
    ``[0, num_blocks)``.

    Each call reads its argument once into a list (M0; a ``list`` argument is used as
    it is), then runs one compiled entry point of ``core.ops`` that reads the list's
    elements itself (``core.pyobj``), checks them, and does the whole batch. Anything
    unusual (an element that is not exactly ``bytes``, an empty or unusually long
    hash, an interpreter without the expected object layout) takes the slow path:
    ``read_hashes`` (the contract's errors; ``bytes`` subclasses copied to plain bytes)
    and a batch packed by ``b"".join``.
    """

    medium = "CPU"
    #: Named views of the arenas (``_bind_views``).
    _meta: npt.NDArray[Any]
    _ts: npt.NDArray[Any]
    _ref: npt.NDArray[Any]
    _hpos: npt.NDArray[Any]
    _free: npt.NDArray[Any]
    _bprev: npt.NDArray[Any]
    _bnext: npt.NDArray[Any]
    _lst: npt.NDArray[Any]
    _gnext: npt.NDArray[Any]
    #: ``io``'s result arrays (``_bind_io``): ``out_a``, ``out_b``, ``out_c`` of the last call.
    _out_a: I64
    _out_b: I64
    _out_c: I64
    #: Whether calls read the list directly (tests switch it off to cover the slow path).
    direct: bool = LAYOUT_OK

    def __init__(
        self,
        num_blocks: int,
        policy: str = "lru",
        enable_events: bool = False,
        block_size: int = 16,
        *,
        fingerprint: str = "default",
        lru_order: str = "recency",
    ) -> None:
        self.num_blocks = positive_int("num_blocks", num_blocks)
        self.block_size = positive_int("block_size", block_size)
        if not isinstance(policy, str) or policy not in MANAGER_POLICIES:
            raise ValueError(f"policy={policy!r} is not one of {sorted(MANAGER_POLICIES)}")
        if lru_order not in LRU_ORDERS[1:] or (lru_order == "request-rank" and policy != "lru"):
            raise ValueError(f"N9: lru_order={lru_order!r} is not one of {LRU_ORDERS[1:]} (request-rank: LRU only)")
        self.policy = policy
        #: L1 (``"recency"``) or N9 (``"request-rank"``: ranks come from ``rerank``)
        self.lru_order = lru_order
        ranked = lru_order == "request-rank"
        code = POLICIES[policy]
        small = s3fifo_sizes(self.num_blocks)[0] if code == L.POLICY_S3FIFO else 0
        bounds = L.ghost_bounds(code, self.num_blocks, small)
        nodes = self.num_blocks + sum(bounds)
        if nodes > _MAX_NODES:
            raise ValueError(f"S4: num_blocks={num_blocks!r} is too large for this manager")
        self.fingerprint = fingerprint
        mask = fingerprint_mask(fingerprint)
        self.enable_events = bool(enable_events)
        self._events: list[OffloadingEvent] = []
        cap = self.num_blocks
        ghosts = self._ghosts = nodes - cap
        size = table_size(nodes)
        n64, n32, n8 = L.arena_sizes(cap, ghosts)
        self._table = np.zeros(size, np.uint64)
        self._keys = np.zeros((nodes, _KEY_WORDS), np.uint64)
        self._a64 = np.zeros(n64, np.int64)
        self._a32 = np.zeros(n32 + L.minor_words(ranked, cap), np.int32)  # N9 minors: the last cap words
        self._a8 = np.zeros(n8 + L.mark_bytes(code, cap), np.int8)  # marks: the last cap bytes
        self._pf = np.zeros(1, np.float64)
        arenas = (self._a64, self._a32, self._a8)
        # Named views of the arenas (same memory): initial values, introspection.
        view = {name: arenas[L.ARENA_OF[name]][slice(*span(FIELDS[name], cap, ghosts))] for name in FIELDS}
        meta = view["meta"]
        meta[NFREE] = cap
        meta[CAP] = cap
        meta[NODES] = nodes
        meta[L.POLICY] = code
        meta[SHIFT] = 64 - (size.bit_length() - 1)
        for h in range(L.LIST_COUNT):
            meta[list_slot(h, LIST_HEAD)] = meta[list_slot(h, LIST_TAIL)] = -1  # recency lists: empty
            meta[ghost_slot(h, GHOST_HEAD)] = meta[ghost_slot(h, GHOST_TAIL)] = -1  # ghost lists: empty
            meta[ghost_slot(h, GHOST_SIZE)] = 0
        meta[NGFREE] = ghosts
        meta[L.GBOUND], meta[L.GBOUND + 1] = bounds
        meta[L.SMALL] = small
        meta[L.MARK_MAX] = {L.POLICY_S3FIFO: S3FIFO_MAX_FREQUENCY, L.POLICY_SIEVE: 1}.get(code, 0)
        meta[L.HAND] = -1
        meta[L.RANKED] = int(ranked)
        meta[FPMASK] = np.array([mask], np.uint64).view(np.int64)[0]
        meta[L.BYTES_TYPE] = id(bytes)
        for name in ("hpos", "bprev", "bnext", "gprev", "gnext"):
            view[name][:] = -1
        view["free"][:] = np.arange(cap - 1, -1, -1, dtype=np.int32)  # block 0 on top
        view["gfree"][:] = np.arange(cap + ghosts - 1, cap - 1, -1, dtype=np.int32)
        self._bind_views()
        # The Python hash objects by block id, to hand back evicted hashes without copies.
        self._objects: npt.NDArray[np.object_] = np.empty(cap, dtype=object)
        self._batch = 0
        self._q = np.zeros((0, _Q_WORDS), np.uint64)
        self._io = np.zeros(L.IO_INFO, np.int64)
        self._grow_batch(64)
        runtime.start()

    def _bind_views(self) -> None:
        """Named views of the arenas (same memory), for introspection; from the one
        layout table (spans computed once per shape), so a copy (``__deepcopy__``) binds
        them to its own arrays."""
        shape = (self.num_blocks, self._ghosts)
        spans = _VIEW_SPANS.get(shape)
        if spans is None:
            spans = _VIEW_SPANS[shape] = [(f"_{name}", L.ARENA_OF[name], slice(*span(FIELDS[name], *shape)))
                                          for name in _BOUND_VIEWS]
        arenas = (self._a64, self._a32, self._a8)
        for attribute, arena, where in spans:
            setattr(self, attribute, arenas[arena][where])

    def __deepcopy__(self, memo: dict[int, Any]) -> CPUOffloadingManager:
        """An independent manager in the same state (the model checker snapshots states
        with it): every array copied, the named views bound to the copies."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        for name in _ARRAYS:
            setattr(new, name, getattr(self, name).copy())
        new._events = list(self._events)
        new._bind_views()
        new._bind_io()
        memo[id(self)] = new
        return new

    def restore_state(self, snapshot: CPUOffloadingManager) -> None:
        """Put this manager back in the state of ``snapshot``, a copy of it (``copy.deepcopy``)
        made earlier: its arrays copied over in place, so nothing is allocated and the named
        views stay bound (the model checker returns to a state so after each call it judges:
        cheaper than a copy). Raises ``ValueError``, changing nothing, for another kind of
        manager (type, capacity, policy or ghost count)."""
        if type(snapshot) is not type(self) or (snapshot.num_blocks, snapshot.policy, snapshot._ghosts) != (
                self.num_blocks, self.policy, self._ghosts):
            raise ValueError("restore_state takes a copy of this manager (same type, capacity and policy), "
                             f"not {type(snapshot).__name__}")
        for name in _STATE_ARRAYS:
            mine, theirs = getattr(self, name), getattr(snapshot, name)
            if mine.shape == theirs.shape:
                np.copyto(mine, theirs)
            else:  # key rows widened on one side (a long hash): the snapshot's rows, copied
                setattr(self, name, theirs.copy())
                self._bind_io()  # a new array: eviction's prefetches read ``_objects`` where ``io`` says
        self._events = list(snapshot._events)

    def same_state(self, snapshot: CPUOffloadingManager) -> bool:
        """Whether this manager's state arrays equal ``snapshot``'s byte for byte (a copy made
        earlier, as ``restore_state`` takes): then no call since changed anything (the model
        checker forgets such a call without keying its state)."""
        return all(getattr(self, name).tobytes() == getattr(snapshot, name).tobytes() for name in _STATE_ARRAYS)

    @property
    def _state(self) -> tuple[npt.NDArray[Any], ...]:
        """Every array of compiled state (tests compare them before and after a call)."""
        return (self._table, self._keys, self._a64, self._a32, self._a8, self._pf)

    # -- batches ----------------------------------------------------------------------
    def _grow_batch(self, n: int, words: int = 0) -> None:
        batch = max(n, self._batch)
        if n > self._batch:
            batch = max(n, 2 * self._batch)
        words = max(words, self._q.shape[1])
        if batch != self._batch or words != self._q.shape[1]:
            self._batch = batch
            self._q = np.zeros((batch, words), np.uint64)
            self._io = np.zeros(L.io_size(batch), np.int64)
            self._bind_io()

    def _bind_io(self) -> None:
        """Views of ``io``'s result arrays, made once per ``io`` rather than per call, and
        the address of ``_objects`` for eviction's prefetches (``layout.INFO_OBJECTS``)."""
        self._out_a, self._out_b, self._out_c = (self._out(k) for k in (L.IO_OUT_A, L.IO_OUT_B, L.IO_OUT_C))
        self._io[L.INFO_OBJECTS] = self._objects.ctypes.data

    def _out(self, k: int) -> I64:
        """Per-hash array ``k`` of ``io`` (``layout.IO_LENS``, ``IO_OUT_A`` …) of the last call."""
        start = L.IO_INFO + k * self._batch
        return self._io[start : start + self._batch]

    def _run(self, name: str, block_hashes: Iterable[bytes]) -> tuple[list[BlockHash], int]:
        """M0, M9: read the argument once, run entry point ``name`` on it; ``(hashes, result)``."""
        if type(block_hashes) is list:
            hashes: list[Any] = block_hashes
        elif isinstance(block_hashes, _NOT_BYTES):
            return read_hashes(block_hashes), 0  # raises the contract's TypeError
        else:
            try:
                iterator = iter(block_hashes)
            except TypeError:
                return read_hashes(block_hashes), 0  # raises
            hashes = list(iterator)
        n = len(hashes)
        if n == 0:
            return hashes, 0
        if n > self._batch:
            self._grow_batch(n)
        op = _READY.get(name)
        if op is not None and self.direct:  # compiled: it reads the list itself
            result: int = op(self._table, self._keys, self._a64, self._a32, self._a8, self._pf,
                             id(hashes), n, self._q, self._io)
            if result not in SLOW_PATH:
                return hashes, result
        return self._run_slow(op or runtime.entry(name), name, hashes)

    def _run_slow(
        self, op: Op, name: str, hashes: list[Any], inputs: Inputs = ()
    ) -> tuple[list[BlockHash], int]:
        """Checked in Python, packed by numpy: odd elements, long hashes, no layout, the twin.
        ``inputs``: ``(io array, values)`` pairs handed to the entry point (``_run_inputs``)."""
        hashes = read_hashes(hashes)  # TypeError / ValueError, or subclasses made plain
        n = len(hashes)
        lens = [len(block_hash) for block_hash in hashes]
        words = (max(lens) + 7) // 8
        self._grow_batch(n, words)
        if name == "prepare_store" and words + 1 > self._keys.shape[1]:
            wider = np.zeros((self._keys.shape[0], words + 1), np.uint64)
            wider[:, : self._keys.shape[1]] = self._keys
            self._keys = wider
        lens_out = self._out(L.IO_LENS)
        lens_out[:n] = lens
        pack(hashes, self._q)
        for k, values in inputs:
            self._out(k)[:n] = values
        result = op(self._table, self._keys, self._a64, self._a32, self._a8, self._pf,
                    0, n, self._q, self._io)
        if result in SLOW_PATH:  # pragma: no cover - the batch was made to fit
            raise AssertionError(f"compiled core refused a checked batch ({result})")
        return hashes, result

    # -- M1 ---------------------------------------------------------------------------
    def lookup(self, block_hashes: Iterable[BlockHash]) -> int:
        """M1: length of the longest prefix of present, ready hashes; pure."""
        return self._run("lookup", block_hashes)[1]

    # -- M2, M3 -----------------------------------------------------------------------
    def prepare_load(self, block_hashes: Iterable[BlockHash]) -> CPULoadStoreSpec:
        """M2: pin ready blocks (one ref per occurrence); all or nothing."""
        hashes, result = self._run("prepare_load", block_hashes)
        if result == L.MISS:
            info = self._io
            block_hash = hashes[int(info[0])]
            state = "pending" if info[1] else "absent"
            raise ContractViolation("M2", f"prepare_load of {state} hash {describe_hash(block_hash)}")
        return CPULoadStoreSpec.of_checked(self._out_a[:result].copy())

    def complete_load(self, block_hashes: Iterable[BlockHash]) -> None:
        """M3: release one ref per occurrence; all or nothing."""
        hashes, result = self._run("complete_load", block_hashes)
        if result == L.MISS:
            info = self._io
            block_hash = hashes[int(info[0])]
            if info[1] == 0:
                raise ContractViolation("M3", f"complete_load of absent hash {describe_hash(block_hash)}")
            count = hashes.count(block_hash)
            raise ContractViolation(
                "M3",
                f"complete_load of {describe_hash(block_hash)} x{count}, but only "
                f"{max(int(info[2]), 0)} loads are outstanding",
            )

    # -- M4 ---------------------------------------------------------------------------
    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        """M4, P4: recency hint, last hash first (L2 / A3)."""
        self._run("touch", block_hashes)

    def arc_request_finished(self, block_hashes: Iterable[BlockHash], reused: Flags) -> None:
        """K5 for ARC: a finished request's keys in request order; ``reused[i]`` when the
        request reused key ``i`` (loaded it, or offered it while ready, and had not
        inserted it). Last to first, a reused T1 block moves to T2's most recent end, any
        other present block to its own list's most recent end; ghosts and absent keys are
        left alone. Bad input raises (M9) before anything changes."""
        if self.policy != "arc":
            raise ValueError(f"K5: arc_request_finished is ARC's; this manager's policy is {self.policy!r}")
        self._run_flagged("K5", "arc_finish", block_hashes, reused)

    def arc_store_misses(self, block_hashes: Iterable[BlockHash], reported: Flags | None = None) -> None:
        """K6 for ARC: a store's misses reported as one ``touch`` (A3), last to first, but
        the keys with ``reported[i]`` true (the request reported them before; ``None``:
        none). Only ghosts change (a present key is no miss, an absent non-ghost a no-op
        touch: M4). Bad input raises (M9) before anything changes."""
        if self.policy != "arc":
            raise ValueError(f"K6: arc_store_misses is ARC's; this manager's policy is {self.policy!r}")
        self._run_flagged("K6", "arc_store_misses", block_hashes, reported)

    def _run_flagged(self, clause: str, name: str, block_hashes: Iterable[BlockHash], flags: Flags | None) -> None:
        """Entry point ``name`` with one flag per hash in ``out_a`` (``None``: all false)."""
        hashes: list[Any] = block_hashes if type(block_hashes) is list else read_hashes(block_hashes)
        n = len(hashes)
        marks: Any = flags
        if isinstance(flags, (bytes, bytearray)):  # one byte per flag: copied at C speed
            marks = np.frombuffer(flags, np.uint8)
        elif flags is not None and type(flags) is not list:
            marks = list(flags)
        if marks is not None and len(marks) != n:
            raise ValueError(f"{clause}: {n} hashes but {len(marks)} flags")
        if n:
            self._run_inputs(name, hashes, ((L.IO_OUT_A, 0 if marks is None else marks),))

    def _run_inputs(self, name: str, hashes: list[Any], inputs: Inputs) -> int:
        """Entry point ``name`` on ``hashes`` (a list), with per-hash ``inputs``: ``(io
        array, values)`` pairs (``layout.IO_OUT_A`` …) written after ``io`` is sized."""
        n = len(hashes)
        op = _READY.get(name)
        if op is not None and self.direct:  # compiled: it reads (and checks) the list itself
            if n > self._batch:
                self._grow_batch(n)
            for k, values in inputs:
                self._out(k)[:n] = values
            result: int = op(self._table, self._keys, self._a64, self._a32, self._a8, self._pf,
                             id(hashes), n, self._q, self._io)
            if result not in SLOW_PATH:
                return result
        return self._run_slow(op or runtime.entry(name), name, hashes, inputs)[1]

    # -- N9 ---------------------------------------------------------------------------
    def rank_number(self) -> int:
        """N9: a fresh number from the core's counter (a request's, drawn at its first access)."""
        self._meta[L.CLOCK] += 1
        return int(self._meta[L.CLOCK])

    def rerank(self, block_hashes: list[BlockHash], number: int, positions: Sequence[int], raised: int = 0) -> int:
        """N9 (``lru_order="request-rank"``): present hash ``i`` takes rank
        ``(number, -positions[i])``: the first ``raised`` only if that raises their rank
        (observed by the request), the others unconditionally (inserted by it); absent
        hashes and ghosts are left alone. Positions are integers in ``[0, 2**31 - 1]``.
        The count re-ranked; bad input raises ``ValueError`` before anything changes."""
        n = len(block_hashes)
        if self.lru_order != "request-rank":
            raise ValueError(f"N9: rerank needs lru_order='request-rank', not {self.lru_order!r}")
        if len(positions) != n or not 0 <= raised <= n:
            raise ValueError(f"N9: {n} hashes, {len(positions)} positions, {raised} raised")
        if not n:
            return 0
        try:
            values = np.asarray(positions, np.int64)
        except (OverflowError, TypeError, ValueError):
            values = np.full(n, -1, np.int64)  # refused below, naming the position
        modes: Any = (L.RANK_SET if not raised else L.RANK_RAISE if raised == n  # one for all: no array
                      else np.repeat(_RANK_MODES, (raised, n - raised)))
        hashes: list[Any] = block_hashes if type(block_hashes) is list else read_hashes(block_hashes)
        result = self._run_inputs("rerank", hashes, ((L.IO_OUT_A, modes), (L.IO_OUT_B, values), (L.IO_OUT_C, number)))
        if result == L.POSITION_BAD:
            i = int(self._io[0])
            raise ValueError(f"N9: position {positions[i]!r} of {describe_hash(hashes[i])} is not an integer "
                             f"in [0, {L.MAX_POSITION}]")
        return result

    def rerank_blocks(self, block_ids: Sequence[int] | npt.NDArray[np.int64], number: int,
                      positions: Sequence[int]) -> int:
        """N9: ``rerank`` of the blocks a store just inserted, by block id (``prepare_store``'s
        ``store_spec.block_ids``, in its order), without finding each hash again: block
        ``block_ids[i]`` takes rank ``(number, -positions[i])``; one no longer present is left
        alone. Ids in ``[0, num_blocks)``, positions integers in ``[0, 2**31 - 1]``; bad input
        raises ``ValueError`` before anything changes. The count re-ranked."""
        n = len(block_ids)
        if self.lru_order != "request-rank":
            raise ValueError(f"N9: rerank_blocks needs lru_order='request-rank', not {self.lru_order!r}")
        if len(positions) != n:
            raise ValueError(f"N9: {n} block ids, {len(positions)} positions")
        if not n:
            return 0
        if n > self._batch:
            self._grow_batch(n)
        try:
            self._out_a[:n] = block_ids
            self._out_b[:n] = positions
        except (OverflowError, TypeError, ValueError) as error:
            raise ValueError(f"N9: block ids and positions must be integers ({error})") from None
        self._out_c[0] = number
        op = _READY.get("rerank_blocks") or runtime.entry("rerank_blocks")
        result: int = op(self._table, self._keys, self._a64, self._a32, self._a8, self._pf, 0, n, self._q, self._io)
        if result == L.BLOCK_BAD:
            i = int(self._io[0])
            raise ValueError(f"N9: block id {int(block_ids[i])} is not a block of this manager "
                             f"(ids are in [0, {self.num_blocks - 1}])")
        if result == L.POSITION_BAD:
            i = int(self._io[0])
            raise ValueError(f"N9: position {positions[i]!r} of block {int(block_ids[i])} is not an integer "
                             f"in [0, {L.MAX_POSITION}]")
        return result

    # -- M5 ---------------------------------------------------------------------------
    def prepare_store(self, block_hashes: Iterable[BlockHash]) -> PrepareStoreOutput | None:
        """M5: pending blocks for the absent hashes, evicting atomically, or ``None``."""
        hashes, result = self._run("prepare_store", block_hashes)
        if result <= 0:  # REFUSED (M5.4), or nothing to store (M5.2)
            if result == L.REFUSED:
                return None
            return PrepareStoreOutput([], CPULoadStoreSpec.of_checked(np.empty(0, np.int64)), [])
        victim_count = self._io.item(0)
        evicted: list[BlockHash] = self._objects[self._out_c[:victim_count]].tolist() if victim_count else []
        to_store = _pick(hashes, self._out_a, result)
        new_ids = self._out_b[:result].copy()
        # fromiter: numpy's list-to-object-array conversion is ~10 ns per element slower
        self._objects[new_ids] = np.fromiter(to_store, object, result) if result > 1 else to_store[0]
        if self.enable_events and evicted:
            self._queue_event(evicted, removed=True)
        return PrepareStoreOutput(to_store, CPULoadStoreSpec.of_checked(new_ids), evicted)

    # -- M6, M7 -----------------------------------------------------------------------
    def complete_store(self, block_hashes: Iterable[BlockHash], success: bool = True) -> None:
        """M6: pending → ready (one stored event). M7: drop pending blocks, no event."""
        self.complete_store_counted(block_hashes, success)

    def complete_store_counted(
        self, block_hashes: Iterable[BlockHash], success: bool = True
    ) -> tuple[list[BlockHash], int]:
        """``complete_store`` (M6, M7) that also says what it read and how many distinct
        pending blocks it completed or dropped: ``(hashes, count)``. A count equal to
        ``len(hashes)`` means every listed hash was pending, each listed once."""
        if not isinstance(success, bool):
            raise TypeError(f"M9: success must be a bool, got {type(success).__name__}")
        if success:
            hashes, count = self._run("store_ok", block_hashes)
            if self.enable_events and count:
                self._queue_event(_pick(hashes, self._out_a, count), removed=False)
        else:
            hashes, count = self._run("store_fail", block_hashes)
        return hashes, count

    # -- M8 ---------------------------------------------------------------------------
    def take_events(self) -> Iterable[OffloadingEvent]:
        """M8: queued events, oldest first; the queue is left empty."""
        events, self._events = self._events, []
        return events

    def _queue_event(self, block_hashes: list[BlockHash], removed: bool) -> None:
        self._events.append(OffloadingEvent(block_hashes, self.block_size, self.medium, removed))

    # -- introspection (tests, benchmarks, the integrator) -----------------------------
    def get_num_free_blocks(self) -> int:
        """Free blocks (B1)."""
        return int(self._meta[NFREE])

    def blocks_in_flight(self) -> tuple[int, int]:
        """(pending, being read): present blocks with ``ref_cnt == -1`` and ``> 0``, for
        the connector's usage gauges (N3). One vectorised pass over the block arrays."""
        blk = self._lst[: self.num_blocks]
        ref = self._ref[(blk == 1) | (blk == 2)]
        return int(np.count_nonzero(ref < 0)), int(np.count_nonzero(ref > 0))

    def blocks(self) -> dict[BlockHash, BlockStatus]:
        """Every present hash and a snapshot of its block (id, ref_cnt)."""
        blk = self._lst[: self.num_blocks]
        live = np.flatnonzero((blk == L.T1) | (blk == L.T2))
        out: dict[BlockHash, BlockStatus] = {}
        for block_id in live.tolist():
            block = BlockStatus(block_id)
            block.ref_cnt = int(self._ref[block_id])
            out[self._objects[block_id]] = block
        return out

    def ghost_lists(self) -> list[list[BlockHash]]:
        """The hashes of each ghost list, oldest first (ARC's B1 and B2, S3-FIFO's G; empty
        for LRU and SIEVE): O(ghosts), each key row read through one byte view of the rows."""
        return self._ghost_lists(self._meta.tolist(), self._keys.data.cast("B"))

    def _ghost_lists(self, meta: list[int], rows: Any) -> list[list[BlockHash]]:
        """``ghost_lists`` from ``meta`` read as a list and ``rows``, the key rows' bytes (C
        order: row nd at nd * width): a byte view, or a copy of them all where the caller
        reads every block anyway (``logical_state``: a slice of bytes is the hash itself)."""
        cap = self.num_blocks
        gnext = self._gnext.tolist()
        width = self._keys.shape[1] * 8
        ghosts: list[list[BlockHash]] = []
        for g in range(L.LIST_COUNT):
            chain, nd = [], meta[ghost_slot(g, GHOST_HEAD)]
            while nd >= 0:  # row_head: the length in the low half, a tag above
                start = nd * width
                length = int.from_bytes(rows[start : start + 8], sys.byteorder) & L.LOW_HALF
                chain.append(bytes(rows[start + 8 : start + 8 + length]))  # (of bytes: that very object)
                nd = gnext[nd - cap]
            ghosts.append(chain)
        return ghosts

    def policy_view(self) -> dict[str, Any]:
        """The policy's state in the contract's terms, for tests: ``lists`` (the hashes of
        each recency list, oldest first: LRU's order, ARC's T1 and T2, S3-FIFO's S and M,
        SIEVE's Q), ``ghosts`` (B1 and B2 / S3-FIFO's G, oldest first), ``marks`` (S3-FIFO's
        counters, SIEVE's bits, by hash) and ``hand`` (SIEVE's, a hash or ``None``)."""
        lists, ghosts, marks, hand, _p, _free = self.logical_state()
        return {"lists": [[h for h, _ref in listed] for listed in lists], "ghosts": [list(g) for g in ghosts],
                "marks": dict(marks), "hand": hand}

    def logical_state(self) -> tuple[Any, ...]:
        """The whole logical state as one hashable tuple: ``(lists, ghosts, marks, hand, p,
        free blocks)``, each recency list oldest first as ``(hash, ref_cnt)`` pairs, each
        ghost list oldest first, ``marks`` as ``(hash, mark)`` pairs in block order. Block
        ids, timestamps and table slots are left out (the model checker keys states by it:
        two managers with equal logical states answer every call alike)."""
        cap = self.num_blocks
        blk, ts, ref = self._lst[:cap].tolist(), self._ts[:cap].tolist(), self._ref[:cap].tolist()
        objects = self._objects
        listed: list[list[tuple[BlockHash, int]]] = [[] for _ in range(L.LIST_COUNT)]
        order: Callable[[int], Any] = ts.__getitem__
        if self.lru_order == "request-rank":  # N9: (number, minor), then the key's bytes
            minor = self._minors().tolist()
            order = lambda i: (ts[i], minor[i], objects[i])  # noqa: E731
        for i in sorted(range(cap), key=order):  # one pass, oldest first, into each list
            if L.T1 <= blk[i] < L.T1 + L.LIST_COUNT:
                listed[blk[i] - L.T1].append((objects[i], ref[i]))
        lists = tuple(map(tuple, listed))
        meta = self._meta.tolist()
        ghosts = tuple(map(tuple, self._ghost_lists(meta, self._keys.tobytes())))
        marks: tuple[tuple[BlockHash, int], ...] = ()
        if L.mark_bytes(meta[L.POLICY], cap):
            mark = self._a8[len(self._a8) - cap :].tolist()
            marks = tuple((objects[i], mark[i]) for i in range(cap) if blk[i] in (L.T1, L.T2))
        hand = meta[L.HAND]
        return lists, ghosts, marks, None if hand < 0 else objects[hand], float(self._pf[0]), meta[NFREE]

    def _minors(self) -> npt.NDArray[np.int32]:
        """N9's rank minors of a ranked manager (``core.order.minors_of``: the a32 arena's last
        ``num_blocks`` words)."""
        return self._a32[len(self._a32) - self.num_blocks :]

    @property
    def arc_target(self) -> float:
        """ARC's adaptive target ``p`` (0.0 for LRU)."""
        return float(self._pf[0])

    def memory_bytes(self) -> dict[str, int]:
        """Bytes held, by what they are for.

        ``state``: the manager's own structures for its ``num_blocks`` blocks (their
        share of the hash table, per-block arrays, heaps, free stack, meta);
        ``ghosts``: ARC's ghost index (the table's share for ghost nodes, the B1/B2 links
        and free list, their table tags, list tags); ``hashes``: the stored hashes themselves (key rows of
        blocks and ghosts, the Python objects of live blocks); ``scratch``: per-batch
        buffers (grow with the largest batch, not with the capacity).
        """
        cap = self.num_blocks
        nodes = int(self._meta[NODES])
        ghosts = nodes - cap
        table = int(self._table.nbytes)
        table_ghosts = table * ghosts // nodes
        ghost_arrays = ghosts * L.GHOST_NODE_BYTES
        arenas = int(self._a64.nbytes + self._a32.nbytes + self._a8.nbytes + self._pf.nbytes)
        return {
            "state": table - table_ghosts + arenas - ghost_arrays,
            "ghosts": table_ghosts + ghost_arrays,
            "hashes": int(self._keys.nbytes + self._objects.nbytes),
            "scratch": int(self._q.nbytes + self._io.nbytes),
        }

    def check_invariants(self) -> None:
        """I1–I4 and the core's own bookkeeping; raises ``ContractViolation``."""
        cap = self.num_blocks
        meta, ref, hpos, free, lst, table = self._meta, self._ref, self._hpos, self._free, self._lst, self._table
        blk = lst[:cap]
        present = (blk == L.T1) | (blk == L.T2)
        nfree = int(meta[NFREE])
        if nfree + int(present.sum()) != cap:
            raise ContractViolation("I1", f"free {nfree} + allocated {int(present.sum())} != {cap}")
        free_ids = free[:nfree]
        if len(set(free_ids.tolist())) != nfree or present[free_ids].any():
            raise ContractViolation("I4", "a free block is also allocated or listed twice")
        if (ref[present] < -1).any():
            raise ContractViolation("I2", "a ref_cnt is below -1")
        idle = present & (ref == 0)
        in_heap = present & (hpos >= 0)
        if (in_heap & ~idle).any() or (idle & (hpos == L.PARKED)).any():
            raise ContractViolation("I3", "an eviction candidate is parked, or a busy block is in a heap")
        if int(meta[HS0] + meta[HS0 + 1]) != int(in_heap.sum()) or int(meta[ELIG]) != int(idle.sum()):
            raise ContractViolation("I3", "heap sizes or the candidate count disagree with the blocks")
        for h in range(L.LIST_COUNT):
            self._check_list(h, present & (blk == L.T1 + h) & (hpos == L.IN_LIST))
        if int(meta[N1]) != int((blk == L.T1).sum()) or int(meta[N1 + 1]) != int((blk == L.T2).sum()):
            raise ContractViolation("I1", "list sizes disagree with the blocks")
        if self.lru_order == "request-rank" and self._minors()[present & (hpos == L.IN_LIST)].any():
            raise ContractViolation("N9", "a block ranked by a request's position is in the recency list")
        ghosts = int(((lst[cap:] == L.B1) | (lst[cap:] == L.B2)).sum())
        if self._ghosts:
            self._check_ghosts()
        if int((table != 0).sum()) != int(present.sum()) + ghosts:
            raise ContractViolation("I8", "the table does not index exactly the present hashes and ghosts")
        self._check_row_tags()

    def _check_row_tags(self) -> None:
        """I8: every indexed node's key row carries the tag of its table entry (``table.row_head``:
        eviction reads a victim's tag there instead of fingerprinting the row again)."""
        entries = self._table[self._table != 0]
        nodes = (entries & np.uint64(L.LOW_HALF)).astype(np.int64) - 1
        half = np.uint64(L.HALF_BITS)
        if not np.array_equal(self._keys[nodes, 0] >> half, entries >> half):
            raise ContractViolation("I8", "a key row's tag differs from its table entry's")

    def _check_list(self, h: int, want: npt.NDArray[np.bool_]) -> None:
        """I3: recency list ``h`` links exactly the blocks ``want``, in increasing stamps."""
        meta, ts, cap = self._meta, self._ts, self.num_blocks
        seen = np.zeros(cap, bool)
        nd, prev, last = int(meta[list_slot(h, LIST_HEAD)]), -1, -1
        while nd >= 0:
            if seen[nd] or not want[nd] or int(self._bprev[nd]) != prev or int(ts[nd]) <= last:
                raise ContractViolation("I3", f"recency list {h} is broken at block {nd}")
            seen[nd] = True
            prev, last, nd = nd, int(ts[nd]), int(self._bnext[nd])
        if int(meta[list_slot(h, LIST_TAIL)]) != prev or not np.array_equal(seen, want):
            raise ContractViolation("I3", f"recency list {h} does not hold exactly its blocks")

    def _check_ghosts(self) -> None:
        """A5, F6, A3: ghost list sizes within their bounds and matching the nodes; p in [0, C]."""
        cap, lst = self.num_blocks, self._lst
        clause = "F6" if self.policy == "s3fifo" else "A5"
        for g in range(L.LIST_COUNT):
            size = int(self._meta[ghost_slot(g, GHOST_SIZE)])
            if size > int(self._meta[L.GBOUND + g]) or size != int((lst[cap:] == L.B1 + g).sum()):
                raise ContractViolation(clause, f"ghost list B{g + 1} has a bad size {size}")
        if not 0.0 <= float(self._pf[0]) <= cap:
            raise ContractViolation("A3", f"p={float(self._pf[0])} outside [0, {cap}]")
