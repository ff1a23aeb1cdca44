"""The side-by-side tables of ``kvoffload bench manager`` and ``kvoffload bench trace``:
every manager through vLLM's interface and through the batch API, beside the floor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click

from .conventions import PHASES, Run

__all__ = ["Comparison", "print_comparisons"]

_IF, _BATCH = "vLLM interface", "batch API"
_FLOOR, _OURS, _REF = "floor (OrderedDict LRU)", "kvoffload", "reference"
#: vLLM's own manager: its runs' labels name the release (``VllmCalls.label``, "vLLM 0.33").
_VLLM = "vLLM"


@dataclass
class Comparison:
    """The runs of one workload, capacity and policy."""

    workload: str
    capacity: int
    policy: str
    runs: list[Run]
    differs: list[str]
    blocks: int  # blocks of all requests

    def get(self, label: str, convention: str) -> Run | None:
        """The run of ``label`` (for vLLM's own manager: ``_VLLM``, any release) and ``convention``."""
        return next((r for r in self.runs if r.convention == convention
                     and (r.label == label or (label == _VLLM and r.label.startswith(_VLLM)))), None)


def _ns(run: Run | None) -> str:
    return "—" if run is None else f"{run.per_block():.0f}"


def _ratio(run: Run | None, floor: Run | None) -> str:
    if run is None or floor is None:
        return "—"
    return f"×{run.per_block() / floor.per_block():.2f}"


def _other_hit_ratio(run: Run | None, lead: Run) -> str:
    """vLLM's own hit ratio beside ours where it differs (its ARC, 0.33's request-ranked
    LRU: N9), so that a user switching sees what the other order costs or gains."""
    if run is None or run.hits == lead.hits:
        return ""
    return f" ({run.label}: {run.hit_ratio:.1%})"


def _row(c: Comparison, batch_labels: tuple[str, ...]) -> list[str]:
    row = [c.workload, f"{c.capacity:,}", c.policy]
    for convention, labels in ((_IF, (_OURS, _VLLM)), (_BATCH, batch_labels)):
        base = c.get(_FLOOR, convention)
        row.append(_ns(c.get(_FLOOR, convention)))
        for label in labels:
            run = c.get(label, convention)
            row += [_ns(run), _ratio(run, base)]
    lead = c.get(_OURS, _IF) or c.get(_OURS, _BATCH)
    row.append("—" if lead is None else f"{lead.hit_ratio:.1%}" + _other_hit_ratio(c.get(_VLLM, _IF), lead))
    row.append("yes" if not c.differs else "no: " + ", ".join(c.differs))
    return row


def print_comparisons(console: Any, title: str, comparisons: list[Comparison]) -> None:
    """One row per comparison (ns per request block, ratios to the LRU floor of the same
    convention, ARC rows too), then the phases. Times are CPU times (``conventions.compare``).
    Raises ``ClickException`` if a manager that must agree with kvoffload did not."""
    from rich.table import Table

    table = Table(title=title)
    vllm = next((run.label for c in comparisons if (run := c.get(_VLLM, _IF)) is not None), _VLLM)
    # vLLM 0.19's own manager: its connector called the batch API, so it is driven through that
    old_vllm = next((run.label for c in comparisons if (run := c.get(_VLLM, _BATCH)) is not None), None)
    batch_labels = (_OURS, _VLLM, _REF) if old_vllm else (_OURS, _REF)
    batch_columns = [f"{old_vllm if label == _VLLM else label} (batch)" for label in batch_labels]
    for column in ("workload", "capacity", "policy",
                   "floor (vLLM if.)", "kvoffload (vLLM if.)", "vs floor", f"{vllm} (vLLM if.)", "vs floor",
                   "floor (batch)", *(part for name in batch_columns for part in (name, "vs floor")),
                   "hit ratio", "answers agree"):
        table.add_column(column, justify="right")
    for c in comparisons:
        table.add_row(*_row(c, batch_labels))
    console.print(table)
    phases = Table(title="where the time goes: ns per request block, by phase "
                         "(finish = on_new_request + on_request_finished, or the batch API's touch)")
    for column in ("workload", "capacity", "policy", "manager", "convention", *PHASES, "all"):
        phases.add_column(column, justify="right")
    for c in comparisons:
        for run in c.runs:
            phases.add_row(c.workload, f"{c.capacity:,}", c.policy, run.label, run.convention,
                           *[f"{run.per_block(p):.0f}" for p in PHASES], f"{run.per_block():.0f}{run.spread()}")
    console.print(phases)
    rounds = max((len(run.rounds) for c in comparisons for run in c.runs), default=0)
    if rounds > 1:
        console.print(f"Repeated: every figure is the median of {rounds} rounds (each contender once per round, "
                      "in turn; the reference in the first alone), phase by phase; 'all' gives the least and "
                      "greatest round in brackets.")
    bad = [f"{c.workload} {c.capacity:,} {c.policy}: {d}" for c in comparisons for d in c.differs
           if not d.endswith("(may differ)")]
    if bad:
        raise click.ClickException("answers differ from kvoffload's: " + "; ".join(bad))
    console.print("Answers: every manager marked 'must agree' gave kvoffload's answers on every request "
                  "(hits, keys to store, evicted keys, in order), vLLM's own LRU among them (kvoffload keeps "
                  "the installed vLLM's LRU order: L1 on 0.19 and 0.32, N9 on 0.33); '(may differ)' marks vLLM's own "
                  "ARC, a different algorithm, the LRU floor under ARC, and where kvoffload's answers "
                  "through vLLM's interface follow requests (ARC's K5/K6, 0.33's N9) the floor (L1) and "
                  "the batch API's kvoffload, which have no requests.")
