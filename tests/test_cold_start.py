"""Cold start (issue 12 item 5): importing the package stays light, and
``kvoffload bench cold-start`` measures first use in fresh processes (no timing asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kvoffload

ROOT = Path(kvoffload.__file__).resolve().parent.parent
HEAVY = ("numba", "llvmlite", "torch", "hypothesis", "vllm", "rich", "click")


def _python(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "KVOFFLOAD_"))}
    environment.update(PYTHONPATH=str(ROOT), **env)
    return subprocess.run([sys.executable, *args], env=environment, cwd=tmp_path,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.parametrize("statement", ["import kvoffload", "from kvoffload.impl import CPUOffloadingManager"])
def test_importing_the_package_loads_no_compiler_torch_or_test_tools(tmp_path: Path, statement: str) -> None:
    done = _python(["-c", f"import sys, json; {statement}; print(json.dumps(sorted(sys.modules)))"], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = {name.split(".")[0] for name in json.loads(done.stdout)}
    assert "kvoffload" in loaded
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


@pytest.mark.slow
def test_cold_start_command_prints_both_first_use_rows_beside_the_floors(tmp_path: Path) -> None:
    """One run of each on a tiny manager: the empty cache compiles every entry point in
    a temporary NUMBA_CACHE_DIR (tens of seconds of CPU), the second process loads them."""
    command = ["-m", "kvoffload", "bench", "cold-start", "--runs", "1", "--capacity", "32", "--keys", "4"]
    done = _python(command, tmp_path, COLUMNS="200")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {line.split("│")[1].strip(): line.split("│")[2:-1] for line in done.stdout.splitlines()
            if line.startswith("│")}
    assert set(rows) == {"python -c pass", 'python -c "import numba"', "first use, empty numba cache",
                         "warm first use (cache filled)"}
    for label in ("first use, empty numba cache", "warm first use (cache filled)"):
        first, cpu, ready, target, met = (cell.strip() for cell in rows[label])
        assert float(first) > 0 and float(cpu) > 0 and float(ready) >= float(first)
        assert target in ("≤ 3 s", "≤ 0.5 s") and met in ("yes", "NO")
    assert "numba imported before the first answer" in done.stdout and "answers checked: ok" in done.stdout
    assert "CPU to the first answer, warm first use (cache filled) (medians): interpreter start-up" in done.stdout
