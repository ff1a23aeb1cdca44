"""Adapters: a vLLM-interface manager or ``CachePolicy`` behind the contract's interface.

The lockstep machines drive the contract's batch interface; these views translate each
call into vLLM's (K2): one ``ReqContext`` per call (a request of its own, opened with
``on_new_request`` and never finished unless the machine finishes it, K5), ``list(keys)``
for every batch, ``PrepareStoreOutput(keys_to_store, store_spec, evicted_keys)`` into the
contract's field names, and ``OffloadingEvent(keys, medium, removed)`` into the
contract's event. Metadata-only events (vLLM 0.33's failed stores, K4) are not
announcements: they are kept aside for the K4 check and not passed on. Errors the vLLM
interface documents for calls that break the caller protocol (``AssertionError``,
``KeyError``, ``ValueError``) become ``ContractViolation`` (K3).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from ....spec import ContractViolation
from ....spec.clauses import implements
from ....spec.types import OffloadingEvent, PrepareStoreOutput
from .detect import parameters, require_vllm

__all__ = ["VllmManagerView", "VllmPolicyView", "LOOKUP_ANSWERS", "DOCUMENTED_ERRORS", "through_adapter"]

#: The names of vLLM's ``LookupResult`` members (K1).
LOOKUP_ANSWERS = ("HIT", "HIT_PENDING", "MISS", "RETRY")
#: What vLLM's own managers raise for protocol breaches (plain asserts, dict lookups) (K3).
DOCUMENTED_ERRORS: tuple[type[Exception], ...] = (AssertionError, KeyError, ValueError)

T = TypeVar("T")
#: Clauses of the batch interface whose failure, on a vLLM target, also implicates the
#: translation of K2 (listed after the broken clause).
BATCH_CLAUSES = frozenset({"M0", "M1", "M2", "M3", "M4", "M5", "M6", "M7", "M8"})


def through_adapter(clauses: tuple[str, ...]) -> tuple[str, ...]:
    """``clauses`` of a failure seen through ``VllmManagerView``: K2 added after a batch clause."""
    if clauses and clauses[0] in BATCH_CLAUSES and "K2" not in clauses:
        return (*clauses, "K2")
    return clauses


@implements("K3")
def _documented(method: str, call: Callable[[], T]) -> T:
    """Run ``call``; a documented vLLM error becomes ``ContractViolation`` (K3)."""
    try:
        return call()
    except DOCUMENTED_ERRORS as error:
        raise ContractViolation("K3", f"{method} raised {type(error).__name__}: {error}") from error


@implements("K2")
class VllmManagerView:
    """A vLLM 0.32/0.33 ``OffloadingManager`` driven through the contract's batch calls (K2)."""

    def __init__(self, manager: Any) -> None:
        self.vllm = require_vllm()
        self.manager = manager
        self.requests = 0
        self.pending: set[bytes] = set()
        self.failed_since_take: set[bytes] = set()
        #: K4 breaches seen by ``take_events`` (the machine reports them)
        self.metadata_only_errors: list[str] = []
        self.metadata_only_events: list[list[bytes]] = []
        #: the request that calls without their own context belong to (K5); None: each
        #: call is a request of its own
        self.request: Any = None
        #: the request ``finish_request`` finished last (K5: finishing it again breaks the protocol)
        self.finished: Any = None

    def __deepcopy__(self, memo: dict[int, Any]) -> VllmManagerView:
        """A copy with a copy of the manager (twins' shadow: ``twins.Twins.copies``); vLLM's
        module itself is shared, as modules cannot be copied."""
        memo[id(self.vllm)] = self.vllm
        view = VllmManagerView.__new__(VllmManagerView)
        view.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return view

    def _ctx(self, ctx: Any) -> Any:
        if ctx is not None:
            return ctx
        return self.request if self.request is not None else self.context()

    # -- requests -------------------------------------------------------------------------
    def context(self) -> Any:
        """A new request (K2): ``ReqContext`` announced with ``on_new_request``."""
        self.requests += 1
        ctx = self.vllm.ReqContext(req_id=f"kvoffload-{self.requests}")
        on_new = getattr(self.manager, "on_new_request", None)
        if on_new is not None:
            on_new(ctx)
        return ctx

    @implements("K5")
    def set_positions(self, positions: dict[bytes, int]) -> None:
        """K5: the current request's end-token position of each key (vLLM's scheduler
        records them with ``ReqContext.set_offload_key_position``)."""
        for key, position in positions.items():
            self.request.set_offload_key_position(key, position)

    def finish_request(self) -> None:
        """``on_request_finished`` of the current request (K5); later calls are requests
        of their own again."""
        ctx, self.request = self.request, None
        self.finished = ctx
        finish = getattr(self.manager, "on_request_finished", None)
        if ctx is not None and finish is not None:
            finish(ctx)

    def finish_again(self) -> None:
        """``on_request_finished`` of the request finished last, a second time (breaks
        K5's once-per-request; strict mode only): K3's documented errors are reported
        as ``ContractViolation``."""
        finish = getattr(self.manager, "on_request_finished", None)
        if self.finished is not None and finish is not None:
            _documented("on_request_finished", lambda: finish(self.finished))

    # -- per key --------------------------------------------------------------------------
    def key_lookup(self, key: bytes, ctx: Any = None) -> str:
        """The name of ``lookup(key, ctx)``'s answer (K1); ``TypeError`` if not a LookupResult."""
        answer = self.manager.lookup(key, self.context() if ctx is None else ctx)
        name = getattr(answer, "name", None)
        if name not in LOOKUP_ANSWERS:
            raise TypeError(f"K1: lookup(key, req_context) returned {answer!r}, not a LookupResult "
                            f"({', '.join(LOOKUP_ANSWERS)})")
        return str(name)

    # -- the contract's batch interface (M1–M8) ---------------------------------------------
    def lookup(self, block_hashes: Iterable[bytes], ctx: Any = None) -> int:
        """M1: the leading run of keys that answer HIT, all in one request."""
        ctx = self._ctx(ctx)
        return sum(1 for _ in itertools.takewhile(lambda key: self.key_lookup(key, ctx) == "HIT", block_hashes))

    def _per_request(self, method: str, keys: list[bytes], ctx: Any, *rest: Any) -> Any:
        """vLLM's ``method(keys, ctx, *rest)`` for the request ``ctx`` (K2), its documented
        errors converted (K3)."""
        ctx = self._ctx(ctx)
        return _documented(method, lambda: getattr(self.manager, method)(keys, ctx, *rest))

    def prepare_load(self, block_hashes: Iterable[bytes], ctx: Any = None) -> Any:
        return self._per_request("prepare_load", list(block_hashes), ctx)

    def complete_load(self, block_hashes: Iterable[bytes], ctx: Any = None) -> None:
        self._per_request("complete_load", list(block_hashes), ctx)

    def touch(self, block_hashes: Iterable[bytes], ctx: Any = None) -> None:
        self._per_request("touch", list(block_hashes), ctx)

    def prepare_store(self, block_hashes: Iterable[bytes], ctx: Any = None) -> PrepareStoreOutput | None:
        output = self._per_request("prepare_store", list(block_hashes), ctx)
        if output is None:
            return None
        try:
            to_store = list(output.keys_to_store)
            evicted = list(output.evicted_keys)
            spec = output.store_spec
        except (AttributeError, TypeError) as error:
            raise TypeError(f"K2: prepare_store returned {output!r}, not a PrepareStoreOutput(keys_to_store, "
                            f"store_spec, evicted_keys) or None ({error})") from error
        self.pending.update(to_store)
        self.pending.difference_update(evicted)
        return PrepareStoreOutput(block_hashes_to_store=to_store, store_spec=spec, block_hashes_evicted=evicted)

    def complete_store(self, block_hashes: Iterable[bytes], success: bool = True, ctx: Any = None) -> None:
        keys = list(block_hashes)
        if not success:
            self.failed_since_take.update(k for k in keys if k in self.pending)
        self.pending.difference_update(keys)
        self._per_request("complete_store", keys, ctx, success)

    def take_events(self) -> Iterator[OffloadingEvent]:
        events = list(self.manager.take_events())
        failed, self.failed_since_take = self.failed_since_take, set()
        for event in events:
            keys = list(event.keys)
            medium = getattr(event.medium, "value", event.medium)
            if getattr(event, "metadata_only", False):
                self._check_metadata_only(keys, failed, bool(event.removed))
                continue
            yield OffloadingEvent(block_hashes=keys, block_size=0, medium=str(medium), removed=bool(event.removed))

    @implements("K4")
    def _check_metadata_only(self, keys: list[bytes], failed: set[bytes], removed: bool) -> None:
        """K4: a metadata-only event is a removal listing failed stores only, each once."""
        self.metadata_only_events.append(keys)
        if not removed:
            self.metadata_only_errors.append(f"a metadata-only event with removed=False: {keys!r}")
        stray = [k for k in keys if k not in failed]
        if stray:
            self.metadata_only_errors.append(
                f"a metadata-only event lists {stray!r}, whose store did not fail since the last take_events")
        if len(set(keys)) != len(keys):
            self.metadata_only_errors.append(f"a metadata-only event lists a key twice: {keys!r}")

    def get_stats(self) -> Any:
        """K9: the manager's ``get_stats()``, as a reproduction calls it through this view."""
        return self.manager.get_stats()

    @implements("K7")
    def reset_cache(self) -> None:
        """K7: vLLM's ``reset_cache``; the caller never completes a pre-reset job (fence).
        On 0.33 the scheduler then calls ``on_reset_flushed`` once the workers have
        flushed those jobs, before any new store (N1): the adapter is that caller, with
        no worker job in flight, so it calls it at once; K7's "all capacity is free"
        is judged after it."""
        self.manager.reset_cache()
        flushed = getattr(self.manager, "on_reset_flushed", None)
        if callable(flushed):
            flushed()
        self.pending.clear()
        self.failed_since_take.clear()


@implements("K8")
class VllmPolicyView:
    """A vLLM ``CachePolicy`` driven through the contract's policy calls (K8).

    The contract's caller sets ``ref_cnt`` on the blocks it inserted; vLLM's manager
    instead tells the policy of each transition through ``mark_evictable`` /
    ``mark_non_evictable``. Before every call the view compares each block's ``ref_cnt``
    with the last one it saw and reports the transitions (0 ↔ anything else), as vLLM's
    manager would have."""

    def __init__(self, policy: Any) -> None:
        self.vllm = require_vllm()
        self.policy = policy
        self.seen: dict[bytes, tuple[Any, int]] = {}  # key -> (block, last ref_cnt reported)
        # 0.33's insert takes the request's context after the key and the block
        self.insert_takes_context = len(parameters(policy.insert) or ()) > 2

    def _ctx(self) -> Any:
        return self.vllm.ReqContext(req_id="kvoffload-policy")

    def _sync(self) -> None:
        for key, (block, last) in list(self.seen.items()):
            now = int(block.ref_cnt)
            if now == last:
                continue
            if now == 0:
                getattr(self.policy, "mark_evictable", lambda _k: None)(key)
            elif last == 0:
                getattr(self.policy, "mark_non_evictable", lambda _k: None)(key)
            self.seen[key] = (block, now)

    def get(self, block_hash: bytes) -> Any:
        self._sync()
        return self.policy.get(block_hash)

    def insert(self, block_hash: bytes, block: Any) -> None:
        self._sync()
        context = (self._ctx(),) if self.insert_takes_context else ()  # 0.33 passes the request's
        _documented("insert", lambda: self.policy.insert(block_hash, block, *context))
        self.seen[block_hash] = (block, int(block.ref_cnt))

    def remove(self, block_hash: bytes) -> None:
        self._sync()
        _documented("remove", lambda: self.policy.remove(block_hash))
        self.seen.pop(block_hash, None)

    def touch(self, block_hashes: Iterable[bytes]) -> None:
        self._sync()
        self.policy.touch(list(block_hashes), self._ctx())

    def evict(self, n: int, protected: set[bytes]) -> Any:
        self._sync()
        victims = _documented("evict", lambda: self.policy.evict(n, protected))
        if victims is not None:
            victims = list(victims)
            for key, _block in victims:
                self.seen.pop(key, None)
        return victims
