"""The mutation report of one target, read from its cosmic-ray session databases."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .classified import CLASSIFIED, EQUIVALENT, KILLED_NOW, UNREACHABLE
from .session import SKIP_EQUIVALENT, SKIP_NOT_SAMPLED, SKIP_OUT_OF_SCOPE, copy_of, sessions_of
from .static import ANNOTATION_REASON, OVERRIDE_REASON, in_unevaluated_annotation, removes_override
from .targets import Target, mutant_key

__all__ = ["FileTally", "Survivor", "render", "tally"]


@dataclass
class Survivor:
    key: str
    diff: str
    verdict: str
    reason: str


@dataclass
class FileTally:
    file: str
    total: int = 0
    out_of_scope: int = 0
    equivalent_static: int = 0
    not_sampled: int = 0
    killed: int = 0
    timeout: int = 0
    crashed: int = 0
    pending: int = 0
    survivors: list[Survivor] = field(default_factory=list)
    first_clauses: Counter[str] = field(default_factory=Counter)

    @property
    def run(self) -> int:
        return self.killed + self.timeout + self.crashed + len(self.survivors)


def _key(target: Target, file: str, mutation: Any) -> str:
    return mutant_key(target.name, file, mutation)


def _classify(target: Target, copy: Path, key: str, mutation: Any) -> tuple[str, str]:
    if target.classified_as:  # the same originals: what a mutant is (not what killed it) carries over
        verdict = CLASSIFIED.get(key.replace(f"{target.name}|", f"{target.classified_as}|", 1))
        if verdict is not None and verdict[0] in (EQUIVALENT, UNREACHABLE):
            return verdict
    if key in CLASSIFIED:
        return CLASSIFIED[key]
    if in_unevaluated_annotation(copy, mutation.start_pos):
        return EQUIVALENT, ANNOTATION_REASON
    if removes_override(copy, mutation.operator_name, mutation.start_pos):
        return EQUIVALENT, OVERRIDE_REASON
    return "unclassified", ""


def _count(tally: FileTally, target: Target, copy: Path, item: Any, result: Any) -> None:
    output = result.output or "" if result is not None else ""
    outcome = str(result.test_outcome.value) if result is not None and result.test_outcome else ""
    if result is None:
        tally.pending += 1
    elif output.startswith(SKIP_OUT_OF_SCOPE):
        tally.out_of_scope += 1
    elif output.startswith(SKIP_EQUIVALENT):
        tally.equivalent_static += 1
    elif output.startswith(SKIP_NOT_SAMPLED):
        tally.not_sampled += 1
    elif outcome == "survived":
        key = _key(target, tally.file, item.mutations[0])
        verdict, reason = _classify(target, copy, key, item.mutations[0])
        tally.survivors.append(Survivor(key, result.diff or "", verdict, reason))
    elif output.startswith("TIMEOUT") or output == "timeout":
        tally.timeout += 1
    elif "VIOLATES" in output:
        tally.killed += 1
        found = re.search(r"VIOLATES ([A-Z]+\d+)", output)
        tally.first_clauses[found.group(1) if found else "?"] += 1
    else:
        tally.crashed += 1


def tally(target: Target, workdir: Path) -> list[FileTally]:
    from cosmic_ray.work_db import WorkDB, use_db

    tallies = []
    for session in sessions_of(target, workdir):
        counts = FileTally(session.file)
        with use_db(str(session.database), WorkDB.Mode.open) as database:
            results = dict(database.results)
            for item in database.work_items:
                counts.total += 1
                _count(counts, target, copy_of(target, workdir, session.file), item, results.get(item.job_id))
        tallies.append(counts)
    return tallies


def bar(tallies: list[FileTally]) -> tuple[int, int, int]:
    """(killed incl. timeouts, load failures and survivors the suite kills since, non-equivalent mutants run outside the
    ``unreachable`` survivors, ``unreachable`` survivors)."""
    verdicts = Counter(s.verdict for t in tallies for s in t.survivors)
    killed = sum(t.killed + t.timeout + t.crashed for t in tallies) + verdicts[KILLED_NOW]
    unreachable = verdicts[UNREACHABLE]
    return killed, sum(t.run for t in tallies) - verdicts[EQUIVALENT] - unreachable, unreachable


def render(target: Target, tallies: list[FileTally], header: str) -> str:
    lines = [header, "", "| file | mutants | out of scope | equivalent, not run | sampled out | run | killed | timeout | fails to load | survived | first clause named (killed) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for t in tallies:
        clauses = ", ".join(f"{c} {n}" for c, n in t.first_clauses.most_common(6))
        lines.append(f"| `{t.file}` | {t.total} | {t.out_of_scope} | {t.equivalent_static} | {t.not_sampled} | {t.run} | {t.killed} | "
                     f"{t.timeout} | {t.crashed} | {len(t.survivors)} | {clauses} |")
    killed, reachable, unreachable = bar(tallies)
    pending = sum(t.pending for t in tallies)
    lines += ["", f"Killed {killed} of {reachable} non-equivalent mutants run: **{killed / max(reachable, 1):.1%}**"
              + (f"; counting the {unreachable} that change only unreachable or metrics-only code as well: "
                 f"{killed} of {reachable + unreachable}, {killed / max(reachable + unreachable, 1):.1%}" if unreachable else "")
              + (f" ({pending} selected mutants not run yet)" if pending else "") + "."]
    survivors = [s for t in tallies for s in t.survivors]
    if survivors:
        lines += ["", "Survivors:", ""]
    for s in survivors:
        lines += [f"- `{s.key}` — **{s.verdict}**" + (f": {s.reason}" if s.reason else ""), "", "  ```diff"]
        lines += [f"  {row}" for row in s.diff.strip().splitlines() if not row.startswith(("---", "+++"))]
        lines += ["  ```", ""]
    return "\n".join(lines)
