"""cosmic-ray sessions for one target: init, scope, seeded sample, exec through the fork server.

One cosmic-ray session (config + sqlite work database) per copied file, because a session
has one test command and the command must say which file's suites judge the mutant.
cosmic-ray finds every mutant (``cosmic-ray init``) and applies each one on disk while its
test command runs (``cosmic-ray exec``); this module only decides which mutants run —
those out of scope (``Target.out_of_scope``) and those outside a seeded random sample are
recorded as skipped in cosmic-ray's own database, with the reason as their output.
"""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .scratch import build_scratch, source_dir
from .static import ANNOTATION_REASON, in_unevaluated_annotation
from .targets import Target, mutant_key

__all__ = ["Session", "SKIP_EQUIVALENT", "SKIP_OUT_OF_SCOPE", "SKIP_NOT_SAMPLED", "copy_of", "run_target", "sessions_of"]

SKIP_OUT_OF_SCOPE = "out of scope: "
SKIP_NOT_SAMPLED = "not in the sample"
SKIP_EQUIVALENT = "equivalent: "
CLIENT = Path(__file__).with_name("client.py")
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Session:
    """The config and database of one copied file's cosmic-ray session."""

    file: str
    config: Path
    database: Path


def sessions_of(target: Target, workdir: Path) -> list[Session]:
    stems = [file.replace("/", "__").removesuffix(".py") for file in target.files]
    return [
        Session(file, workdir / f"{stem}.toml", workdir / f"{stem}.sqlite")
        for file, stem in zip(target.files, stems)
    ]


def _cosmic_ray(*arguments: str) -> None:
    subprocess.run([sys.executable, "-m", "cosmic_ray.cli", *arguments], check=True)


def _write_config(session: Session, module: Path, socket_path: Path, timeout: float) -> None:
    command = f"{sys.executable} {CLIENT} {socket_path} {session.file} {timeout:.0f}"
    session.config.write_text(
        "[cosmic-ray]\n"
        f'module-path = "{module}"\n'
        # the server kills a mutant at `timeout`; cosmic-ray's own limit is only a backstop
        f"timeout = {timeout + 120:.1f}\n"
        "excluded-modules = []\n"
        f'test-command = "{command}"\n\n'
        "[cosmic-ray.distributor]\n"
        'name = "local"\n',
        encoding="utf-8",
    )


def _skip(database: Any, job_id: str, reason: str) -> None:
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    database.set_result(job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output=reason))


def copy_of(target: Target, workdir: Path, file: str) -> Path:
    """The scratch copy of ``file`` (cosmic-ray restores it after every mutant)."""
    return workdir / "src" / target.package / file


def select(target: Target, workdir: Path, sessions: list[Session], sample: int, seed: int,
           only: frozenset[str] = frozenset()) -> tuple[int, int]:
    """Skip out-of-scope mutants and those equivalent by construction (``static.py``) and, when ``sample > 0``, all but ``sample`` of the rest
    drawn with ``random.Random(seed)`` over the target's in-scope mutants in a fixed order
    (file, then cosmic-ray's job order by position); ``only``: exactly the in-scope mutants
    of these keys (``mutant_key``), to judge chosen ones again. Returns (in scope, selected)."""
    from cosmic_ray.work_db import WorkDB, use_db

    in_scope: list[tuple[Session, str]] = []
    keys: list[str] = []
    for session in sessions:
        with use_db(str(session.database), WorkDB.Mode.open) as database:
            items = sorted(database.work_items, key=lambda w: _position(w.mutations[0]))
            for item in items:
                where = f"{session.file}:{item.mutations[0].definition_name}"
                if where in target.out_of_scope:
                    _skip(database, item.job_id, SKIP_OUT_OF_SCOPE + target.out_of_scope[where])
                elif in_unevaluated_annotation(copy_of(target, workdir, session.file), item.mutations[0].start_pos):
                    _skip(database, item.job_id, SKIP_EQUIVALENT + ANNOTATION_REASON)
                else:
                    in_scope.append((session, item.job_id))
                    keys.append(mutant_key(target.name, session.file, item.mutations[0]))
    chosen = set(range(len(in_scope)))
    if only:
        unknown = sorted(only.difference(keys))
        if unknown:
            raise ValueError(f"no in-scope mutant of {target.name} is named {', '.join(unknown)}")
        chosen = {index for index, key in enumerate(keys) if key in only}
    elif 0 < sample < len(in_scope):
        chosen = set(random.Random(seed).sample(range(len(in_scope)), sample))
    for session in sessions:
        with use_db(str(session.database), WorkDB.Mode.open) as database:
            for index, (owner, job_id) in enumerate(in_scope):
                if owner is session and index not in chosen:
                    _skip(database, job_id, SKIP_NOT_SAMPLED)
    return len(in_scope), len(chosen)


def _position(mutation: Any) -> tuple[int, int, str, int]:
    line, column = mutation.start_pos
    return (line, column, mutation.operator_name, mutation.occurrence)


def _start_server(target: Target, python: str, scratch: Path, socket_path: Path, log: Path) -> subprocess.Popen[bytes]:
    preload = ["kvoffload.conformance.runner"]
    if target.needs_vllm:
        preload += ["vllm.v1.kv_offload.cpu.manager", "kvoffload.conformance.lockstep.vllm.machines",
                    "kvoffload.conformance.checking.exhaustive"]
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")]))
    command = [python, "-m", "kvoffload.mutation.forkserver", str(socket_path), target.name, "--scratch", str(scratch)]
    for module in preload:
        command += ["--preload", module]
    server = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=environment)
    deadline = time.monotonic() + 600
    while not socket_path.exists():
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            raise RuntimeError(f"the fork server did not start: {log.read_text(errors='replace')[-800:]}")
        time.sleep(0.2)
    return server


def _forget_survivors(sessions: list[Session]) -> None:
    """Drop the results of surviving mutants so ``cosmic-ray exec`` judges them again (the
    suite only gained checks: generation is unchanged, so a killed mutant stays killed)."""
    for session in sessions:
        with sqlite3.connect(session.database) as database:
            database.execute("DELETE FROM work_results WHERE test_outcome = 'SURVIVED'")


def _counts(sessions: list[Session]) -> tuple[int, int]:
    in_scope = chosen = 0
    for session in sessions:
        with sqlite3.connect(session.database) as database:
            rows = database.execute(
                "SELECT r.output FROM work_items w LEFT JOIN work_results r ON w.job_id = r.job_id"
            ).fetchall()
        for (output,) in rows:
            output = output or ""
            in_scope += not output.startswith((SKIP_OUT_OF_SCOPE, SKIP_EQUIVALENT))
            chosen += not output.startswith((SKIP_OUT_OF_SCOPE, SKIP_EQUIVALENT, SKIP_NOT_SAMPLED))
    return in_scope, chosen


def run_target(target: Target, workdir: Path, python: str, sample: int, seed: int, timeout: float,
               resume: bool = False, only: frozenset[str] = frozenset()) -> tuple[int, int]:
    """Copy, init, select, execute. Returns (in-scope mutants, mutants run). ``resume``:
    keep the sessions, judge the mutants not judged yet and the survivors again."""
    workdir.mkdir(parents=True, exist_ok=True)
    scratch = build_scratch(target, source_dir(target, python), workdir)
    socket_path = workdir / "judge.sock"
    socket_path.unlink(missing_ok=True)
    sessions = sessions_of(target, workdir)
    if resume:
        _forget_survivors(sessions)
        counts = _counts(sessions)
    else:
        for session in sessions:
            session.database.unlink(missing_ok=True)
            _write_config(session, scratch / target.package / session.file, socket_path, timeout)
            _cosmic_ray("init", str(session.config), str(session.database))
        counts = select(target, workdir, sessions, sample, seed, only)
    server = _start_server(target, python, scratch, socket_path, workdir / "server.log")
    try:
        for session in sessions:
            _cosmic_ray("exec", str(session.config), str(session.database))
    finally:
        server.kill()
        server.wait()
        socket_path.unlink(missing_ok=True)
    return counts
