"""Survivors judged by hand: is the mutant equivalent to the original, and why.

Keyed by ``target|file|line:column|operator`` (cosmic-ray's position of the mutation in
the original file, which the scratch copy keeps). Verdicts:

- ``equivalent``: no caller can tell the mutant from the original (the reason says why);
- ``not equivalent``: a real behaviour change the suite missed (a gap, counted against the bar);
- ``unreachable``: a behaviour change only in code the factory convention never runs
  (counted against the bar too, and listed apart so the reader sees why it survived).
"""

from __future__ import annotations

__all__ = ["CLASSIFIED", "EQUIVALENT", "NOT_EQUIVALENT", "UNREACHABLE"]

EQUIVALENT = "equivalent"
NOT_EQUIVALENT = "not equivalent"
UNREACHABLE = "unreachable"

CLASSIFIED: dict[str, tuple[str, str]] = {}
