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


_EVERY_ENTRY_POINT = """
import json
from kvoffload.impl import CPUOffloadingManager
from kvoffload.impl.core import ops, runtime
from kvoffload.impl.tiers.checksum import checksum64
manager = CPUOffloadingManager(8, policy="arc")
keys = [bytes([i]) * 32 for i in range(4)]
output = manager.prepare_store(keys)
manager.complete_store(output.block_hashes_to_store)
runtime.wait()  # eager: compiles (or loads) every entry point in this process
checksum64(bytes(24))
stats = {name: getattr(ops, name).stats for name in runtime.NAMES}
print(json.dumps({"answer": manager.lookup(keys), "hits": {n: sum(s.cache_hits.values()) for n, s in stats.items()},
                  "misses": {n: sum(s.cache_misses.values()) for n, s in stats.items()}}))
"""


def _cache_files(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.stat().st_size) for p in root.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_a_second_process_loads_every_compiled_function_and_writes_nothing_to_the_cache(tmp_path: Path) -> None:
    """Issue 12 item 5: the first process fills an empty NUMBA_CACHE_DIR (compiling the
    whole core: tens of seconds of CPU); a second one over it finds every entry point
    there and leaves every cache file as it was (no new entry, nothing re-saved)."""
    from kvoffload.impl.jitcache import cache_tag

    cache = tmp_path / "numba-cache"
    runs = []
    for _ in range(2):
        done = _python(["-c", _EVERY_ENTRY_POINT], tmp_path, NUMBA_CACHE_DIR=str(cache), KVOFFLOAD_COMPILE="eager")
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append((json.loads(done.stdout.strip().splitlines()[-1]), _cache_files(cache)))
    (first, filled), (second, after) = runs
    assert first["answer"] == 4 == second["answer"]
    assert all(first["misses"].values()) and not any(first["hits"].values())  # compiled and saved ...
    assert all(second["hits"].values()) and not any(second["misses"].values())  # ... then loaded
    assert any(name.endswith(".nbi") for name in filled)
    assert after == filled, sorted(set(after.items()) ^ set(filled.items()))
    # Entries sit in this numba build's own directory: another build (vLLM's venv pins
    # an older numba) cannot discard them by rewriting a shared index.
    assert all(Path(name).parent.name == cache_tag() for name in filled)


def test_editing_a_callee_module_moves_the_compile_cache_to_a_new_folder(tmp_path: Path) -> None:
    """numba keys a cache entry on the entry point's own file; a callee edited in another
    module (core/evict.py under ops.prepare_store) must not load the old machine code: the
    cache folder's name carries a digest of every compiled module's source."""
    copy = tmp_path / "site"
    copy.mkdir()
    subprocess.run(["cp", "-r", str(Path(kvoffload.__file__).parent), str(copy / "kvoffload")], check=True)
    probe = "import kvoffload.impl.jitcache as j; assert j.__file__.startswith(%r); print(j.cache_tag())" % str(copy)
    env = {**os.environ, "PYTHONPATH": str(copy)}

    def tag() -> str:
        return subprocess.run([sys.executable, "-c", probe], env=env, cwd=tmp_path, check=True, capture_output=True,
                              text=True).stdout.strip()

    before = tag()
    evict = copy / "kvoffload" / "impl" / "core" / "evict.py"
    evict.write_text(evict.read_text() + "\n# an edit that changes no entry point's own file\n")
    after = tag()
    assert before != after
    assert before.rsplit("-src-", 1)[0] == after.rsplit("-src-", 1)[0]  # same numba build
