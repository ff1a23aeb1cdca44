"""The ``kvoffload`` command line (also ``python -m kvoffload``).

One click group; each subcommand lives beside the code it drives (``conform`` in
``kvoffload.conformance``, ``bench`` in ``kvoffload.impl``) and is attached here. Those
modules import heavy dependencies (numba, torch) only when their command runs, so
``kvoffload --version`` and ``kvoffload contract`` stay instant.
"""

from __future__ import annotations

import importlib
import os
import re
from importlib import resources

import click

from . import __version__
from .spec.clauses import clause_sort_key, contract_clauses

__all__ = ["main"]


def _spec_locations() -> dict[str, list[str]]:
    """Where each clause id is cited in ``kvoffload/spec/*.py`` (module:line)."""
    cited: dict[str, list[str]] = {}
    # the families the contract has (extensions included), not a fixed list of letters
    families = "".join(sorted({clause.id.rstrip("0123456789") for clause in contract_clauses()}))
    spec_dir = resources.files("kvoffload.spec")
    for entry in sorted(spec_dir.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".py"):
            continue
        for number, line in enumerate(entry.read_text(encoding="utf-8").splitlines(), start=1):
            for clause_id in set(re.findall(rf"\b([{families}]\d+)(?:\.\d+)?\b", line)):
                cited.setdefault(clause_id, []).append(f"{entry.name}:{number}")
    return cited


class LazyGroup(click.Group):
    """A group whose subcommands are imported only when invoked (click's lazy-group pattern)."""

    def __init__(self, *args: object, lazy: dict[str, str] | None = None, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            module_name, attribute = self.lazy[cmd_name].split(":")
            command = getattr(importlib.import_module(module_name), attribute)
            if not isinstance(command, click.Command):
                raise TypeError(f"{self.lazy[cmd_name]} is not a click command")
            return command
        return super().get_command(ctx, cmd_name)


@click.group(
    cls=LazyGroup,
    lazy={
        "conform": "kvoffload.conformance.cli:conform",
        "fuzz": "kvoffload.conformance.fuzz:fuzz",
        "simulate": "kvoffload.conformance.simulation:simulate",
        "simulate-tier": "kvoffload.impl.tiers.faultrun:simulate_tier",
        "check-exhaustive": "kvoffload.conformance.exhaustive:check_exhaustive",
        "replay": "kvoffload.replay.cli:replay",
        "mutation": "kvoffload.mutation.cli:mutation",
    },
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="kvoffload")
def main() -> None:
    """KV-cache offloading for vLLM: reference model, conformance suite, fast core."""


@main.command()
@click.option("--where", is_flag=True, help="Also show where spec/ implements each clause.")
def contract(where: bool) -> None:
    """List the contract's clause ids that the reference model implements."""
    cited = _spec_locations()
    for clause in sorted(contract_clauses(), key=lambda c: clause_sort_key(c.id)):
        mark = "✓" if clause.id in cited else " "
        summary = clause.summary if len(clause.summary) <= 76 else clause.summary[:75] + "…"
        click.echo(f"{mark} {clause.id:<4} {summary}")
        if where and clause.id in cited:
            click.echo(f"       spec/{', spec/'.join(cited[clause.id][:4])}")


@main.group(
    cls=LazyGroup,
    lazy={
        "manager": "kvoffload.impl.bench.manager:command",
        "copy": "kvoffload.impl.bench.copy:command",
        "tiers": "kvoffload.impl.bench.tiers:command",
        "trace": "kvoffload.impl.bench.trace:command",
    },
)
def bench() -> None:
    """Benchmarks: the production code beside the reference model (and vLLM where present)."""
    # Time compiled code only: compile each entry point on its first call, in the caller,
    # not in the background while the plain-Python twin answers (kvoffload.impl.core.runtime).
    os.environ.setdefault("KVOFFLOAD_COMPILE", "eager")
