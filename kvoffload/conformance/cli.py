"""``kvoffload conform {manager|backend|policy|tier} MODULE:FACTORY`` (and ``handler``).

Exit status 0: the target conforms; 1: a violation was found (the report names the
clause and prints a reproduction snippet); 2: the factory could not be loaded or built,
or the arguments are wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import click

from .loading import load_factory
from .lockstep.machine_base import TargetSetupError
from .lockstep.vllm.tier_run import check_vllm_tier
from .runner import DEFAULT_BUDGET, POLICY_MODES, run_conformance

__all__ = ["conform"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def conform() -> None:
    """Check a manager, backend, policy or vLLM secondary tier against the contract (lockstep with the model).

    MODULE:FACTORY is imported from the current directory or PYTHONPATH and called with
    keywords: manager f(num_blocks=, enable_events=), backend f(num_blocks=), policy
    f(cache_capacity=), tier f(primary_kv_view=, workdir=, num_blocks=, enable_events=).
    Reference factories: kvoffload.conformance.factories.
    """


#: Every command's options, then the policy options (managers and policies), each applied in turn.
OPTIONS = (
    click.option("--seed", type=int, default=0, show_default=True, help="Random seed; runs are reproducible."),
    click.option("--steps", type=click.IntRange(min=1), default=None, help="Calls per example (default per target)."),
    click.option("--max-examples", type=click.IntRange(min=1), default=None,
                 help="Examples to run (default per target); raise it to fuzz."),
    click.option("--strict", is_flag=True,
                 help="Also make protocol-breaking and badly typed calls (M1-M7, M9, B2, B3, P2, P3)."),
)
#: ``--interface`` of every command that judges a manager or policy (``conform``, ``fuzz``,
#: ``simulate``, ``check-exhaustive``): how it tells a vLLM-interface target (K1).
INTERFACE_OPTION = click.option(
    "--interface", type=click.Choice(["auto", "contract", "vllm"]), default="auto", show_default=True,
    help="vllm: the target is written against vLLM 0.32/0.33's OffloadingManager or CachePolicy "
         "(K1-K9; needs vLLM importable); auto: detected from its signatures, reported.")
POLICY_OPTIONS = (
    INTERFACE_OPTION,
    click.option("--lru-order", type=click.Choice(["auto", "recency", "request-rank"]), default="auto",
                 show_default=True,
                 help="With --policy lru on a vLLM-interface target: recency (L1, vLLM 0.32's order) or "
                      "request-rank (N9, vLLM 0.33's LRUCachePolicy); auto: detected, reported."),
    click.option("--policy", type=click.Choice(list(POLICY_MODES)), default="any", show_default=True,
                 help="lru/arc/s3fifo/sieve: compare victims exactly with the reference policy; "
                      "any: check M5.3/I3/I6/P5 only."),
)


def _options(*options: Callable[[Any], Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``options`` (each applied in turn: listed last first in ``--help``), then the factory argument."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        for option in options:
            command = option(command)
        return click.argument("factory", metavar="MODULE:FACTORY")(command)

    return decorate


def _run(kind: str, factory: str, check: Callable[..., Any] | None = None, **options: Any) -> None:
    """``check`` (default: ``run_conformance`` of ``kind``) with the command's options (named
    as its keywords), and the report."""
    check = check or partial(run_conformance, kind)
    try:
        result = check(load_factory(factory), progress=True, source=factory, **options)
    except TargetSetupError as error:
        click.echo(f"Error: the factory could not build a {kind}: {error}", err=True)
        raise SystemExit(2) from None
    except ValueError as error:  # arguments that do not fit together (run_conformance says which)
        raise click.UsageError(str(error)) from None
    click.echo(result.report())
    raise SystemExit(0 if result.ok else 1)


@conform.command()
@_options(*OPTIONS, *POLICY_OPTIONS)
@click.option("--max-tracker-size", type=click.IntRange(min=1), default=None,
              help="With --store-threshold: passed to the factory too (N2's offer tracker; vLLM's default 64000).")
@click.option("--store-threshold", type=click.IntRange(min=0), default=1, show_default=True,
              help="2 or more: pass store_threshold to a vLLM-interface manager's factory and judge its "
                   "admission (N2); each example draws the threshold from this one to two above it.")
def manager(factory: str, **options: Any) -> None:
    """An OffloadingManager: M0-M10, I1-I8 (and L1-L3 / A1-A6 with --policy lru/arc; K1-K7 for vLLM's interface)."""
    _run("manager", factory, **options)


@conform.command()
@_options(*OPTIONS)
def backend(factory: str, **options: Any) -> None:
    """A Backend: B1-B4."""
    _run("backend", factory, interface="contract", **options)


@conform.command()
@_options(*OPTIONS, *POLICY_OPTIONS)
def policy(factory: str, **options: Any) -> None:
    """A CachePolicy: P1-P6 (and L1-L3 / A1-A6 with --policy lru/arc; K8 for vLLM's interface)."""
    _run("policy", factory, **options)


@conform.command()
@_options(*reversed(OPTIONS[:3]))  # --seed, --steps, --max-examples (a tier has no strict mode)
def tier(factory: str, **options: Any) -> None:
    """A vLLM secondary tier (SecondaryTierManager): T7-T13. FACTORY is called
    f(primary_kv_view=, workdir=, num_blocks=, enable_events=)."""
    _run("tier", factory, check_vllm_tier, **options)


conform.help = (conform.help or "") + "\n\nDefault budgets (examples x steps): " + ", ".join(
    f"{kind} {examples}x{steps}" for kind, (examples, steps) in DEFAULT_BUDGET.items()
)


try:  # ``conform handler``: the copy-handler properties (H1–H3, E1); needs torch
    from .lockstep.handler import handler

    conform.add_command(handler)
except ImportError:  # no torch: `conform handler` is simply not offered
    pass
