"""Reading request traces for ``kvoffload replay``: Mooncake JSONL and plain text.

A trace becomes a sequence of requests, each a sequence of distinct integer keys
(dense ids ``0 … num_keys-1``) standing for vLLM block hashes:

- **Mooncake JSONL** (the FAST'25 trace release; parsed and checked by
  ``kvoffload.traces``, the format's one reader): one JSON object per line with
  ``hash_ids`` (one id per 512-token block; equal ids mean a shared prefix block) and
  ``input_length`` (tokens). Each id is split into ``512 / block_size`` keys; keys are
  prefix-chained as vLLM's block hashes are: key ``j`` of the id at position ``p``
  stands for (all ids at positions ``0 … p``, ``j``), so equal id sequences give equal
  keys and any difference earlier in the prompt gives different ones. Only full blocks
  of ``input_length`` tokens get a key (vLLM hashes full blocks only); without
  ``input_length`` every id counts in full.
- **Plain text**: one request per line, its keys separated by whitespace; each distinct
  word is one key. Empty lines are requests without keys.

A key repeated within one request is kept once, at its first place (the contract's C5:
no hash twice within one call).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import attrs
import numpy as np
import numpy.typing as npt

from ..traces import TOKENS_PER_ID, TraceRequest, check_block_size, key_count
from ..traces import read_trace as read_mooncake

__all__ = ["Trace", "read_trace", "mooncake_requests", "text_requests", "MOONCAKE_BLOCK_TOKENS"]

#: Tokens per ``hash_ids`` entry in the Mooncake traces.
MOONCAKE_BLOCK_TOKENS = TOKENS_PER_ID


@attrs.frozen
class Trace:
    """Requests as one flat key array: request ``r`` is ``keys[offsets[r]:offsets[r+1]]``.

    ``block_size``: tokens per key where the format says (Mooncake), else ``None``.
    """

    name: str
    keys: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]
    num_keys: int
    block_size: int | None = None

    @property
    def num_requests(self) -> int:
        return len(self.offsets) - 1

    @property
    def num_accesses(self) -> int:
        return len(self.keys)

    def requests(self) -> Iterator[list[int]]:
        """Each request's keys, in order (for the reference replay and tests)."""
        flat = self.keys.tolist()
        bounds = self.offsets.tolist()
        for r in range(self.num_requests):
            yield flat[bounds[r] : bounds[r + 1]]


def from_requests(name: str, requests: Iterable[Iterable[object]]) -> Trace:
    """A ``Trace`` from any hashable keys per request (mapped to dense ids, first seen first)."""
    ids: dict[object, int] = {}
    flat: list[int] = []
    offsets = [0]
    for request in requests:
        in_request: set[int] = set()
        for key in request:
            key_id = ids.setdefault(key, len(ids))
            if key_id not in in_request:  # C5: once per request
                in_request.add(key_id)
                flat.append(key_id)
        offsets.append(len(flat))
    return Trace(name, np.array(flat, np.int64), np.array(offsets, np.int64), len(ids))


def mooncake_requests(requests: Iterable[TraceRequest], block_size: int) -> Iterator[npt.NDArray[np.int64]]:
    """Per request, its chained keys as raw ids ``node * (512 / block_size) + j`` (module doc).

    ``node`` numbers the distinct id prefixes (a trie over ``hash_ids``), so raw ids are
    distinct within a request and equal exactly when prefix and sub-block are equal; a
    request gets ``kvoffload.traces.key_count`` keys, as in ``kvoffload bench trace``.
    """
    per_id = MOONCAKE_BLOCK_TOKENS // check_block_size(block_size, MOONCAKE_BLOCK_TOKENS)
    sub_blocks = np.arange(per_id, dtype=np.int64)
    prefixes: dict[tuple[int, int], int] = {}  # (parent node, hash id) → node: a trie
    for request in requests:
        count = key_count(request, block_size, MOONCAKE_BLOCK_TOKENS)
        nodes: list[int] = []
        node = -1
        for hash_id in request.hash_ids[: -(-count // per_id)]:
            node = prefixes.setdefault((node, hash_id), len(prefixes))
            nodes.append(node)
        keys = (np.array(nodes, np.int64)[:, None] * per_id + sub_blocks[None, :]).ravel()
        yield keys[:count]


def _from_raw_ids(name: str, requests: Iterable[npt.NDArray[np.int64]], block_size: int) -> Trace:
    """A ``Trace`` from requests of raw integer ids, distinct within each request."""
    parts = list(requests)
    offsets = np.zeros(len(parts) + 1, np.int64)
    offsets[1:] = np.cumsum([len(part) for part in parts])
    flat = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    unique, dense = np.unique(flat, return_inverse=True)
    return Trace(name, dense.astype(np.int64).ravel(), offsets, len(unique), block_size)


def text_requests(lines: Iterable[str]) -> Iterator[list[str]]:
    """Per line, its whitespace-separated keys."""
    for line in lines:
        yield line.split()


def detect_format(path: Path) -> str:
    """``"mooncake"`` if the first non-empty line is a JSON object, else ``"text"``."""
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                return "mooncake" if line.lstrip().startswith("{") else "text"
    return "text"


def read_trace(path: Path, trace_format: str = "auto", block_size: int = 16) -> Trace:
    """Read ``path`` as ``"mooncake"``, ``"text"`` or ``"auto"`` (see ``detect_format``)."""
    if trace_format == "auto":
        trace_format = detect_format(path)
    if trace_format == "mooncake":
        check_block_size(block_size, MOONCAKE_BLOCK_TOKENS)  # before reading the file
        return _from_raw_ids(path.name, mooncake_requests(read_mooncake(path), block_size), block_size)
    if trace_format == "text":
        with path.open(encoding="utf-8") as handle:
            return from_requests(path.name, text_requests(handle))
    raise ValueError(f"unknown trace format {trace_format!r} (mooncake, text or auto)")
