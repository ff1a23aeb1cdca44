"""``kvoffload bench trace FILE``: replay a Mooncake-format trace through every manager,
through vLLM's interface and the batch API, beside the plain-Python floor; hit ratio too.

Each request's 512-token hash ids become prefix-chained keys of ``--block-size`` tokens
(``kvoffload.traces``); requests run one after the other in file order, each as vLLM's
connector (0.32 or 0.33) calls the manager (``conventions``). Every cache starts filled to
capacity with unrelated keys (untimed), as in ``bench manager``.
"""

from __future__ import annotations

import time

import click

from ...traces import TraceKeys, read_trace
from .conventions import compare, vllm_calls
from .interface import Comparison, print_comparisons

__all__ = ["command"]

#: The issue's replay size: 187,500 blocks of 16 tokens (3 M tokens of KV cache).
DEFAULT_CAPACITY = 187_500


@click.command(name="trace")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--block-size", default=16, show_default=True, help="Tokens per vLLM block (divides 512).")
@click.option("--capacity", default=DEFAULT_CAPACITY, show_default=True, help="Cache capacity in blocks.")
@click.option("--policies", default="lru,arc", show_default=True)
@click.option("--requests", "limit", default=None, type=int, help="Replay only the first N requests.")
@click.option("--reference/--no-reference", default=False, show_default=True,
              help="Also run the reference model (slow) and check its answers.")
@click.option("--quick", is_flag=True, help="CI size: 40 requests, 10,000 blocks (< 1 min).")
@click.option("--repeat", default=1, show_default=True, type=click.IntRange(1, 99),
              help="Rounds of every pass, in turn; each figure the median of its rounds.")
def command(path: str, block_size: int, capacity: int, policies: str, limit: int | None,
            reference: bool, quick: bool, repeat: int) -> None:
    """Replay a Mooncake JSONL trace: ns per block through vLLM's interface and the batch API."""
    from rich.console import Console

    if quick:
        limit, capacity = min(limit or 40, 40), min(capacity, 10_000)
    console = Console(width=max(Console().width, 200))
    calls = vllm_calls()
    if calls is None:
        console.print("vllm.v1.kv_offload is not importable here: the batch API only (no vLLM interface, "
                      "no vLLM column; install vLLM 0.32 or 0.33 to drive managers as its connector does)")
    started = time.perf_counter()
    make_keys = TraceKeys(block_size)
    requests = [keys for keys in (make_keys.keys(r) for r in read_trace(path, limit)) if keys]
    blocks = sum(len(keys) for keys in requests)
    console.print(f"[dim]{len(requests):,} requests, {blocks:,} blocks of {block_size} tokens "
                  f"({time.perf_counter() - started:.1f} s to read and hash)[/dim]")
    comparisons = []
    for policy in [p.strip() for p in policies.split(",") if p.strip()]:
        runs, differs = compare(requests, capacity, policy, calls, reference, repeat=repeat)
        comparisons.append(Comparison("trace", capacity, policy, runs, differs, blocks))
        console.print(f"[dim]done: {policy}[/dim]")
    print_comparisons(console, f"kvoffload bench trace {path} — ns per block, {len(requests):,} requests, "
                               f"{blocks:,} blocks", comparisons)
