"""I7 and M10 where the model cannot see them: a refused or raising call, and under
``--policy any`` a lookup or a load, must leave the target's hidden order as it was,
judged on twins.

I7 says a call that returns ``None`` or raises leaves every observable as it was, "policy
order and adaptive state" included. With ``--policy any`` the model adopts the target's
victims and knows no order: a CLOCK whose refused eviction clears reference bits on its
way round answers every later call as a conforming CLOCK could, and only a run *without*
the refused call tells the difference. With an exact policy the model holds the order, but
a changed order shows only if a later victim of the same example depends on it. So after
each refused or raising call the machines compare two twins, targets of their own that
were given the example's calls, one without the judged call and one with it, through one
probe (``ManagerProbe``, ``PolicyProbe``: every block made evictable, the absent hashes
touched, then one block evicted at a time, each answer recorded). M10 is judged the same
way under ``--policy any`` after each lookup and load (a CLOCK that sets a reference bit
on a hit): the twin with a load completes it in its probe, the one without has none.

Design. A verdict rests on fresh targets built by the factory and given the history
(``Twins.replayed``): they share nothing with the example's target, which goes on
untouched, and need nothing of the target but its factory and determinism. Replaying the
whole example at every refusal is quadratic, though (four times the run for the production
ARC manager), so a shadow target follows the calls as they come and is deep-copied on
both sides of the judged call (``Twins.copies``); copies that agree settle the check.
Copies that differ are not trusted: replays decide, and must agree with themselves over
``CONFIRMATIONS`` more runs before a difference is reported, so a target that answers one
history two ways (a random policy) is said to be so and left unjudged rather than blamed.
``copy.deepcopy`` of the example's own target instead of a shadow was rejected: probing a
copy that shares state with its original (a buffer, a global) would corrupt the example.
The history is whatever the machine records as the target's calls: the judge's batch
calls for a contract-interface manager, the manager's own per-key calls for one written
against vLLM's interface (``vllm/recorded.py``). The twin without the judged call may
make other calls in its place (``instead``: what the contract lets even a refused call do,
K6's touch of a vLLM store's misses).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ...spec import BlockStatus
from ..judge import Verdict, invoke, listed

__all__ = ["NOT_DETERMINISTIC", "ManagerProbe", "PolicyProbe", "Twins", "apply_manager_call", "apply_policy_call",
           "RULES", "twin_lines", "twin_verdict"]

#: One recorded call: method, arguments, keywords. A manager's are ``ManagerJudge.calls``
#: (the hashes a list); a policy's are the policy machine's own (``apply_policy_call``).
Call = tuple[str, Sequence[Any], dict[str, Any]]
Name = Callable[[object], str]


class Probe(Protocol):
    """The calls that make a target's order observable, run on a twin and rendered."""

    def run(self, target: Any) -> list[Any]: ...
    def source(self, name: Name) -> list[str]: ...
    def call(self, var: str, name: Name) -> str: ...


def _answer(outcome: tuple[Any, BaseException | None], victims: Callable[[Any], list[Any]] | None = None) -> Any:
    """A probe's entry for one call: the type name of what it raised, else ``victims(value)``
    (``None`` when it refused, or has no victims to show)."""
    value, error = outcome
    if error is not None:
        return type(error).__name__
    return None if value is None or victims is None else victims(value)


class Unsettled(Exception):
    """A probe could not make every block evictable: no verdict for twins to give."""


class ManagerProbe:
    """A manager's order: ``loads`` completed, ``pending`` stores completed, each of
    ``absent`` touched alone (a ghost's hit moves ARC's ``p``: A3), then each of ``absent``
    and ``fresh`` stored alone and completed, its victims recorded. Twins that differ in
    work in flight (M10's: a load started on one of them) each complete their own."""

    def __init__(self, loads: Sequence[Sequence[bytes]], pending: Sequence[bytes], absent: Sequence[bytes],
                 fresh: Sequence[bytes], prelude: Sequence[str] = ()) -> None:
        self.loads, self.pending, self.absent = [list(load) for load in loads], list(pending), list(absent)
        self.hashes = [*absent, *fresh]
        self.prelude = list(prelude)  # the reproduction's first lines of ``probe`` (the twins begin so)

    def run(self, target: Any) -> list[Any]:
        """One entry a touch or store: ``None`` or the type name of what it raised; a store's
        victims. ``Unsettled`` if a completion raises: the target's pins or pending blocks
        are not the model's, which lockstep judges (M3, M6), not twins."""
        for load in self.loads:
            if invoke(target.complete_load, load)[1] is not None:
                raise Unsettled(f"complete_load({load!r})")
        if self.pending and invoke(target.complete_store, self.pending)[1] is not None:
            raise Unsettled(f"complete_store({self.pending!r})")
        answers = [_answer(invoke(target.touch, [h])) for h in self.absent]
        for h in self.hashes:
            out = invoke(target.prepare_store, [h])
            answers.append(_answer(out, lambda value: list(value.block_hashes_evicted)))
            if out[0] is not None:  # (a completion that raises is M6's, judged in lockstep)
                invoke(target.complete_store, list(out[0].block_hashes_to_store))
        return answers

    def source(self, name: Name) -> list[str]:
        """``probe(m, loads, pending)`` for the reproduction: the same calls, returning the
        victim lists."""
        lines = ["def probe(m, loads, pending):  # the order: work in flight completed, absent hashes touched, "
                 "then stored alone", *(f"    {line}" for line in self.prelude),
                 "    for load in loads:", "        m.complete_load(load)", "    if pending:", "        m.complete_store(pending)"]
        lines += [f"    for h in ({', '.join(map(name, self.absent))},):", "        m.touch([h])"] if self.absent else []
        return [*lines, "    out = []", f"    for h in ({', '.join(map(name, self.hashes))},):",
                "        r = m.prepare_store([h])", "        out.append(None if r is None else list(r.block_hashes_evicted))",
                "        if r is not None:", "            m.complete_store(list(r.block_hashes_to_store))",
                "    return out"]

    def call(self, var: str, name: Name) -> str:
        loads = "[" + ", ".join(listed(name, load) for load in self.loads) + "]"
        return f"probe({var}, {loads}, {listed(name, self.pending)})"


class PolicyProbe:
    """A policy's order: every present block made ready and idle, each of ``absent``
    touched alone (ghost hits: A3), then ``evict(1, set())`` until every block is out."""

    def __init__(self, present: Sequence[bytes], absent: Sequence[bytes]) -> None:
        self.present, self.absent = list(present), list(absent)

    def run(self, target: Any) -> list[Any]:
        """One entry a call: ``None`` or the type name of what it raised; an eviction's victims."""
        answers: list[Any] = []
        for h in self.present:
            block, error = invoke(target.get, h)
            if error is not None or block is None:  # P1's, judged in lockstep; the probe goes on
                answers.append(type(error).__name__ if error is not None else f"get({h!r}) is None")
                continue
            block.ref_cnt = 0
        answers += [_answer(invoke(target.touch, [h])) for h in self.absent]
        return answers + [_answer(invoke(target.evict, 1, set()), lambda value: [h for h, _ in value])
                          for _ in self.present]

    def source(self, name: Name) -> list[str]:
        """``probe(p)`` for the reproduction: the same calls, returning the victims."""
        lines = ["def probe(p):  # the order: every block ready and idle, absent hashes touched, then evict(1)s"]
        lines += [f"    for h in ({', '.join(map(name, self.present))},):", "        p.get(h).ref_cnt = 0"] \
            if self.present else []
        lines += [f"    for h in ({', '.join(map(name, self.absent))},):", "        p.touch([h])"] if self.absent else []
        return [*lines, f"    victims = [p.evict(1, set()) for _ in range({len(self.present)})]",
                "    return [None if v is None else [h for h, _ in v] for v in victims]"]

    def call(self, var: str, name: Name) -> str:
        return f"probe({var})"


def apply_manager_call(target: Any, call: Call, scratch: dict[Any, Any]) -> None:
    """Give a manager one recorded call (``ManagerJudge.calls``); what it raises is its own,
    as the original met it."""
    method, items, keywords = call
    invoke(getattr(target, method), list(items), **keywords)


def apply_policy_call(target: Any, call: Call, blocks: dict[Any, Any]) -> None:
    """Give a policy one of the policy machine's calls, where ``("ref", (block_id, value))``
    is the machine setting a block's ``ref_cnt`` (making the block the first time) and
    ``insert``'s second argument is a block id; ``blocks``: this target's own blocks."""
    method, arguments, _ = call
    if method == "ref":
        block_id, value = arguments
        blocks.setdefault(block_id, BlockStatus(block_id)).ref_cnt = value
    elif method == "insert":
        h, block_id = arguments
        invoke(target.insert, h, blocks.setdefault(block_id, BlockStatus(block_id)))
    else:
        invoke(getattr(target, method), *arguments)


class Twins:
    """The twins of one example's target, made by ``build`` and given its calls by ``apply``
    (``apply_manager_call``, ``apply_policy_call``): fresh targets replaying a history
    (``replayed``: what a verdict rests on), and a shadow given the calls as they come and
    deep-copied on both sides of a judged call (``copies``: a screen that costs no replay,
    where the target copies; a copy that parts from the replays ends it)."""

    def __init__(self, build: Callable[[], Any], apply: Callable[[Any, Call, dict[Any, Any]], None]) -> None:
        self.build, self.apply = build, apply
        self.shadow: Any = None
        self.scratch: dict[Any, Any] = {}  # the shadow's own objects the calls name (``apply``)
        self.applied = 0  # calls the shadow was given
        self.copying = True

    def replayed(self, calls: Sequence[Call]) -> Any:
        target, scratch = self.build(), dict[Any, Any]()
        for call in calls:
            self.apply(target, call, scratch)
        return target

    def copies(self, calls: Sequence[Call], cut: int, instead: Sequence[Call] = ()) -> tuple[Any, Any] | None:
        """Copies of the shadow given ``calls[:cut]`` and then ``instead``, and given all of
        ``calls``; ``None`` where it does not copy."""
        if not self.copying or cut < self.applied:
            return None
        try:
            self.shadow = self.build() if self.shadow is None else self.shadow
            for call in calls[self.applied:cut]:
                self.apply(self.shadow, call, self.scratch)
            before, scratch = copy.deepcopy((self.shadow, self.scratch))  # (one copy: the target's objects stay its own)
            for call in instead:
                self.apply(before, call, scratch)
            for call in calls[cut:]:
                self.apply(self.shadow, call, self.scratch)
            self.applied = len(calls)
            return before, copy.deepcopy(self.shadow)
        except Exception:  # a target that cannot be copied is judged on replays alone
            self.copying = False
            return None


#: Why a run stops checking twins: the target answered one call sequence two ways (a random
#: policy, say), so a difference between twins says nothing. Kept in ``RunStats.skipped``.
NOT_DETERMINISTIC = "I7 and M10 on the target's order, by twins (the target answers one call sequence two ways)"
#: Replays of each history that must agree before twins that differ are reported.
CONFIRMATIONS = 4


#: What a judged call must not change, by the clause twins judge it under.
RULES = {
    "I7": "which a call that returns None or raises must leave as it was (I7)",
    "M10": "which only touch, stores, evictions and failed stores change (M10: a lookup or a load is not a use)",
}


def twin_verdict(twins: Twins, calls: Sequence[Call], probes: tuple[Probe, Probe], method: str, name: Name,
                 var: str = "m", clause: str = "I7", cut: int | None = None,
                 instead: Sequence[Call] = ()) -> Verdict | str | None:
    """``clause`` (I7: a refused or raising call; M10: a lookup or a load) on the judged
    call, ``calls[cut:]`` (by default the last): a ``Verdict`` when the probes (``probes``:
    of the twin without it, given ``instead`` in its place, and of the one with it) answer
    differently, a note (``str``) when the check could not run (the factory fails, or
    the target answers one history two ways), else ``None``. Copies that agree settle it;
    otherwise fresh replays decide, and a difference is reported only once
    ``CONFIRMATIONS`` more replays of each history agree with the first (a random policy is
    found out rather than reported)."""
    def answers(history: Sequence[Call], probe: Probe, times: int = 1) -> list[list[Any]]:
        return [probe.run(twins.replayed(history)) for _ in range(times)]

    cut = len(calls) - 1 if cut is None else cut
    without, with_it = probes
    history = [*calls[:cut], *instead]
    try:
        pair = twins.copies(calls, cut, instead)
        if pair is not None and without.run(pair[0]) == with_it.run(pair[1]):
            return None
        (before,), (after,) = answers(history, without), answers(calls, with_it)
        if before == after:
            twins.copying = twins.copying and pair is None  # copies that parted where replays agree: unfaithful
            return None
        if any(run != before for run in answers(history, without, CONFIRMATIONS)) or \
                any(run != after for run in answers(calls, with_it, CONFIRMATIONS)):
            return NOT_DETERMINISTIC
    except Unsettled:
        return None
    except Exception as error:  # the factory: its own failures are the setup's to report
        return f"I7 and M10 on the target's order, by twins (building one raised {error!r})"
    index = next(i for i, (a, b) in enumerate(zip(before, after)) if a != b)  # (one probe: equal lengths)
    return Verdict((clause,), f"{method} changed the target's order, {RULES[clause]}: where they first differ, "
                   f"the probe below answers {_shown(after[index], name)} after it, {_shown(before[index], name)} on "
                   "a twin that never made it" + (" (given in its place what the contract lets it change)" if instead
                                                  else ""),
                   f"{with_it.call(var, name)} == {without.call('twin', name)}")


def twin_lines(lines: Sequence[str], mark: int, construct: str, probe: list[str], var: str = "m",
               instead: Sequence[str] = (), export: bool = False) -> list[str]:
    """The reproduction's calls with a twin: the calls before line ``mark`` (the judged
    call's) made on ``var`` and on ``twin``, a second target built as ``construct``, which
    then makes ``instead``; then the rest on ``var``, and ``probe`` (``source``) for the
    failing check. ``export``: the names the earlier lines define are the rest's too."""
    head = [line.replace("\n", "\n    ") for line in lines[:mark]]
    ending = ["    return locals()", f"globals().update(replay({var}))"] if export else [f"replay({var})"]
    made = [f"def replay({var}):  # the example's calls before the judged one", *(f"    {line}" for line in head),
            *ending, f"twin = {construct}", "replay(twin)"] if head else [f"twin = {construct}"]
    return [*made, *instead, *lines[mark:], *probe]


def _shown(answer: Any, name: Name) -> str:
    return listed(name, answer) if isinstance(answer, list) else repr(answer)
