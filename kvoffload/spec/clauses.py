"""The clause ids of the shipped contract (``kvoffload/spec/CONTRACT.md``).

The contract is data: the CLI lists its clauses, the tests check that each one is
implemented and tested, and conformance reports cite them.

Where a clause is implemented is declared at the code that implements it, by the
``@implements("B1")`` marker on a class or function. ``kvoffload contract --where`` reads
those markers (from the source, with ``ast``: no module is imported, so vLLM-only code is
mapped too) and nothing else: a clause id that is also the name of something (ARC's ghost
lists B1/B2 and lists T1/T2 beside the backend clauses B1/B2 and the tier clauses T1–T6)
never sends a reader to the wrong code.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import TypeVar

__all__ = ["Clause", "contract_text", "contract_clauses", "clause_sort_key", "implements"]

_Marked = TypeVar("_Marked")

_CLAUSE_LINE = re.compile(r"^(?P<id>[A-Z]\d+) (?P<text>.+)$")


@dataclass(frozen=True, slots=True)
class Clause:
    """One numbered clause: its id (``"M5"``), family heading and first line of text."""

    id: str
    section: str
    summary: str


def contract_text() -> str:
    """The contract as shipped with this package."""
    return resources.files("kvoffload.spec").joinpath("CONTRACT.md").read_text(encoding="utf-8")


def contract_clauses() -> list[Clause]:
    """Every clause of the contract, in document order."""
    clauses: list[Clause] = []
    section = ""
    for line in contract_text().splitlines():
        if line.startswith("#"):
            section = line.lstrip("#").strip()
            continue
        match = _CLAUSE_LINE.match(line)
        if match:
            clauses.append(Clause(match["id"], section, match["text"].strip()))
    return clauses


def clause_sort_key(clause_id: str) -> tuple[str, int]:
    """Sort ``M10`` after ``M9``."""
    head = clause_id.rstrip("0123456789.")
    digits = clause_id[len(head) :].split(".")[0]
    return head, int(digits) if digits else 0


@functools.cache
def _clause_ids() -> frozenset[str]:
    return frozenset(clause.id for clause in contract_clauses())


def implements(*clause_ids: str) -> Callable[[_Marked], _Marked]:
    """Mark the decorated class or function as (part of) where ``clause_ids`` are
    implemented; it is returned unchanged. ``kvoffload contract --where`` lists the marked
    code under each clause. Ids must be string literals (the map is read from the source)
    naming clauses of the contract; anything else raises ``ValueError`` at import."""
    unknown = [c for c in clause_ids if not isinstance(c, str) or c not in _clause_ids()]
    if not clause_ids or unknown:
        raise ValueError(
            f"implements{clause_ids!r}: {'no clause id given' if not clause_ids else f'not clauses of the contract: {unknown!r}'}"
        )

    def mark(target: _Marked) -> _Marked:
        return target

    return mark
