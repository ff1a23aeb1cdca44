"""A warm process that judges one mutant per connection in a forked child.

Importing vLLM (and torch under it) costs ~15 s of CPU on the CI machine; paid once here,
not once per mutant. The server imports the unmutated dependencies (``--preload``), never
the scratch package: each child imports the mutated file fresh from disk (bytecode writing
is off, so a stale ``.pyc`` of another mutant of the same size and second cannot be read).
The server enforces the per-mutant time limit (a child still running is killed and the
mutant reported as a timeout, which cosmic-ray counts as killed).

Protocol (one request per connection, one JSON line each way):
``{"file": "policies/arc.py", "timeout": 300}`` → ``{"code": 0|1|2|124, "output": "..."}``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["TIMEOUT_CODE", "main", "serve"]

TIMEOUT_CODE = 124


def _judge_in_child(target: str, file: str, log_path: str) -> None:
    """Child side: output to ``log_path``, run the kill test, leave with its status."""
    code = 2
    try:
        log = os.open(log_path, os.O_WRONLY | os.O_TRUNC)
        os.dup2(log, 1)
        os.dup2(log, 2)
        from .judge import judge

        code = judge(target, file)
    except BaseException as error:  # noqa: BLE001 - reported, never raised past the fork
        print(f"CRASH {error!r}")
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _wait(pid: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return TIMEOUT_CODE
        time.sleep(0.05)


def _answer(target: str, request: dict[str, object]) -> dict[str, object]:
    file, timeout = str(request["file"]), float(str(request["timeout"]))
    with tempfile.NamedTemporaryFile("r", prefix="kvo-mutant-", suffix=".log") as log:
        pid = os.fork()
        if pid == 0:
            _judge_in_child(target, file, log.name)
        code = _wait(pid, timeout)
        output = Path(log.name).read_text(encoding="utf-8", errors="replace")
    if code == TIMEOUT_CODE:
        output = f"TIMEOUT after {timeout:.0f} s\n{output}"
    return {"code": code, "output": output}


def serve(socket_path: str, target: str, preload: list[str]) -> None:
    """Import ``preload``, then answer requests on ``socket_path`` until killed."""
    sys.dont_write_bytecode = True
    for module in preload:
        importlib.import_module(module)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(4)
    print(f"ready {socket_path}", flush=True)
    while True:
        connection, _ = listener.accept()
        with connection, connection.makefile("rw", encoding="utf-8") as stream:
            request = json.loads(stream.readline())
            stream.write(json.dumps(_answer(target, request)) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("socket_path")
    parser.add_argument("target")
    parser.add_argument("--scratch", required=True, help="directory put first on sys.path")
    parser.add_argument("--preload", action="append", default=[])
    args = parser.parse_args(argv)
    sys.path.insert(0, args.scratch)
    serve(args.socket_path, args.target, args.preload)


if __name__ == "__main__":
    main()
