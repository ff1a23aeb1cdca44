"""Request traces in the Mooncake JSONL format, turned into vLLM-sized block keys.

Dependency-free (standard library only), for benchmarks and replays.

The format (Mooncake FAST'25 trace release): one JSON object per line with
``timestamp`` (ms), ``input_length`` and ``output_length`` (tokens) and ``hash_ids``:
one id per 512-token block of the prompt, where equal ids mean a reusable prefix block.

vLLM hashes every full block of ``block_size`` tokens, each hash chained to the one
before it, so equal keys mean an equal prefix. ``TraceKeys`` does the same at any block
size dividing 512: id ``h`` at a position becomes ``512 / block_size`` keys, each the
hash of (previous key, ``h``, sub-block index), and only the prompt's full blocks get
keys (``input_length // block_size``, at most the ids cover; every id in full where a
record has no ``input_length``). Keys are 36 bytes, as vLLM 0.32's ``OffloadKey`` (a
32-byte hash and a 4-byte KV-cache group index, 0).

This module is the one reader of the format: ``kvoffload bench trace`` keys requests
with ``TraceKeys``; ``kvoffload replay`` (``kvoffload.replay.traces``) turns the same
``TraceRequest`` s into dense integer keys by the same rule (``key_count``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TOKENS_PER_ID", "TraceError", "TraceKeys", "TraceRequest", "check_block_size", "key_count", "read_trace"]

#: Tokens covered by one ``hash_ids`` entry in the Mooncake traces.
TOKENS_PER_ID = 512
_GROUP_0 = (0).to_bytes(4, "big")
_ID_LIMIT = 2**63


class TraceError(ValueError):
    """A line of a trace file that is not a request of the format (names file and line)."""


@dataclass(frozen=True)
class TraceRequest:
    """One request of a trace (``None``: the record has no such field)."""

    timestamp: float
    input_length: int | None
    output_length: int | None
    hash_ids: tuple[int, ...]


def _int_field(record: dict[str, object], name: str, where: str) -> int | None:
    """The field's value: absent is ``None``; present, a non-negative integer."""
    if name not in record:
        return None
    value = record[name]
    if type(value) is not int or value < 0:
        raise TraceError(f"{where}: {name!r} must be a non-negative integer, got {value!r}")
    return value


def _request(line: str, where: str) -> TraceRequest:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise TraceError(f"{where}: not JSON ({error.msg})") from None
    if not isinstance(record, dict):
        raise TraceError(f"{where}: a request must be a JSON object, got {type(record).__name__}")
    timestamp = record.get("timestamp", 0)
    if type(timestamp) not in (int, float):
        raise TraceError(f"{where}: 'timestamp' must be a number, got {timestamp!r}")
    ids = record.get("hash_ids")
    if not isinstance(ids, list) or not all(type(i) is int and -_ID_LIMIT <= i < _ID_LIMIT for i in ids):
        raise TraceError(f"{where}: 'hash_ids' must be a list of 64-bit integers")
    return TraceRequest(
        timestamp=float(timestamp),
        input_length=_int_field(record, "input_length", where),
        output_length=_int_field(record, "output_length", where),
        hash_ids=tuple(ids),
    )


def read_trace(path: str | Path, limit: int | None = None) -> Iterator[TraceRequest]:
    """The requests of a Mooncake-format JSONL file, in file order (blank lines skipped).

    ``limit`` stops after that many requests. A malformed line raises ``TraceError``
    naming the file and line number (``path:7: ... (line 7 is not a request ...)``).
    """
    count = 0
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if limit is not None and count >= limit:
                return
            if not line.strip():
                continue
            try:
                yield _request(line, f"{path}:{number}")
            except TraceError as error:
                raise TraceError(f"{error} (line {number} is not a request of the Mooncake format)") from None
            count += 1


def check_block_size(block_size: object, tokens_per_id: int = TOKENS_PER_ID) -> int:
    """``block_size`` if it is a positive int dividing ``tokens_per_id``, else ``ValueError``."""
    if type(block_size) is not int or block_size <= 0 or tokens_per_id % block_size:
        raise ValueError(f"block_size={block_size!r} must divide {tokens_per_id} (tokens per hash id)")
    return block_size


def key_count(request: TraceRequest, block_size: int, tokens_per_id: int = TOKENS_PER_ID) -> int:
    """Keys of the request at ``block_size`` tokens per key: its prompt's full blocks,
    at most what its ids cover (all of them where ``input_length`` is absent)."""
    covered = len(request.hash_ids) * (tokens_per_id // block_size)
    if request.input_length is None:
        return covered
    return min(request.input_length // block_size, covered)


class TraceKeys:
    """Prefix-chained block keys of trace requests at ``block_size`` tokens per block.

    Chains are remembered by prefix, so requests sharing a prefix share its key
    objects (and the hashing is done once per distinct prefix).
    """

    def __init__(self, block_size: int = 16, tokens_per_id: int = TOKENS_PER_ID) -> None:
        self.block_size = check_block_size(block_size, tokens_per_id)
        self.tokens_per_id = tokens_per_id
        self.keys_per_id = tokens_per_id // block_size
        self._chains: dict[tuple[bytes, int], list[bytes]] = {}

    def _expand(self, previous: bytes, hash_id: int) -> list[bytes]:
        chain = self._chains.get((previous, hash_id))
        if chain is None:
            chain = []
            parent = previous
            for sub in range(self.keys_per_id):
                digest = hashlib.sha256(parent + hash_id.to_bytes(8, "big", signed=True)
                                        + sub.to_bytes(4, "big")).digest()
                parent = digest + _GROUP_0
                chain.append(parent)
            self._chains[(previous, hash_id)] = chain
        return chain

    def keys(self, request: TraceRequest) -> list[bytes]:
        """The keys of the request's full prompt blocks, in prefix order."""
        wanted = key_count(request, self.block_size, self.tokens_per_id)
        out: list[bytes] = []
        previous = b""
        for hash_id in request.hash_ids:
            if len(out) >= wanted:
                break
            chain = self._expand(previous, hash_id)
            out.extend(chain)
            previous = chain[-1]
        del out[wanted:]
        return out
