"""``kvoffload bench cold-start``: how long a new process waits for its first answer.

Each figure is taken in a fresh Python subprocess, from just before it is spawned (so
interpreter start-up counts) to a mark the child prints (``time.monotonic`` is one clock
for every process of the machine):

- ``python -c pass`` and ``python -c "import numba"``: the floors;
- first use with an empty numba cache (``NUMBA_CACHE_DIR`` a new temporary directory):
  ``import kvoffload.impl``, a ``CPUOffloadingManager``, then ``lookup``, ``prepare_store``
  and ``complete_store`` of a few keys answered (issue 12 item 5: ≤ 3 s);
- warm first use: the same in a second process over the cache the first one filled
  (≤ 0.5 s).

Children run with ``KVOFFLOAD_COMPILE=background`` (what users get, whatever the ``bench``
group set for itself), so the first answers come from the plain-Python twin while the
compiled entry points are built or loaded; each child then waits for them and reports
when the compiled path was ready too. Children inherit this environment otherwise: where
``PYTHONDONTWRITEBYTECODE`` is set, every child compiles kvoffload's Python sources anew
(tens of ms) unless ``--bytecode`` is given; the table's caption says which, and the
machine's load average, since wall times on a shared machine grow with it (the CPU column
much less). With ``--bytecode`` the children write ``__pycache__`` as Python normally does.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import click

__all__ = ["TARGETS", "ColdStart", "command", "load_average", "measure", "print_figures"]

#: Issue 12 item 5: seconds to the first answer (empty numba cache; filled cache).
TARGETS = {"cold": 3.0, "warm": 0.5}

_MARK = "import time; print(time.monotonic(), time.process_time())"

_FIRST_USE = """
import json, sys, time
split = [time.process_time()]
import numpy  # kvoffload's first heavy import: timed apart to show where the CPU goes
split.append(time.process_time())
from kvoffload.impl import CPUOffloadingManager
split.append(time.process_time())
manager = CPUOffloadingManager({capacity}, policy={policy!r})
keys = [bytes([i]) * 32 for i in range({keys})]
missed = manager.lookup(keys)
output = manager.prepare_store(keys)
manager.complete_store(output.block_hashes_to_store)
first, first_cpu = time.monotonic(), time.process_time()
numba_at_first = "numba" in sys.modules
from kvoffload.impl.core import runtime
runtime.wait()
ready = time.monotonic()
print(json.dumps({{"first": first, "first_cpu": first_cpu, "split": split, "ready": ready, "numba_at_first": numba_at_first,
        "answers_ok": missed == 0 and manager.lookup(keys) == len(keys)}}))
"""


@dataclass
class ColdStart:
    """Seconds from spawn to each mark, one entry per run."""

    label: str
    target: float | None = None  # seconds to the first answer that issue 12 asks for
    first: list[float] = field(default_factory=list)
    first_cpu: list[float] = field(default_factory=list)
    #: per run, CPU seconds of: interpreter start-up, numpy, kvoffload's imports, first calls
    split: list[list[float]] = field(default_factory=list)
    ready: list[float] = field(default_factory=list)
    numba_at_first: bool = False
    answers_ok: bool = True


def _spawn(code: str, env: dict[str, str]) -> tuple[float, str]:
    """Run ``python -c code``; the spawn time and the child's last line of output."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise click.ClickException(f"the child process failed:\n{done.stderr[-3000:]}")
    return started, done.stdout.strip().splitlines()[-1]


def _baseline(label: str, code: str, runs: int, bytecode: bool) -> ColdStart:
    figures = ColdStart(label)
    for _ in range(runs):
        started, line = _spawn(code, _child_env(bytecode))
        mark, cpu = map(float, line.split())
        figures.first.append(mark - started)
        figures.first_cpu.append(cpu)
    return figures


def _child_env(bytecode: bool, **changes: str) -> dict[str, str]:
    """This environment, with the kvoffload being run first on the children's path
    (and ``PYTHONDONTWRITEBYTECODE`` dropped where ``bytecode``)."""
    import kvoffload

    root = os.path.dirname(os.path.dirname(os.path.abspath(kvoffload.__file__)))
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, PYTHONPATH=path, **changes)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _first_use(figures: ColdStart, env: dict[str, str], code: str) -> None:
    started, line = _spawn(code, env)
    marks = json.loads(line)
    figures.first.append(marks["first"] - started)
    figures.first_cpu.append(marks["first_cpu"])
    start, numpy, imported = marks["split"]
    figures.split.append([start, numpy - start, imported - numpy, marks["first_cpu"] - imported])
    figures.ready.append(marks["ready"] - started)
    figures.numba_at_first |= bool(marks["numba_at_first"])
    figures.answers_ok &= bool(marks["answers_ok"])


def measure(runs: int = 3, cold_runs: int = 1, capacity: int = 1024, policy: str = "lru",
            keys: int = 16, bytecode: bool = False) -> list[ColdStart]:
    """The floors, first use with an empty numba cache (``cold_runs`` times, a new cache
    each) and warm first use (``runs`` times over the cache of the last cold run);
    ``bytecode``: children cache Python bytecode even if this environment says not to."""
    if runs < 1 or cold_runs < 1 or not 1 <= keys <= min(capacity, 256):
        raise click.BadParameter(f"runs={runs}, cold_runs={cold_runs} must be >= 1 and "
                                 f"keys={keys} in [1, min(capacity, 256)]")
    code = _FIRST_USE.format(capacity=capacity, policy=policy, keys=keys)
    rows = [_baseline("python -c pass", _MARK, runs, bytecode),
            _baseline('python -c "import numba"', "import numba; " + _MARK, runs, bytecode)]
    cold = ColdStart("first use, empty numba cache", TARGETS["cold"])
    warm = ColdStart("warm first use (cache filled)", TARGETS["warm"])
    with tempfile.TemporaryDirectory(prefix="kvoffload-cold-") as root:
        for run in range(cold_runs):
            cache = os.path.join(root, f"numba-{run}")
            env = _child_env(bytecode, NUMBA_CACHE_DIR=cache, KVOFFLOAD_COMPILE="background")
            _first_use(cold, env, code)
        for _ in range(runs):
            _first_use(warm, env, code)
    return [*rows, cold, warm]


def _seconds(values: list[float]) -> str:
    if not values:
        return "—"
    middle = f"{statistics.median(values):.2f}"
    return middle if len(values) == 1 else f"{middle} ({min(values):.2f}–{max(values):.2f})"


def load_average() -> str:
    """The machine's 1, 5 and 15 minute load averages (wall times grow with them)."""
    try:
        return " / ".join(f"{value:.1f}" for value in os.getloadavg())
    except OSError:  # not every platform has one
        return "n/a"


def print_figures(rows: list[ColdStart], load: str = "n/a", bytecode: bool = False) -> None:
    """One table: each row's first answer and compiled-path time beside its target."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Cold start: seconds from spawning the process (median (min–max) of the runs)")
    for name in ("run", "first answer, s", "CPU to it, s", "compiled path ready, s", "target", "met"):
        table.add_column(name, justify="left" if name == "run" else "right")
    for row in rows:
        target = row.target
        met = "—" if target is None else "yes" if statistics.median(row.first) <= target else "NO"
        table.add_row(row.label, _seconds(row.first), _seconds(row.first_cpu), _seconds(row.ready),
                      "—" if target is None else f"≤ {target:g} s", met)
    console = Console(width=max(Console().width, 120))
    off = os.environ.get("PYTHONDONTWRITEBYTECODE") and not bytecode
    table.caption = (f"load average before the runs {load}; children write Python bytecode caches: "
                     f"{'no (PYTHONDONTWRITEBYTECODE; they read those that exist)' if off else 'yes'}")
    console.print(table)
    ours = [row for row in rows if row.ready]
    for row in ours:
        parts = [statistics.median(run[i] for run in row.split) for i in range(4)]
        console.print(f"CPU to the first answer, {row.label} (medians): interpreter start-up {parts[0]:.3f} s, "
                      f"import numpy {parts[1]:.3f} s, kvoffload's imports {parts[2]:.3f} s, "
                      f"first calls {parts[3]:.3f} s")
    console.print(
        "first answer: import kvoffload.impl, CPUOffloadingManager, lookup + prepare_store + complete_store "
        "(plain-Python twin until compiled); compiled path ready: every entry point compiled or loaded "
        "(background thread). numba imported before the first answer: "
        f"{'yes' if any(r.numba_at_first for r in ours) else 'no'}; answers checked: "
        f"{'ok' if all(r.answers_ok for r in ours) else 'WRONG'}"
    )
    if not all(r.answers_ok for r in ours):
        raise click.ClickException("a first-use child answered wrongly (see above)")


@click.command(name="cold-start")
@click.option("--runs", default=3, show_default=True, type=click.IntRange(min=1),
              help="Runs of the floors and of warm first use.")
@click.option("--cold-runs", default=1, show_default=True, type=click.IntRange(min=1),
              help="Runs with an empty numba cache (each compiles everything: tens of seconds of CPU).")
@click.option("--capacity", default=1024, show_default=True, type=click.IntRange(min=1),
              help="The manager's blocks.")
@click.option("--policy", type=click.Choice(["lru", "arc"]), default="lru", show_default=True)
@click.option("--keys", default=16, show_default=True, type=click.IntRange(1, 256),
              help="Keys of the first lookup and store (at most the capacity).")
@click.option("--bytecode", is_flag=True,
              help="Children write and read Python bytecode caches even where PYTHONDONTWRITEBYTECODE "
                   "is set (as a normal install does).")
def command(runs: int, cold_runs: int, capacity: int, policy: str, keys: int, bytecode: bool) -> None:
    """Seconds to a new process's first answer, empty and filled numba cache, beside targets."""
    load = load_average()
    print_figures(measure(runs, cold_runs, capacity, policy, keys, bytecode), load, bytecode)
