"""``kvoffload bench copy``: GB/s of the copy handlers' paths beside a ceiling and a floor.

For each model shape, GPU block size (tokens) and batch (GPU blocks per job), and each
copy path the device can run (``kvoffload.impl.copy.paths``), it times one store
(GPU → CPU) and one load (CPU → GPU) job through the real handler —
``transfer_async`` + ``wait`` + ``get_finished``, what vLLM's worker calls — and prints
its bandwidth beside two references measured in the same run:

- the *ceiling*: one large copy of the job's bytes between contiguous buffers (a single
  pinned ``cudaMemcpy`` each way on CUDA, one ``copy_`` on the CPU);
- the *torch baseline* (row ``torch-staging``): the obvious code, per plane an
  ``index_select`` into a staging tensor, one copy across, an ``index_copy_`` into place.

The KV cache is one tensor per layer in the shape's layout. GPU block ids are a random
permutation (a long-running cache), CPU ids consecutive (what the block allocator mostly
hands out). Host buffers are allocated once per configuration and shared by every path.
"""

from __future__ import annotations

import itertools
import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import click

from .plotting import pyplot

__all__ = ["command", "Shape", "SHAPES"]

_ITEMSIZE = {"bfloat16": 2, "float16": 2, "float32": 4}  # the --dtype choices, bytes each


@attrs.frozen
class Shape:
    """A model's KV cache per layer: ``layers`` tensors of ``(…, tokens, heads, head_dim)``."""

    layers: int
    heads: int
    head_dim: int
    dtype: str
    layout: str  # ``kv_blocks`` (K and V apart, FlashAttention) or ``blocks`` (MLA's latent)

    def bytes_per_block(self, tokens: int) -> int:
        """Bytes of one GPU block across every layer: a one-block layer tensor, ``layers`` times."""
        return self.layers * math.prod(self.tensor_shape(1, tokens)) * _ITEMSIZE[self.dtype]

    def tensor_shape(self, blocks: int, tokens: int) -> tuple[int, ...]:
        """One layer's tensor."""
        row = (blocks, tokens, self.heads, self.head_dim)
        return (2, *row) if self.layout == "kv_blocks" else row


#: Named shapes: Llama-3-8B (GQA, FlashAttention's layout) and DeepSeek-V2-Lite (MLA: one
#: 576-wide latent per token and layer, no K/V split).
SHAPES = {
    "llama3-8b": Shape(layers=32, heads=8, head_dim=128, dtype="bfloat16", layout="kv_blocks"),
    "deepseek-v2-lite": Shape(layers=27, heads=1, head_dim=576, dtype="bfloat16", layout="blocks"),
}
BASELINE = "torch-staging"


def _median_seconds(run: Callable[[], object], sync: Callable[[], None], repeats: int) -> float:
    # Warm-up of at least three runs and 50 ms: allocator, pinned index buffers, kernel
    # compilation, and a GPU's clocks, which fall while the host works between
    # configurations (a kernel's copy rate follows the SM clock; a DMA's does not).
    start, runs = time.perf_counter(), 0
    while runs < 3 or time.perf_counter() - start < 0.05:
        run()
        sync()
        runs += 1
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@attrs.frozen
class Row:
    """One printed row: a path's (or the baseline's) bandwidth in one configuration."""

    shape: str
    tokens: int
    blocks: int
    direction: str
    job_bytes: int
    path: str
    gbps: float
    ceiling_gbps: float

    def cells(self) -> tuple[str, ...]:
        return (self.shape, str(self.tokens), str(self.blocks), self.direction,
                f"{self.job_bytes / 2**20:.1f}", self.path, f"{self.gbps:.2f}",
                f"{self.ceiling_gbps:.2f}", f"{100 * self.gbps / self.ceiling_gbps:.0f}%")


@click.command(name="copy")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True)
@click.option("--quick", is_flag=True, help="A small grid (CPU: well under 30 s).")
@click.option("--shape", "shapes", multiple=True, type=click.Choice(sorted(SHAPES)),
              help="Named model shapes (default on CUDA: all; on the CPU: the --layers/--heads one).")
@click.option("--block-tokens", "block_tokens", type=int, multiple=True, help="GPU block sizes (tokens).")
@click.option("--layers", type=int, multiple=True, help="Layer counts of the custom shape.")
@click.option("--batch", type=int, multiple=True, help="GPU blocks per job.")
@click.option("--heads", type=int, default=8, show_default=True, help="KV heads of the custom shape.")
@click.option("--head-dim", type=int, default=128, show_default=True)
@click.option(
    "--dtype", type=click.Choice(sorted(_ITEMSIZE)), default="bfloat16", show_default=True
)
@click.option("--path", "paths", multiple=True, help="Copy paths to time (default: all the device runs).")
@click.option("--repeats", type=int, default=5, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--max-job-mib", type=int, default=2048, show_default=True,
              help="Skip configurations whose job is larger (host memory is pinned twice over).")
@click.option("--plot", type=click.Path(dir_okay=False), default=None,
              help="Also write a PNG plot of GB/s against block size (needs matplotlib).")
def command(device: str, quick: bool, shapes: Sequence[str], block_tokens: Sequence[int],
            layers: Sequence[int], batch: Sequence[int], heads: int, head_dim: int, dtype: str,
            paths: Sequence[str], repeats: int, seed: int, max_job_mib: int, plot: str | None) -> None:
    """Store/load GB/s per copy path, beside one large copy and the obvious torch code (H4)."""
    import torch
    from rich.console import Console
    from rich.table import Table

    from kvoffload.impl.copy import CopyPath, available_paths

    if device == "cuda" and not torch.cuda.is_available():
        raise click.UsageError("--device cuda: no CUDA device is available")
    if plot:  # fail before the run, not after it
        pyplot()
    dev = torch.device(device)
    cuda = dev.type == "cuda"
    if quick:
        repeats = min(repeats, 3)
    named = _shapes(shapes, cuda, layers, quick, heads, head_dim, dtype)
    tokens_grid = list(block_tokens) or ([16, 64] if quick else [16, 32, 64, 128, 256] if cuda else [16, 32, 128])
    batch_grid = list(batch) or ([8, 64] if quick else [8, 64, 256] if cuda else [16, 128])
    chosen = [CopyPath(p) for p in paths] or available_paths(dev)
    gen = torch.Generator().manual_seed(seed)
    rows: list[Row] = []
    for (name, shape), tokens, n_blocks in itertools.product(named.items(), tokens_grid, batch_grid):
        if shape.bytes_per_block(tokens) * n_blocks > max_job_mib * 2**20:
            continue
        gpu_ids = torch.randperm(n_blocks, generator=gen).numpy()
        rows.extend(_config_rows(name, shape, tokens, gpu_ids, chosen, dev, repeats))
    # Wide enough for every column even when stdout is not a terminal.
    console = Console(width=max(Console().width, 120))
    title = f"kvoffload bench copy — {_device_name(dev)}, median of {repeats}"
    table = Table(title=title)
    for col in ("shape", "tokens", "blocks", "dir", "MiB/job", "path", "GB/s", "ceiling GB/s", "of ceiling"):
        table.add_column(col, justify="left" if col in ("shape", "dir", "path") else "right")
    for row in rows:
        table.add_row(*row.cells())
    console.print(table)
    if plot:
        _plot(rows, plot, title)
        console.print(f"plot written to {plot}")


def _device_name(dev: Any) -> str:
    import torch

    return torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"


def _shapes(names: Sequence[str], cuda: bool, layers: Sequence[int], quick: bool, heads: int,
            head_dim: int, dtype: str) -> dict[str, Shape]:
    """The shapes to run: named ones, else (on CUDA) all named ones, else custom ones."""
    if names:
        return {n: SHAPES[n] for n in names}
    if cuda and not layers:
        return dict(SHAPES)
    counts = list(layers) or ([4] if quick else [8, 32])
    return {f"{n}L×{heads}×{head_dim}": Shape(n, heads, head_dim, dtype, "kv_blocks") for n in counts}


def _config_rows(name: str, shape: Shape, tokens: int, gpu_ids: Any, chosen: Sequence[Any], dev: Any,
                 repeats: int) -> list[Row]:
    """One configuration's rows: every path, then the baseline, each direction."""
    import torch

    from kvoffload.impl.copy import CpuGpuHandler, KVBuffers
    from kvoffload.spec.types import CPULoadStoreSpec, GPULoadStoreSpec

    n_blocks = len(gpu_ids)
    kv = {f"layer.{i}": torch.randint(-100, 100, shape.tensor_shape(n_blocks, tokens), device=dev).to(
        getattr(torch, shape.dtype)) for i in range(shape.layers)}
    buffers = KVBuffers.build(kv, shape.layout, tokens, 1, n_blocks)
    job_bytes = buffers.bytes_per_gpu_block * n_blocks
    sync = _sync(dev)
    ceiling = _ceiling(job_bytes, dev, sync, repeats)
    cpu_ids = list(range(n_blocks))
    specs = {
        "store": lambda: (GPULoadStoreSpec(gpu_ids), CPULoadStoreSpec(cpu_ids)),
        "load": lambda: (CPULoadStoreSpec(cpu_ids), GPULoadStoreSpec(gpu_ids)),
    }

    def row(direction: str, path: str, seconds: float) -> Row:
        return Row(name, tokens, n_blocks, direction, job_bytes, path, job_bytes / seconds / 1e9,
                   job_bytes / ceiling[direction] / 1e9)

    rows = []
    for path in chosen:
        for direction, spec in specs.items():
            handler = CpuGpuHandler(buffers, direction, path)
            rows.append(row(direction, path.value, _median_seconds(_one_job(handler, spec), sync, repeats)))
    for direction in specs:
        run = _baseline(buffers, direction, gpu_ids, cpu_ids)
        rows.append(row(direction, BASELINE, _median_seconds(run, sync, repeats)))
    return rows


def _sync(dev: Any) -> Callable[[], None]:
    import torch

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    return sync


def _ceiling(job_bytes: int, dev: Any, sync: Callable[[], None], repeats: int) -> dict[str, float]:
    """Seconds of one contiguous copy of ``job_bytes`` each way (pinned host side on CUDA)."""
    import torch

    host = torch.empty(job_bytes, dtype=torch.uint8, pin_memory=dev.type == "cuda")
    flat = torch.empty(job_bytes, dtype=torch.uint8, device=dev)
    return {
        "store": _median_seconds(lambda: host.copy_(flat, non_blocking=True), sync, repeats),
        "load": _median_seconds(lambda: flat.copy_(host, non_blocking=True), sync, repeats),
    }


def _baseline(buffers: Any, direction: str, gpu_ids: Any, cpu_ids: Sequence[int]) -> Callable[[], None]:
    """The obvious torch code for one job: per plane, ``index_select`` into a staging
    tensor, one copy to the other side, ``index_copy_`` into place."""
    import torch

    dev_index = torch.as_tensor(gpu_ids, device=buffers.device)
    host_index = torch.as_tensor(cpu_ids)
    pairs = list(zip(buffers.device_planes, buffers.host_planes))

    def store() -> None:
        for dev, host in pairs:
            host.index_copy_(0, host_index, dev.index_select(0, dev_index).cpu())

    def load() -> None:
        for dev, host in pairs:
            dev.index_copy_(0, dev_index, host.index_select(0, host_index).to(dev.device))

    return store if direction == "store" else load


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


def _plot(rows: Sequence[Row], path: str, title: str) -> None:
    """GB/s against block size: one panel per (shape, batch, direction), one line per path,
    the ceiling dashed."""
    plt = pyplot()
    grid = sorted({(r.shape, r.blocks) for r in rows})
    fig, axes = plt.subplots(len(grid), 2, figsize=(9, 3.4 * len(grid)), squeeze=False)
    cells = [(ax, *key, d) for ax_row, key in zip(axes, grid) for ax, d in zip(ax_row, ("store", "load"))]
    for ax, shape, blocks, direction in cells:
        mine = [r for r in rows if (r.shape, r.blocks, r.direction) == (shape, blocks, direction)]
        for name in dict.fromkeys(r.path for r in mine):
            line = sorted((r.tokens, r.gbps) for r in mine if r.path == name)
            ax.plot(*zip(*line), marker="o", label=name)
        top = sorted({(r.tokens, r.ceiling_gbps) for r in mine})
        ax.plot(*zip(*top), "k--", label="ceiling")
        ax.set_xscale("log", base=2)
        ax.set_title(f"{shape}, {blocks} blocks/job, {direction}", fontsize=9)
        ax.set_xlabel("tokens per GPU block")
        ax.set_ylabel("GB/s")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.98))  # room for the title
    fig.savefig(path, dpi=110)
    plt.close(fig)
