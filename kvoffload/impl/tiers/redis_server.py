"""Start and stop a private ``redis-server`` on 127.0.0.1 (tests and ``bench tiers``).

The server runs with what the tier needs: ``--maxmemory-policy noeviction`` (our policy
decides evictions), no persistence (``--save '' --appendonly no``), in its own directory.
It is stopped by its PID.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

__all__ = ["RedisProcess", "redis_server_binary"]


def redis_server_binary() -> str | None:
    """The ``redis-server`` on ``PATH`` (a system package: ``apt-get install -y redis-server``)."""
    return shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisProcess:
    """One ``redis-server`` process in ``directory``; ``url`` once it answers PING."""

    def __init__(self, directory: str | os.PathLike[str], timeout_s: float = 10.0) -> None:
        import redis

        binary = redis_server_binary()
        if binary is None:
            raise FileNotFoundError("redis-server not found (apt-get install -y redis-server)")
        self.port = _free_port()
        args = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--maxmemory-policy", "noeviction", "--dir", str(Path(directory))]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"redis://127.0.0.1:{self.port}"
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                redis.Redis.from_url(self.url).ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"redis-server on port {self.port} did not come up") from None
                time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: the server dies mid-run, as in a crash."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
