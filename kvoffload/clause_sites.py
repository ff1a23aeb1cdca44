"""Where each clause of the contract is implemented: the ``@implements(...)`` markers.

``kvoffload contract --where`` prints this map. It is read from the package's source with
``ast`` (nothing is imported: the vLLM-only modules are mapped without vLLM) and from the
markers only, never from clause ids mentioned in prose, so a name shared by a clause and
by something else (ARC's lists T1, T2, B1, B2; the tier clauses T1–T6 and the backend
clauses B1, B2) cannot send a reader to the wrong code.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import attrs

from .spec.clauses import clause_sort_key, contract_clauses

__all__ = ["MarkerError", "Site", "marker_sites", "clause_sites"]

PACKAGE_DIR = Path(__file__).resolve().parent


class MarkerError(ValueError):
    """An ``implements`` marker the map cannot read exactly, or that names no clause."""


@attrs.frozen(order=True)
class Site:
    """One marked class or function: ``path`` relative to the package's parent directory
    (``kvoffload/spec/backend.py``), the line of its ``def``/``class``, its qualified name."""

    path: str
    line: int
    qualname: str
    clauses: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.path}:{self.line} {self.qualname}"


def _marker_ids(decorator: ast.expr, where: str) -> tuple[str, ...] | None:
    """The clause ids of an ``implements(...)`` decorator, ``None`` for any other one."""
    if not isinstance(decorator, ast.Call):
        return None
    func = decorator.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    if name != "implements":
        return None
    ids = [arg.value for arg in decorator.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
    if decorator.keywords or len(ids) != len(decorator.args) or not ids:
        raise MarkerError(f"{where}: implements(...) takes clause ids as string literals only")
    return tuple(ids)


def _walk(body: list[ast.stmt], prefix: str, where: str) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    for node in body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        qualname = f"{prefix}{node.name}"
        for decorator in node.decorator_list:
            ids = _marker_ids(decorator, f"{where}:{decorator.lineno}")
            if ids is not None:
                yield node.lineno, qualname, ids
        yield from _walk(node.body, f"{qualname}.", where)


def marker_sites(package_dir: Path = PACKAGE_DIR) -> list[Site]:
    """Every marked class or function of the package, in path and line order; raises
    ``MarkerError`` for a marker naming a clause the contract does not have."""
    known = {clause.id for clause in contract_clauses()}
    sites: list[Site] = []
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir.parent).as_posix()
        source = path.read_text(encoding="utf-8")
        if "implements" not in source:
            continue
        for line, qualname, ids in _walk(ast.parse(source, filename=relative).body, "", relative):
            unknown = [clause_id for clause_id in ids if clause_id not in known]
            if unknown:
                raise MarkerError(f"{relative}:{line} {qualname}: implements names no clause {unknown}")
            sites.append(Site(relative, line, qualname, ids))
    return sites


def clause_sites(package_dir: Path = PACKAGE_DIR) -> dict[str, list[Site]]:
    """Clause id → the sites marked as implementing it, the reference model's (``spec/``)
    first; clauses with no site are absent."""
    by_clause: dict[str, list[Site]] = {}
    for site in marker_sites(package_dir):
        for clause_id in site.clauses:
            by_clause.setdefault(clause_id, []).append(site)
    for sites in by_clause.values():  # the reference model first, then the rest of the package
        sites.sort(key=lambda site: (not site.path.startswith("kvoffload/spec/"), site.path, site.line))
    return dict(sorted(by_clause.items(), key=lambda item: clause_sort_key(item[0])))
