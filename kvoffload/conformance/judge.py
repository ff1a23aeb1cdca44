"""The verdict pieces every lockstep driver shares (issue 15): which clause a wrong answer
breaks. Used by the hypothesis machines (``manager_machine``, ``policy_machine``) and the
model checker's worlds (``exhaustive_manager``, ``exhaustive_policy``), so the victim-blame
table, the I8 confusability test and the exception kinds are spelled once."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from typing import Any

from ..spec import ContractViolation

#: Events as compared: (hashes, removed).
EventView = tuple[Sequence[bytes], bool]

__all__ = ["EXACT_VICTIM_CLAUSE", "EventView", "confusable", "event_blame", "exception_kind", "replay_events", "victim_blame", "victim_fault"]

#: The clause that fixes the victims exactly, by policy (L3 for LRU, A4 for ARC, F5 for
#: S3-FIFO, V5 for SIEVE).
EXACT_VICTIM_CLAUSE = {"lru": "L3", "arc": "A4", "s3fifo": "F5", "sieve": "V5"}
#: The clauses a wrong victim points at, eviction clause first: the order itself, or the
#: state it depends on (recency, ghosts and target, counters, visited bits) diverged earlier.
WRONG_VICTIM: dict[str, tuple[str, ...]] = {
    "L3": ("L3", "L2"), "A4": ("A4", "A3", "A5"), "F5": ("F5", "F4", "F6"), "V5": ("V5", "V4", "V6"),
}


def confusable(a: bytes, b: bytes) -> bool:
    """I8: two distinct hashes that agree in 8+ leading bytes or where one prefixes the other."""
    return a != b and (a[:8] == b[:8] or a.startswith(b) or b.startswith(a))


def exception_kind(error: BaseException) -> type[BaseException]:
    """The kind of error the contract distinguishes (M9): ContractViolation, TypeError,
    ValueError, or the error's own type."""
    for kind in (ContractViolation, TypeError, ValueError):
        if isinstance(error, kind):
            return kind
    return type(error)


def victim_blame(policy: str, refused: bool = False, ineligible: bool = False) -> tuple[str, ...]:
    """The clauses broken by victims that differ from the exact policy's (P5, L2/L3,
    A3–A5, I6): ``refused`` the target gave none where the model evicts; ``ineligible`` a
    victim was pending, read, protected or absent."""
    exact = EXACT_VICTIM_CLAUSE.get(policy, "P5")
    if refused:
        clauses: tuple[str, ...] = ("I6", exact, "P5")
    else:
        clauses = WRONG_VICTIM.get(exact, (exact,))
    return ("P5", *clauses) if ineligible and not refused else clauses


def event_blame(
    got: Sequence[EventView], expected: Sequence[EventView], ready: Set[bytes], failed: Set[bytes] = frozenset()
) -> tuple[str, ...]:
    """The clauses broken by events that differ from the model's (M5 removed, M6 stored,
    M7 a failed store announced; always M8 and I5), judged at the first difference. A
    stored event naming a hash whose store failed since the last take (``failed``) is
    M7's: the failing call was ``complete_store(success=False)``."""
    if any(not removed and set(hashes) & failed and (hashes, removed) not in expected for hashes, removed in got):
        return ("M7", "M8", "I5")
    index = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
    if index < len(expected):
        clause = "M5" if expected[index][1] else "M6"
    else:
        hashes, removed = got[index]
        clause = "M5" if removed else ("M6" if all(h in ready for h in hashes) else "M7")
    return (clause, "M8", "I5")


def replay_events(replayed: set[bytes], events: Sequence[EventView]) -> None:
    """I5: apply events to the set of hashes a consumer believes ready."""
    for hashes, removed in events:
        if removed:
            replayed.difference_update(hashes)
        else:
            replayed.update(hashes)


#: (clauses, message, the check that holds on a conforming target) of a verdict.
Fault = tuple[tuple[str, ...], str, str]


def victim_fault(
    evicted: Sequence[object],
    before: Mapping[Any, int],
    protected: Set[object],
    need: int,
    name: Callable[[object], str],
    var: str = "r",
) -> Fault | None:
    """M5.3, I3: ``prepare_store``'s victims must be ``need`` distinct present blocks,
    each ready, idle (``before``: ref counts ahead of the call) and outside its input."""
    for victim in evicted:
        label, ref = name(victim), before.get(victim)
        # holds on a fixed target too, also where that one refuses the store
        absent = f"{var} is None or {label} not in {var}.block_hashes_evicted"
        if ref is None:
            present = [h for h in before if isinstance(h, bytes)]
            clauses = ("I8", "M5") if isinstance(victim, bytes) and any(confusable(victim, h) for h in present) \
                else ("M5",)
            return clauses, f"prepare_store evicted {label}, which is not present", absent
        if ref == -1:
            return ("I3",), f"prepare_store evicted {label}, whose store is still in flight (pending)", absent
        if ref > 0:
            return ("I3",), f"prepare_store evicted {label}, which {ref} load(s) in flight are reading", absent
        if victim in protected:
            return ("M5",), f"prepare_store evicted {label}, which is in its own input (M5.3: protected)", absent
    check = f"{var} is None or len({var}.block_hashes_evicted) == {need}"
    if len(set(evicted)) != len(evicted):
        return ("M5",), f"prepare_store evicted a hash twice: {list(evicted)!r}", check
    if len(evicted) != need:
        return ("M5", "I1") if len(evicted) < need else ("M5",), \
            f"prepare_store evicted {len(evicted)} blocks, but M5.3 needs exactly {need}", check
    return None
