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
        for path in ("per_block", "gather", "runs", "index", "direct"))
    for row in rows:
        assert row[:3] == ["16", "2", "4"], row
        assert row[4] == "0.5", row  # MiB/job: 2 layers x K,V x 4 blocks x 16 tokens x 8 heads x 128 x 2 B
        assert float(row[6]) >= 0 and float(row[7]) > 0 and float(row[8]) >= 0, row
