"""``kvoffload replay TRACE... --capacity ... --policy ...``: hit ratio against cache size.

For each trace: one replay per (policy, capacity) with the compiled simulators
(``simulate.replay_hits``), Belady's MIN at each capacity and the infinite-cache
ceiling; a rich table and, with ``--plot``, a PNG (``plot`` extra).
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .simulate import REPLAY_POLICIES, replay_hits
from .traces import Trace, read_trace

__all__ = ["replay", "Curves", "parse_capacity", "DEFAULT_CAPACITIES"]

#: Without ``--capacity``: these shares of the trace's distinct keys.
DEFAULT_CAPACITIES = ("1%", "2%", "5%", "10%", "15%", "20%", "30%", "40%", "50%", "75%", "100%")


@attrs.frozen
class Curves:
    """Hit ratios of one trace: ``ratios[name][i]`` at ``capacities[i]`` blocks."""

    trace: Trace
    capacities: list[int]
    ratios: dict[str, list[float]]
    ceiling: float


def parse_capacity(text: str, num_keys: int) -> int:
    """``"5859"`` blocks, or ``"12.5%"`` of the trace's distinct keys (at least 1 block)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*%\s*", text)
    if match:
        return max(1, round(float(match[1]) / 100 * num_keys))
    if not text.strip().isdigit() or int(text) <= 0:
        raise click.BadParameter(f"{text!r} is neither a positive number of blocks nor a percentage")
    return int(text)


def replay_curves(trace: Trace, capacities: list[int], policies: list[str], progress: Progress) -> Curves:
    """Every policy and Belady at every capacity, and the ceiling, with a progress bar."""
    names = [*policies, "belady"]
    task = progress.add_task(trace.name, total=len(names) * len(capacities) + 1)
    total = max(trace.num_accesses, 1)
    ratios: dict[str, list[float]] = {}
    for name in names:
        ratios[name] = []
        for capacity in capacities:
            progress.update(task, description=f"{trace.name}: {name} @ {capacity}")
            ratios[name].append(int(replay_hits(trace, capacity, name).sum()) / total)
            progress.advance(task)
    ceiling = int(replay_hits(trace, 1, "infinite").sum()) / total
    progress.advance(task)
    return Curves(trace, capacities, ratios, ceiling)


def curves_table(curves: Curves) -> Table:
    """Rows: capacities; columns: each policy, Belady, and the ceiling (hit ratio, %)."""
    trace = curves.trace
    block_size = trace.block_size
    table = Table(
        title=f"{trace.name}: {trace.num_requests:,} requests, {trace.num_accesses:,} block "
        f"accesses, {trace.num_keys:,} distinct blocks — hit ratio (%) = blocks served from the cache"
    )
    table.add_column("capacity (blocks)", justify="right")
    if block_size is not None:
        table.add_column("tokens", justify="right")
    for name in curves.ratios:
        table.add_column(name, justify="right")
    table.add_column("infinite", justify="right")
    for i, capacity in enumerate(curves.capacities):
        row = [f"{capacity:,}"]
        if block_size is not None:
            row.append(f"{capacity * block_size:,}")
        best = max(curves.ratios[name][i] for name in curves.ratios if name != "belady")
        for name, values in curves.ratios.items():
            cell = f"{100 * values[i]:.2f}"
            row.append(f"[bold]{cell}[/bold]" if name != "belady" and values[i] == best else cell)
        row.append(f"{100 * curves.ceiling:.2f}")
        table.add_row(*row)
    return table


def _plot_path(plot: Path, trace: Trace, several: bool) -> Path:
    return plot.with_name(f"{plot.stem}-{Path(trace.name).stem}{plot.suffix}") if several else plot


@click.command()
@click.argument("traces", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--capacity", "capacities", multiple=True, metavar="BLOCKS|PCT%",
              help="Cache size in blocks, or as a share of the trace's distinct blocks (repeatable). "
              f"Default: {', '.join(DEFAULT_CAPACITIES)}.")
@click.option("--policy", "policies", multiple=True, type=click.Choice(REPLAY_POLICIES),
              help="Policy to replay (repeatable). Default: all four.")
@click.option("--block-size", default=16, show_default=True, type=click.IntRange(min=1),
              help="Tokens per block (Mooncake traces: each 512-token id becomes 512/block-size keys).")
@click.option("--format", "trace_format", type=click.Choice(["auto", "mooncake", "text"]), default="auto",
              show_default=True, help="Mooncake JSONL, plain text (one request per line), or by content.")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also draw the curves into this PNG (needs the 'plot' extra: matplotlib).")
def replay(
    traces: tuple[Path, ...],
    capacities: tuple[str, ...],
    policies: tuple[str, ...],
    block_size: int,
    trace_format: str,
    plot: Path | None,
) -> None:
    """Replay request traces through each policy: hit ratio against cache size, with
    Belady's offline optimum and the infinite-cache ceiling as bounds.

    A hit is a block of the request's longest cached prefix (what vLLM loads instead
    of recomputing); every miss is stored, the request's own blocks protected.
    """
    console = Console()
    chosen = list(policies) or list(REPLAY_POLICIES)
    loaded = []
    for path in traces:
        try:
            loaded.append(read_trace(path, trace_format, block_size))
        except ValueError as error:
            raise click.BadParameter(f"{path}: {error}", param_hint="TRACE") from None
    results: list[Curves] = []
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True) as progress:
        for trace in loaded:
            sizes = sorted({parse_capacity(c, trace.num_keys) for c in capacities or DEFAULT_CAPACITIES})
            results.append(replay_curves(trace, sizes, chosen, progress))
    for curves in results:
        console.print(curves_table(curves))
    if plot is not None:
        _draw_all(console, plot, results)


def _draw_all(console: Console, plot: Path, results: list[Curves]) -> None:
    try:
        from .plot import draw_curves
    except ImportError:
        console.print(escape("no plot: matplotlib is missing (pip install 'kvoffload[plot]')"), style="yellow")
        return
    for curves in results:
        path = _plot_path(plot, curves.trace, len(results) > 1)
        draw_curves(curves, path)
        console.print(f"plot: {path}")
