"""``kvoffload bench copy``: GB/s of the copy handlers' paths beside a one-copy ceiling.

For each GPU block size (tokens), layer count and batch (GPU blocks per job), and each
copy path the device can run (``kvoffload.impl.copy.paths``), it times one store
(GPU → CPU) and one load (CPU → GPU) job through the real handler —
``transfer_async`` + ``wait`` + ``get_finished`` — and prints its bandwidth next to the
*ceiling*: one large copy of the same number of bytes between contiguous buffers (a
single pinned ``cudaMemcpy`` on CUDA, one ``copy_`` on CPU), and the ratio of the two.
The KV cache is per-layer ``kv_blocks`` (``(2, num_blocks, tokens, heads, head_dim)``),
GPU block ids are a random permutation (what a long-running cache looks like), CPU ids
are consecutive (what the block allocator mostly hands out).
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import click

__all__ = ["command"]


def _median_seconds(run: Callable[[], object], sync: Callable[[], None], repeats: int) -> float:
    run()  # warm-up: allocator, pinned index buffers, kernels
    sync()
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@click.command(name="copy")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True)
@click.option("--quick", is_flag=True, help="A small grid (CPU: well under 30 s).")
@click.option("--block-tokens", "block_tokens", type=int, multiple=True, help="GPU block sizes (tokens).")
@click.option("--layers", type=int, multiple=True, help="Layer counts.")
@click.option("--batch", type=int, multiple=True, help="GPU blocks per job.")
@click.option("--heads", type=int, default=8, show_default=True, help="KV heads.")
@click.option("--head-dim", type=int, default=128, show_default=True)
@click.option(
    "--dtype", type=click.Choice(["bfloat16", "float16", "float32"]), default="bfloat16", show_default=True
)
@click.option("--path", "paths", multiple=True, help="Copy paths to time (default: all the device runs).")
@click.option("--repeats", type=int, default=5, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
def command(
    device: str,
    quick: bool,
    block_tokens: Sequence[int],
    layers: Sequence[int],
    batch: Sequence[int],
    heads: int,
    head_dim: int,
    dtype: str,
    paths: Sequence[str],
    repeats: int,
    seed: int,
) -> None:
    """Store/load GB/s per copy path, beside one large contiguous copy (H4)."""
    import torch
    from rich.console import Console
    from rich.table import Table

    from kvoffload.impl.copy import CopyPath, available_paths

    if device == "cuda" and not torch.cuda.is_available():
        raise click.UsageError("--device cuda: no CUDA device is available")
    dev = torch.device(device)
    if quick:
        repeats = min(repeats, 3)
    tokens_grid = list(block_tokens) or ([16, 64] if quick else [16, 32, 128])
    layers_grid = list(layers) or ([4] if quick else [8, 32])
    batch_grid = list(batch) or ([8, 64] if quick else [16, 128])
    chosen = [CopyPath(p) for p in paths] or available_paths(dev)
    torch_dtype = getattr(torch, dtype)
    gen = torch.Generator().manual_seed(seed)

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    # Wide enough for every column even when stdout is not a terminal.
    console = Console(width=max(Console().width, 110))
    table = Table(title=f"kvoffload bench copy — {device}, {heads}×{head_dim} {dtype}, median of {repeats}")
    for name in ("tokens", "layers", "blocks", "dir", "MiB/job", "path", "GB/s", "ceiling GB/s", "ratio"):
        table.add_column(name, justify="left" if name in ("dir", "path") else "right")
    for tokens, n_layers, n_blocks in itertools.product(tokens_grid, layers_grid, batch_grid):
        kv = {
            f"layer.{i}": torch.empty((2, n_blocks, tokens, heads, head_dim), dtype=torch_dtype, device=dev).random_(
                0, 100
            )
            for i in range(n_layers)
        }
        gpu_ids = torch.randperm(n_blocks, generator=gen).numpy()
        for row in _config_rows(kv, tokens, gpu_ids, chosen, sync, repeats):
            table.add_row(str(tokens), str(n_layers), str(n_blocks), *row)
        del kv
    console.print(table)


def _config_rows(
    kv: dict[str, Any], tokens: int, gpu_ids: Any, chosen: Sequence[Any], sync: Callable[[], None], repeats: int
) -> list[tuple[str, ...]]:
    """One configuration's rows: (dir, MiB/job, path, GB/s, ceiling GB/s, ratio) per path and direction."""
    import torch

    from kvoffload.impl.copy import build_cpu_handlers
    from kvoffload.spec.types import CPULoadStoreSpec, GPULoadStoreSpec

    dev = next(iter(kv.values())).device
    n_blocks = len(gpu_ids)
    cpu_ids = list(range(n_blocks))
    job_bytes = sum(t.numel() * t.element_size() for t in kv.values())
    # The ceiling: one contiguous copy of job_bytes (pinned host side on CUDA).
    host = torch.empty(job_bytes, dtype=torch.uint8, pin_memory=dev.type == "cuda")
    flat = torch.empty(job_bytes, dtype=torch.uint8, device=dev)
    ceiling = {
        "store": _median_seconds(lambda: host.copy_(flat, non_blocking=True), sync, repeats),
        "load": _median_seconds(lambda: flat.copy_(host, non_blocking=True), sync, repeats),
    }
    del host, flat
    rows: list[tuple[str, ...]] = []
    for path in chosen:
        store, load = build_cpu_handlers(kv, "kv_blocks", tokens, 1, n_blocks, path=path)
        jobs = {
            "store": (store, lambda: (GPULoadStoreSpec(gpu_ids), CPULoadStoreSpec(cpu_ids))),
            "load": (load, lambda: (CPULoadStoreSpec(cpu_ids), GPULoadStoreSpec(gpu_ids))),
        }
        for direction, (handler, spec) in jobs.items():
            seconds = _median_seconds(_one_job(handler, spec), sync, repeats)
            gbps, top = job_bytes / seconds / 1e9, job_bytes / ceiling[direction] / 1e9
            rows.append((direction, f"{job_bytes / 2**20:.1f}", path.value, f"{gbps:.2f}", f"{top:.2f}",
                         f"{gbps / top:.2f}"))
    return rows


def _one_job(handler: Any, spec: Callable[[], Any]) -> Callable[[], None]:
    """A closure running one transfer job through the real handler: submit (specs built per
    job, as the connector does), wait, collect."""
    counter = iter(range(1 << 62))

    def run() -> None:
        jid = next(counter)
        handler.transfer_async(jid, spec())
        handler.wait({jid})
        handler.get_finished()

    return run
