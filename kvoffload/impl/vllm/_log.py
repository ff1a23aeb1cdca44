"""The test seam of the adapters: JSON lines appended to ``$KVOFFLOAD_VLLM_LOG``.

vLLM runs the scheduler (engine core) and the worker in processes of their own, so a
test counts what the adapters did through a file both append to (one ``write`` per
line, ``O_APPEND``: lines of concurrent writers do not interleave at these sizes).
"""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["log_event", "log_enabled", "corrupt_loads"]

LOG_ENV = "KVOFFLOAD_VLLM_LOG"
CORRUPT_ENV = "KVOFFLOAD_VLLM_CORRUPT_LOADS"


def log_enabled() -> bool:
    return bool(os.environ.get(LOG_ENV))


def log_event(**fields: Any) -> None:
    """Append one JSON line (with the process id) when ``$KVOFFLOAD_VLLM_LOG`` is set."""
    path = os.environ.get(LOG_ENV)
    if not path:
        return
    line = json.dumps({"pid": os.getpid(), **fields}, sort_keys=True) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def corrupt_loads() -> bool:
    """Test-only: ``$KVOFFLOAD_VLLM_CORRUPT_LOADS=1`` makes loads read zeroed host bytes."""
    return os.environ.get(CORRUPT_ENV, "") not in ("", "0")
