"""Mutants equivalent by construction, recognised without running them.

In a module with ``from __future__ import annotations`` (PEP 563) no annotation is ever
evaluated, so a mutant inside one (cosmic-ray rewrites the ``|`` of ``X | None`` into each
other binary operator) cannot change behaviour. vLLM's modules evaluate their annotations
at definition time, so there such mutants are real (they fail at import) and are run.
The report also recognises a removed ``@override`` (a typing marker) as equivalent.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

__all__ = ["ANNOTATION_REASON", "OVERRIDE_REASON", "in_unevaluated_annotation", "removes_override"]

ANNOTATION_REASON = "inside an annotation of a module with `from __future__ import annotations`: never evaluated"

Span = tuple[tuple[int, int], tuple[int, int]]


@cache
def _annotation_spans(path: Path) -> tuple[Span, ...]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    postponed = any(
        isinstance(node, ast.ImportFrom) and node.module == "__future__"
        and any(alias.name == "annotations" for alias in node.names)
        for node in tree.body
    )
    if not postponed:
        return ()
    annotations: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            annotations.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
    return tuple(
        ((a.lineno, a.col_offset), (a.end_lineno or a.lineno, a.end_col_offset or 0)) for a in annotations
    )


def in_unevaluated_annotation(path: Path, start: tuple[int, int]) -> bool:
    """Whether a mutation starting at ``start`` (line, column) lies in a postponed annotation."""
    return any(low <= tuple(start) < high for low, high in _annotation_spans(path))


OVERRIDE_REASON = "`@override` removed: a typing marker (it only sets `__override__`); nothing reads it at run time"


def removes_override(path: Path, operator: str, start: tuple[int, int]) -> bool:
    """Whether the mutant removes a ``@override`` decorator (typing_extensions/typing)."""
    if operator != "core/RemoveDecorator":
        return False
    line = path.read_text(encoding="utf-8").splitlines()[start[0] - 1]
    return line.strip() in ("@override", "@typing.override", "@typing_extensions.override")
