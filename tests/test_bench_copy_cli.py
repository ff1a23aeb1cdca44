"""``kvoffload bench copy`` as a user runs it on the CPU: one row per copy path and
direction of each configuration, every figure a GB/s beside its ceiling."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kvoffload.cli import main

pytest.importorskip("torch")


def test_bench_copy_prints_every_cpu_path_both_ways() -> None:
    result = CliRunner().invoke(main, ["bench", "copy", "--block-tokens", "16", "--layers", "2", "--batch", "4",
                                       "--repeats", "1"], terminal_width=200)
    assert result.exit_code == 0, result.output
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in result.output.splitlines()
            if line.startswith("│")]
    assert sorted((row[3], row[5]) for row in rows) == sorted(
        (direction, path) for direction in ("store", "load")
        for path in ("per_block", "gather", "runs", "index", "direct", "torch-staging"))
    for row in rows:
        assert row[:3] == ["2L×8×128", "16", "4"], row
        assert row[4] == "0.5", row  # MiB/job: 2 layers x K,V x 4 blocks x 16 tokens x 8 heads x 128 x 2 B
        gbps, ceiling, share = float(row[6]), float(row[7]), row[8]
        assert gbps > 0 and ceiling > 0, row
        # the share is computed before rounding: allow the printed figures' rounding
        low = 100 * (gbps - 0.005) / (ceiling + 0.005) - 0.5
        high = 100 * (gbps + 0.005) / max(ceiling - 0.005, 1e-9) + 0.5
        assert low <= float(share.rstrip("%")) <= high, row


def test_bench_copy_named_shape_sizes_the_job() -> None:
    """DeepSeek-V2-Lite: 27 layers of one 576-wide bf16 latent, no K/V split."""
    result = CliRunner().invoke(main, ["bench", "copy", "--shape", "deepseek-v2-lite", "--block-tokens", "16",
                                       "--batch", "2", "--repeats", "1", "--path", "runs"], terminal_width=200)
    assert result.exit_code == 0, result.output
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in result.output.splitlines()
            if line.startswith("│")]
    assert {(row[0], row[3], row[5]) for row in rows} == {
        ("deepseek-v2-lite", d, p) for d in ("store", "load") for p in ("runs", "torch-staging")}
    # 27 layers x 2 blocks x 16 tokens x 576 x 2 B = 0.95 MiB
    assert {row[4] for row in rows} == {f"{27 * 2 * 16 * 576 * 2 / 2**20:.1f}"}


def test_bench_copy_writes_a_png_plot(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "copy.png"
    result = CliRunner().invoke(main, ["bench", "copy", "--block-tokens", "16", "--block-tokens", "32", "--layers",
                                       "1", "--batch", "2", "--repeats", "1", "--path", "runs", "--plot", str(out)],
                                terminal_width=200)
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
