"""cosmic-ray's test command: ask the warm fork server to judge the mutant on disk.

Run as a script (``python client.py SOCKET FILE TIMEOUT``), standard library only, so a
mutant costs no interpreter warm-up beyond this file. Prints the suite's verdict lines and
exits with the kill test's status (0: survived; anything else: killed).
"""

from __future__ import annotations

import json
import socket
import sys


def main(argv: list[str]) -> int:
    socket_path, file, timeout = argv
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(socket_path)
        with connection.makefile("rw", encoding="utf-8") as stream:
            stream.write(json.dumps({"file": file, "timeout": float(timeout)}) + "\n")
            stream.flush()
            answer = json.loads(stream.readline())
    print(answer["output"], end="")
    return int(answer["code"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
