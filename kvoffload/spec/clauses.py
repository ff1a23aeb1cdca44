"""The clause ids of the shipped contract (``kvoffload/spec/CONTRACT.md``).

The contract is data: the CLI lists its clauses, the tests check that each one is
implemented in ``spec/`` and tested, and conformance reports cite them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

__all__ = ["Clause", "contract_text", "contract_clauses", "clause_sort_key"]

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
