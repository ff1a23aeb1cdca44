"""What each open request did, for ARC behind vLLM's interface (K5, K6).

vLLM's ARC decides at a request's end which of its keys were reused (a second use: T1
-> T2) and which it only inserted (K5), and reports a store's misses to the policy only
once per request (K6). Deciding that per key as the calls come (Python set work on every
stored key) cost ARC more than the rest of the adapter; so this log only keeps, per
request, the lists each call saw, and decides at the end, mostly at C speed:

- ``prepare_load``: every key is reused (unless the request inserted it before);
- a store the core accepted: its ``keys_to_store`` are exactly the keys that were absent
  (M5.1), so the other offered keys were ready, hence reused (unless inserted before);
- a refused store (rare): it changed nothing, so its ready keys are read after it.

When the request's keys, in K5's order, are the logged lists one after the other and all
distinct (the usual case: increasing end-token positions), a key is in exactly one list
and the flags come list by list without a set per key. Otherwise ``reused`` and
``inserted`` are replayed call by call (``spec.keyed.RequestAccess``'s rule).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from operator import not_

from ...spec.clauses import implements

__all__ = ["ArcRequests"]

_LOAD, _STORE, _REFUSED = 0, 1, 2


@dataclass
class _Call:
    """One call of a request: ``kind``; ``keys`` it observed (a store: the offered keys
    that were not pending); ``absent``: a store's absent keys (the accepted store's
    ``keys_to_store``), empty for a load."""

    kind: int
    keys: list[bytes]
    absent: Sequence[bytes] = ()


@dataclass
class _Request:
    calls: list[_Call] = field(default_factory=list)
    #: K6: the store misses reported so far, built on the request's second store.
    reported: set[bytes] | None = None
    reported_calls: int = 0  # how many of ``calls`` are in ``reported``


class ArcRequests:
    """Per open request (by id), its calls; ``finish`` turns them into K5's flags."""

    def __init__(self) -> None:
        self._open: dict[str, _Request] = {}

    def clear(self) -> None:
        self._open.clear()

    def _request(self, req_id: str) -> _Request:
        request = self._open.get(req_id)
        if request is None:
            request = self._open[req_id] = _Request()
        return request

    @implements("K5")
    def loaded(self, req_id: str, keys: list[bytes]) -> None:
        self._request(req_id).calls.append(_Call(_LOAD, keys))

    @implements("K5")
    def stored(self, req_id: str, offered: list[bytes], to_store: Sequence[bytes]) -> None:
        """A store the core accepted: ``to_store`` are the offered keys that were absent."""
        self._request(req_id).calls.append(_Call(_STORE, offered, to_store))

    @implements("K5")
    def refused(self, req_id: str, offered: list[bytes], ready: Collection[bytes]) -> None:
        """A refused store (nothing changed): ``ready``, the present keys after it."""
        absent = [k for k in offered if k not in ready]
        self._request(req_id).calls.append(_Call(_REFUSED, offered, absent))

    @implements("K6")
    def reported(self, req_id: str | None, keys: list[bytes]) -> bytes | None:
        """K6: per key of a store about to be made, whether this request reported it as
        a store miss before (``None``: no key was, e.g. the request's first store)."""
        request = self._open.get(req_id) if req_id is not None else None
        if request is None:
            return None
        stores = [c for c in request.calls[request.reported_calls:] if c.kind != _LOAD]
        request.reported_calls = len(request.calls)
        if request.reported is None and not stores:
            return None
        reported = request.reported = request.reported or set()
        for call in stores:
            reported.update(call.absent)
        flags = bytes(map(reported.__contains__, keys))
        return flags if any(flags) else None

    @implements("K5")
    def finish(self, req_id: str | None, keys: list[bytes], in_call_order: bool) -> tuple[list[bytes], bytes]:
        """The request's keys that change at its end (inserted or reused, K5's order) and
        whether each was reused. ``in_call_order``: ``keys`` are the observed lists of
        the request's calls one after the other, all distinct."""
        request = self._open.pop(req_id, None) if req_id is not None else None
        if request is None:
            return [], b""
        calls = request.calls
        if in_call_order and all(c.kind != _REFUSED for c in calls) and sum(len(c.keys) for c in calls) == len(keys):
            return keys, _flags_in_call_order(calls)
        return _replay(calls, keys)


def _flags_in_call_order(calls: list[_Call]) -> bytes:
    """Distinct keys: none was inserted by an earlier call, so a loaded key is reused and
    a stored one is reused exactly when it was not absent. One byte per key (1: reused)."""
    parts: list[bytes] = []
    for call in calls:
        keys, absent = call.keys, call.absent
        if not absent:  # a load, or a store of ready keys only
            parts.append(b"\x01" * len(keys))
        elif len(absent) == len(keys):  # every offered key was absent (distinct keys)
            parts.append(bytes(len(keys)))
        else:
            inserted = set(absent)
            parts.append(bytes(map(not_, map(inserted.__contains__, keys))))
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _replay(calls: list[_Call], keys: list[bytes]) -> tuple[list[bytes], bytes]:
    """K5's rule call by call: a key loaded, or offered while ready, is reused unless the
    request inserted it before; an accepted store inserts its absent keys."""
    inserted: set[bytes] = set()
    reused: set[bytes] = set()
    for call in calls:
        ready = set(call.keys).difference(call.absent) if call.kind != _LOAD else set(call.keys)
        reused.update(ready.difference(inserted))
        if call.kind == _STORE:
            inserted.update(call.absent)
    changed = [k for k in keys if k in reused or k in inserted]
    return changed, bytes(map(reused.__contains__, changed))
