"""Twins of a vLLM-interface manager (I7, M10): the calls the adapter made on it, replayable.

The contract machine's twins replay the judge's batch calls. A vLLM-interface manager is
driven through ``VllmManagerView``, whose batch calls open requests, carry their contexts
across calls and end them (K5), so a replay of batch calls would not rebuild its state.
Its twins replay the manager's own calls instead: ``RecordingManager`` stands between the
adapter and the example's manager and keeps each call made on it (the sweeps' lookups
and ``on_new_request`` included), each ``ReqContext`` as a ``ContextRef``. A twin maps
every reference to a context of its own (``apply_vllm_call``): a manager keeps request
state in its contexts (``ReqContext.set_state``), so a shared context would let the twins
share state. The end-token positions a request carries (K5) are recorded as a call of
their own, ``set_positions``, when the machine sets them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from ...judge import invoke
from ..twins import Call

__all__ = ["ContextRef", "RecordingManager", "apply_vllm_call", "replaced"]

#: Calls that change nothing a twin's probe sees (M8's events, K9's gauges): not replayed.
UNRECORDED = frozenset({"take_events", "get_stats"})
#: Where a context keeps its ``ContextRef`` (vLLM's ``ReqContext`` is a plain dataclass).
REF_ATTRIBUTE = "_kvoffload_twin_ref"


@attrs.frozen
class ContextRef:
    """A ``ReqContext`` of the example, as a twin's call names it (``number``: its order)."""

    number: int
    req_id: str


class RecordingManager:
    """A vLLM-interface manager whose calls are kept in ``calls`` while ``recording``
    (``apply_vllm_call`` replays them); every other attribute is the manager's own."""

    def __init__(self, manager: Any, context_type: type[Any], recording: bool = True) -> None:
        self.manager, self.context_type, self.recording = manager, context_type, recording
        self.calls: list[Call] = []
        self.contexts = 0  # the contexts numbered so far

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.manager, name)
        if not self.recording or name in UNRECORDED or not callable(value):
            return value

        def recorded(*args: Any, **keywords: Any) -> Any:
            self.calls.append((name, [self.ref(a) for a in args], {k: self.ref(v) for k, v in keywords.items()}))
            return value(*args, **keywords)
        return recorded

    def ref(self, value: Any) -> Any:
        """A context as its ``ContextRef`` (kept on the context: the reference dies with
        it); a collection of keys as a list of its own."""
        if isinstance(value, self.context_type):
            known = getattr(value, REF_ATTRIBUTE, None)
            if known is None:
                self.contexts += 1
                known = ContextRef(self.contexts, value.req_id)
                try:
                    setattr(value, REF_ATTRIBUTE, known)
                except AttributeError:  # a context without a __dict__: no twins for this example
                    self.recording = False
            return known
        return list(value) if isinstance(value, (list, tuple, set, frozenset)) else value

    def positions(self, context: Any, positions: dict[bytes, int]) -> None:
        """K5: the end-token positions the machine set on ``context``."""
        if self.recording:
            self.calls.append(("set_positions", [self.ref(context), dict(positions)], {}))


def apply_vllm_call(view: Any, call: Call, contexts: dict[Any, Any]) -> None:
    """Give a twin (a ``VllmManagerView``) one call ``RecordingManager`` kept, each context
    its own (``contexts``: reference -> the twin's ``ReqContext``); what it raises is its
    own, as the original met it."""
    method, arguments, keywords = call

    def own(value: Any) -> Any:
        if not isinstance(value, ContextRef):
            return value
        if value not in contexts:  # (made once: replays call this for every argument)
            contexts[value] = view.vllm.ReqContext(req_id=value.req_id)
        return contexts[value]

    args = [own(a) for a in arguments]
    if method == "set_positions":
        context, positions = args
        for key, position in positions.items():
            context.set_offload_key_position(key, position)
        return
    invoke(getattr(view.manager, method), *args, **{k: own(v) for k, v in keywords.items()})


def replaced(calls: Iterable[Call], touched: list[bytes]) -> list[Call]:
    """The judged call's raw calls as a twin without it makes them: the requests it opened
    (``on_new_request``) and, for a ``prepare_store``, the touch of the store misses it
    reported (``touched``), which K6 lets even a refused store make; nothing else."""
    kept: list[Call] = []
    for method, arguments, keywords in calls:
        if method == "on_new_request":
            kept.append((method, arguments, keywords))
        elif method == "prepare_store" and touched:
            kept.append(("touch", [list(touched), *arguments[1:]], {}))
    return kept
