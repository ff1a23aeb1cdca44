"""The one exception type of the contract.

A ``ContractViolation`` is raised when a call breaks a clause of CONTRACT.md that the
callee is able to check (M2, M3, B2, B3, P2, P3, ...). It always names the clause, so a
report, a log line or a test can point the reader at the paragraph that was broken.
Raising it is a promise: nothing was changed by the call (M9, I7).
"""

from __future__ import annotations

__all__ = ["ContractViolation"]


class ContractViolation(Exception):
    """A call broke clause ``clause`` of the contract; the callee changed nothing (M9)."""

    def __init__(self, clause: str, message: str) -> None:
        super().__init__(f"{clause}: {message}")
        self.clause = clause
        self.detail = message
