"""The ``kvoffload`` command line (also ``python -m kvoffload``).

One click group; each subcommand lives beside the code it drives (``conform`` in
``kvoffload.conformance``, ``bench`` in ``kvoffload.impl``) and is attached here. Those
modules import heavy dependencies (numba, torch) only when their command runs, so
``kvoffload --version`` and ``kvoffload contract`` stay instant.
"""

from __future__ import annotations

import importlib
import os

import click

from . import __version__
from .spec.clauses import clause_sort_key, contract_clauses

__all__ = ["main"]


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
        "fuzz": "kvoffload.conformance.drivers.fuzz:fuzz",
        "simulate": "kvoffload.conformance.drivers.simulation:simulate",
        "simulate-tier": "kvoffload.impl.tiers.faultrun:simulate_tier",
        "check-exhaustive": "kvoffload.conformance.checking.exhaustive:check_exhaustive",
        "replay": "kvoffload.replay.cli:replay",
        "mutation": "kvoffload.mutation.cli:mutation",
    },
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="kvoffload")
def main() -> None:
    """KV-cache offloading for vLLM: reference model, conformance suite, fast core."""


@main.command()
@click.argument("clause_ids", nargs=-1)
@click.option("--where", is_flag=True, help="Also show the code that implements each clause.")
def contract(clause_ids: tuple[str, ...], where: bool) -> None:
    """List the contract's clauses (all, or CLAUSE_IDS); ✓ marks those with code.

    ``--where`` prints, under each clause, every class or function marked
    ``@implements(<clause>)`` (kvoffload/clause_sites.py): path, line, qualified name.
    """
    from .clause_sites import clause_sites

    clauses = sorted(contract_clauses(), key=lambda c: clause_sort_key(c.id))
    unknown = sorted(set(clause_ids) - {clause.id for clause in clauses})
    if unknown:
        raise click.BadParameter(f"not clauses of the contract: {', '.join(unknown)}", param_hint="CLAUSE_IDS")
    sites = clause_sites()
    for clause in clauses:
        if clause_ids and clause.id not in clause_ids:
            continue
        mark = "✓" if clause.id in sites else " "
        summary = clause.summary if len(clause.summary) <= 76 else clause.summary[:75] + "…"
        click.echo(f"{mark} {clause.id:<4} {summary}")
        if where:
            for site in sites.get(clause.id, []):
                click.echo(f"       {site}")


@main.group(
    cls=LazyGroup,
    lazy={
        "manager": "kvoffload.impl.bench.manager:command",
        "cold-start": "kvoffload.impl.bench.coldstart:command",
        "copy": "kvoffload.impl.bench.copy:command",
        "tiers": "kvoffload.impl.bench.tiers:command",
        "trace": "kvoffload.impl.bench.trace:command",
    },
)
@click.pass_context
def bench(ctx: click.Context) -> None:
    """Benchmarks: the production code beside the reference model (and vLLM where present)."""
    # Time compiled code only: compile each entry point on its first call, in the caller,
    # not in the background while the plain-Python twin answers (kvoffload.impl.core.runtime).
    # Only while the command runs: a process that calls it (a test through CliRunner) keeps
    # its own mode afterwards.
    if "KVOFFLOAD_COMPILE" not in os.environ:
        os.environ["KVOFFLOAD_COMPILE"] = "eager"
        ctx.call_on_close(lambda: os.environ.pop("KVOFFLOAD_COMPILE", None))
