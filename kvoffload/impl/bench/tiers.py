"""``kvoffload bench tiers``: GB/s and latency of the disk and Redis tiers beside raw references.

For each block size, in one run:

- **disk**: ``DiskTier`` stores then loads ``blocks`` blocks in jobs of ``job_blocks``
  (records, checksums, the compiled block table and the thread pool included), from and
  into page-aligned buffers as vLLM's shared-region rows are; the raw
  reference is one large sequential ``O_DIRECT`` write, then read, of the same bytes in
  8 MiB calls on one thread (a file beside the tier's, same file system).
- **redis**: ``RedisTier`` the same way against a private ``redis-server``; the raw
  reference is plain ``SET`` / ``GET`` of the same payloads on the same server, from as
  many threads as the tier's pool.

Raw and tier runs alternate, two or three rounds, and each figure is the best round: on a
shared machine that compares both under the same (least) contention.

Latency: the median time of a one-block job (submit → drain → ``get_finished``) against
one raw ``pwrite``/``preadv`` or ``SET``/``GET`` of one payload.
"""

from __future__ import annotations

import mmap
import os
import secrets
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs
import click

from ..tiers.disk import DiskTier
from .plotting import pyplot
from ..tiers.faultrun import payload_of
from ..tiers.jobs import TierJobResult

__all__ = ["command", "TierFigure"]

_RAW_CHUNK = 8 << 20
_THREADS = 4


@attrs.frozen
class TierFigure:
    tier: str
    block_kib: int
    op: str
    tier_gbs: float
    raw_gbs: float
    tier_ms: float  # one-block job, median
    raw_ms: float  # one raw call of one payload, median


def _gbs(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e9 if seconds > 0 else float("inf")


def _timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def _median_ms(run: Callable[[], object], repeats: int) -> float:
    return statistics.median(_timed(run) for _ in range(repeats)) * 1e3


def _raw_file(path: Path, nbytes: int, size: int) -> tuple[float, float, Callable[[], object], Callable[[], object]]:
    """One sequential O_DIRECT write then read of ``nbytes`` in 8 MiB calls; and one-block calls."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_DIRECT", 0), 0o600)
    os.posix_fallocate(fd, 0, nbytes)
    chunk = mmap.mmap(-1, min(_RAW_CHUNK, nbytes))
    chunk.write(payload_of(b"raw", len(chunk)))

    def write_all() -> None:
        for offset in range(0, nbytes, len(chunk)):
            os.pwrite(fd, chunk, offset)
        os.fsync(fd)

    def read_all() -> None:
        for offset in range(0, nbytes, len(chunk)):
            os.preadv(fd, [chunk], offset)

    write_s, read_s = _timed(write_all), _timed(read_all)
    block = memoryview(chunk)[: min(size, len(chunk))]  # page-aligned: the start of the mmap
    return write_s, read_s, lambda: os.pwrite(fd, block, 0), lambda: os.preadv(fd, [block], 0)


def _jobs(blocks: int, job_blocks: int) -> Iterator[range]:
    for start in range(0, blocks, job_blocks):
        yield range(start, min(start + job_blocks, blocks))


class _Tier:
    """What the bench drives: ``DiskTier`` or ``RedisTier``."""

    def __init__(self, tier: Any) -> None:
        self.tier = tier
        self.next_job = 0

    def run(self, store: bool, hashes: list[bytes], buffers: list[memoryview]) -> list[TierJobResult]:
        self.next_job += 1
        if store:
            self.tier.submit_store(self.next_job, hashes, buffers)
        else:
            self.tier.submit_load(self.next_job, hashes, buffers)
        self.tier.drain()
        results: list[TierJobResult] = self.tier.get_finished()
        if not all(r.success for r in results):
            raise RuntimeError(f"a benchmark job failed: {results}")
        return results


def _drive(tier: _Tier, size: int, blocks: int, job_blocks: int, repeats: int) -> tuple[float, float, float, float]:
    """Seconds to store and to load ``blocks`` blocks, and the median one-block store/load in ms."""
    hashes = [secrets.token_bytes(32) for _ in range(blocks)]
    # Page-aligned buffers, as the rows of vLLM's shared offload region are.
    source = mmap.mmap(-1, size)
    source.write(payload_of(b"tier", size))
    payload = memoryview(source)
    rows = memoryview(mmap.mmap(-1, size * job_blocks))
    rows[:] = bytes(len(rows))  # resident before timing, as vLLM's long-lived region is
    outs = [rows[i * size : (i + 1) * size] for i in range(job_blocks)]

    def store_all() -> None:
        for job in _jobs(blocks, job_blocks):
            tier.run(True, [hashes[i] for i in job], [payload] * len(job))

    def load_all() -> None:
        for job in _jobs(blocks, job_blocks):
            tier.run(False, [hashes[i] for i in job], outs[: len(job)])

    store_s = _timed(store_all)
    load_s = _timed(load_all)
    if bytes(outs[0]) != bytes(payload):
        raise RuntimeError("a benchmark load returned other bytes")
    spare = [secrets.token_bytes(32) for _ in range(repeats)]
    counter = iter(spare)
    one_store = _median_ms(lambda: tier.run(True, [next(counter)], [payload]), repeats)
    one_load = _median_ms(lambda: tier.run(False, [spare[0]], outs[:1]), repeats)
    return store_s, load_s, one_store, one_load


def _disk_figures(directory: Path, size: int, blocks: int, job_blocks: int, repeats: int,
                  rounds: int) -> list[TierFigure]:
    """Raw and tier measured alternately, ``rounds`` times; the best of each (a shared machine)."""
    nbytes = size * blocks
    tier = DiskTier(directory / f"tier-{size}", blocks + repeats, size, io_threads=_THREADS)
    raw: list[tuple[float, float, Callable[[], object], Callable[[], object]]] = []
    runs: list[tuple[float, float, float, float]] = []
    try:
        for _ in range(rounds):
            raw.append(_raw_file(directory / f"raw-{size}", nbytes, size))
            runs.append(_drive(_Tier(tier), size, blocks, job_blocks, repeats))
    finally:
        tier.close()
    kib = size >> 10
    raw_w, raw_r = min(r[0] for r in raw), min(r[1] for r in raw)
    store_s, load_s = min(r[0] for r in runs), min(r[1] for r in runs)
    return [
        TierFigure("disk", kib, "write", _gbs(nbytes, store_s), _gbs(nbytes, raw_w),
                   min(r[2] for r in runs), _median_ms(raw[-1][2], repeats)),
        TierFigure("disk", kib, "read", _gbs(nbytes, load_s), _gbs(nbytes, raw_r),
                   min(r[3] for r in runs), _median_ms(raw[-1][3], repeats)),
    ]


def _redis_figures(url: str, size: int, blocks: int, job_blocks: int, repeats: int,
                   rounds: int) -> list[TierFigure]:
    """Raw and tier measured alternately, ``rounds`` times; the best of each (a shared machine)."""
    import redis

    from ..tiers.redis_tier import RedisBlockTable, RedisTier

    server = redis.Redis.from_url(url)
    digest = secrets.token_bytes(16)
    tier = RedisTier(RedisBlockTable(server, blocks + repeats, digest), size, digest, io_threads=_THREADS)
    payload = payload_of(b"raw", size)
    keys = [f"kvo-raw:{secrets.token_hex(8)}:{i}" for i in range(blocks)]
    raw: list[tuple[float, float]] = []
    runs: list[tuple[float, float, float, float]] = []
    try:
        with ThreadPoolExecutor(_THREADS) as pool:
            for _ in range(rounds):
                raw.append((_timed(lambda: list(pool.map(lambda k: server.set(k, payload), keys))),
                            _timed(lambda: list(pool.map(server.get, keys)))))
                server.delete(*keys)
                runs.append(_drive(_Tier(tier), size, blocks, job_blocks, repeats))
        server.set(keys[0], payload)
        raw_one_w = _median_ms(lambda: server.set(keys[0], payload), repeats)
        raw_one_r = _median_ms(lambda: server.get(keys[0]), repeats)
    finally:
        tier.close()
        server.delete(keys[0])
        stale = server.keys(f"kvo:{digest.hex()}:*")
        if stale:
            server.delete(*stale)
    nbytes, kib = size * blocks, size >> 10
    return [
        TierFigure("redis", kib, "write", _gbs(nbytes, min(r[0] for r in runs)), _gbs(nbytes, min(r[0] for r in raw)),
                   min(r[2] for r in runs), raw_one_w),
        TierFigure("redis", kib, "read", _gbs(nbytes, min(r[1] for r in runs)), _gbs(nbytes, min(r[1] for r in raw)),
                   min(r[3] for r in runs), raw_one_r),
    ]


def _print(figures: list[TierFigure]) -> None:
    click.echo("| tier | block KiB | op | tier GB/s | raw GB/s | tier/raw | 1-block job ms | raw call ms |")
    click.echo("|---|---:|---|---:|---:|---:|---:|---:|")
    for f in figures:
        ratio = f.tier_gbs / f.raw_gbs if f.raw_gbs else float("nan")
        click.echo(f"| {f.tier} | {f.block_kib} | {f.op} | {f.tier_gbs:.2f} | {f.raw_gbs:.2f} | "
                   f"**{ratio:.0%}** | {f.tier_ms:.2f} | {f.raw_ms:.2f} |")


def _plot(figures: list[TierFigure], path: str) -> None:
    plt = pyplot(click.UsageError)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, op in zip(axes, ("write", "read")):
        for tier in sorted({f.tier for f in figures}):
            rows = [f for f in figures if f.tier == tier and f.op == op]
            sizes = [f.block_kib for f in rows]
            ax.plot(sizes, [f.tier_gbs for f in rows], "o-", label=f"{tier} tier")
            ax.plot(sizes, [f.raw_gbs for f in rows], "x--", label=f"{tier} raw")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("block size (KiB)")
        ax.set_ylabel("GB/s")
        ax.set_title(op)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    click.echo(f"plot: {path}")


@click.command(name="tiers")
@click.option("--quick", is_flag=True, help="Two block sizes, 32 MiB each (well under a minute).")
@click.option("--block-kib", "block_kib", type=int, multiple=True, help="Block sizes in KiB.")
@click.option("--mib", type=int, default=256, show_default=True, help="Bytes moved per block size and op.")
@click.option("--job-blocks", type=int, default=16, show_default=True, help="Blocks per job.")
@click.option("--tier", "tiers", type=click.Choice(["disk", "redis"]), multiple=True, help="Default: both.")
@click.option("--dir", "directory", type=click.Path(file_okay=False), default=None,
              help="Where the disk files go (default: a temp dir under the current directory).")
@click.option("--redis-url", default=None, help="A server run with noeviction (default: start one).")
@click.option("--plot", "plot_path", default=None, help="Write a PNG plot here (the plot extra).")
def command(
    quick: bool, block_kib: tuple[int, ...], mib: int, job_blocks: int, tiers: tuple[str, ...],
    directory: str | None, redis_url: str | None, plot_path: str | None,
) -> None:
    """Throughput and latency per block size for each tier, beside raw references."""
    sizes = [k << 10 for k in block_kib] or ([256 << 10, 2048 << 10] if quick else
                                             [64 << 10, 256 << 10, 1024 << 10, 2048 << 10, 8192 << 10])
    total = (32 if quick else mib) << 20
    repeats = 5 if quick else 20
    rounds = 2 if quick else 3
    chosen = tiers or ("disk", "redis")
    _warm_up()
    figures: list[TierFigure] = []
    if directory is not None:
        Path(directory).mkdir(parents=True, exist_ok=True)  # a new folder on the disk to measure
    with tempfile.TemporaryDirectory(prefix="kvoffload-bench-", dir=directory or ".") as scratch:
        if "disk" in chosen:
            for size in sizes:
                figures += _disk_figures(Path(scratch), size, max(total // size, job_blocks), job_blocks, repeats,
                                         rounds)
        if "redis" in chosen:
            figures += _redis_section(redis_url, Path(scratch), sizes, total, job_blocks, repeats, rounds)
    _print(figures)
    if plot_path:
        _plot(figures, plot_path)


def _warm_up() -> None:
    """Compile the block table's entry points (numba) before anything is timed."""
    with tempfile.TemporaryDirectory(prefix="kvoffload-warm-", dir=".") as scratch:
        tier = DiskTier(Path(scratch) / "warm", 4, 4096)
        _drive(_Tier(tier), 4096, 4, 2, 2)
        tier.close()


def _redis_section(url: str | None, scratch: Path, sizes: list[int], total: int, job_blocks: int,
                   repeats: int, rounds: int) -> list[TierFigure]:
    from ..tiers.redis_server import RedisProcess

    server = None
    if url is None:
        try:
            server = RedisProcess(scratch)
        except (FileNotFoundError, ImportError) as missing:
            click.echo(f"redis: skipped ({missing})")
            return []
        url = server.url
    try:
        return [f for size in sizes for f in _redis_figures(url, size, max(total // size, job_blocks), job_blocks, repeats, rounds)]
    finally:
        if server is not None:
            server.stop()
