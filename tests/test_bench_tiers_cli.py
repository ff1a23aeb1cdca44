"""``kvoffload bench tiers`` as a user runs it: a ``--dir`` that does not exist yet is
created (the disk to measure is named by a new folder on it), and the disk rows print
beside their raw reference."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kvoffload.cli import main


def test_bench_tiers_creates_its_directory_and_prints_disk_rows(tmp_path: Path) -> None:
    target = tmp_path / "not" / "yet"
    result = CliRunner().invoke(main, ["bench", "tiers", "--tier", "disk", "--block-kib", "64", "--mib", "1",
                                       "--job-blocks", "2", "--dir", str(target)])
    assert result.exit_code == 0, result.output
    assert target.is_dir() and list(target.iterdir()) == []  # its scratch folder is gone again
    rows = [line for line in result.output.splitlines() if line.startswith("| disk | 64 |")]
    assert [row.split("|")[3].strip() for row in rows] == ["write", "read"], result.output
