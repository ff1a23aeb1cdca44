"""``kvoffload replay``: trace reading, the compiled simulators against the reference
replay (same hits, request by request), the bounds, and the command itself."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from kvoffload.cli import main
from kvoffload.replay import REPLAY_POLICIES, read_trace, replay_hits, replay_reference
from kvoffload.replay.traces import Trace, from_requests


def write_mooncake(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_mooncake_ids_split_into_prefix_chained_keys(tmp_path: Path) -> None:
    trace = read_trace(
        write_mooncake(
            tmp_path / "t.jsonl",
            [
                {"input_length": 1024, "hash_ids": [0, 1]},  # 2 ids x 2 keys (block size 256)
                {"input_length": 800, "hash_ids": [0, 2]},  # 800 // 256 = 3 full blocks
                {"hash_ids": [5, 1]},  # no input_length: every id in full
            ],
        ),
        block_size=256,
    )
    first, second, third = trace.requests()
    assert len(first) == 4 and len(second) == 3 and len(third) == 4
    assert second[:2] == first[:2]  # same id at the same place, same prefix: same keys
    assert second[2] not in first
    assert not set(third) & set(first)  # id 1 after a different prefix: different keys
    assert trace.num_keys == len(set(first) | set(second) | set(third)) == 9


def test_mooncake_reader_rejects_bad_lines_and_block_sizes(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"hash_ids": [1]}\n{"input_length": 3}\n')
    with pytest.raises(ValueError, match="line 2"):
        read_trace(path, "mooncake")
    with pytest.raises(ValueError, match="must divide 512"):
        read_trace(write_mooncake(tmp_path / "ok.jsonl", [{"hash_ids": [1]}]), block_size=24)


def test_text_trace_one_request_per_line(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("a b a c\n\nb  d\n")
    trace = read_trace(path)
    assert [list(r) for r in trace.requests()] == [[0, 1, 2], [], [1, 3]]  # repeat dropped (C5)
    assert trace.num_keys == 4 and trace.num_accesses == 5


def random_trace(rng: random.Random) -> Trace:
    """Prefix-shaped requests: a few shared stems, some random keys, some repeats."""
    requests = []
    for _ in range(rng.randint(1, 60)):
        stem = rng.randint(0, 5)
        requests.append(
            [f"{stem}/{i}" if rng.random() < 0.7 else str(rng.randint(0, 25)) for i in range(rng.randint(0, 9))]
        )
    return from_requests("random", requests)


@pytest.mark.parametrize("policy", REPLAY_POLICIES)
def test_compiled_replay_equals_the_reference_replay(policy: str) -> None:
    rng = random.Random(f"replay-{policy}")
    for _ in range(150):
        trace = random_trace(rng)
        capacity = rng.randint(1, 14)
        assert replay_hits(trace, capacity, policy).tolist() == replay_reference(trace, capacity, policy)


def belady_by_hand(trace: Trace, capacity: int) -> list[int]:
    """MIN the slow way: evict the unprotected resident key whose next access is farthest."""
    requests = [r[:capacity] for r in trace.requests()]
    accesses = [(r, i, k) for r, keys in enumerate(requests) for i, k in enumerate(keys)]

    def next_use(key: int, after_request: int) -> int:
        return next(
            (n for n, (r, _, k) in enumerate(accesses) if r > after_request and k == key), len(accesses) + 1
        )

    resident: set[int] = set()
    hits = []
    for r, keys in enumerate(requests):
        h = 0
        while h < len(keys) and keys[h] in resident:
            h += 1
        hits.append(h)
        absent = [k for k in keys if k not in resident]
        for _ in range(len(absent) + len(resident) - capacity):
            resident.remove(max(resident - set(keys), key=lambda k: next_use(k, r)))
        resident.update(absent)
    return hits


def test_belady_equals_a_slow_min_and_infinite_bounds_every_policy() -> None:
    rng = random.Random("belady")
    for _ in range(120):
        trace = random_trace(rng)
        capacity = rng.randint(1, 12)
        belady = replay_hits(trace, capacity, "belady")
        assert belady.tolist() == belady_by_hand(trace, capacity)
        ceiling = replay_hits(trace, capacity, "infinite")
        for policy in REPLAY_POLICIES:
            assert np.all(replay_hits(trace, capacity, policy) <= ceiling)
        assert np.all(belady <= ceiling)


def test_infinite_cache_counts_prefixes_seen_before() -> None:
    trace = from_requests("t", [["a", "b"], ["a", "c", "b"], ["a", "c", "d"]])
    assert replay_hits(trace, 1, "infinite").tolist() == [0, 1, 2]


def test_replay_hits_rejects_bad_arguments() -> None:
    trace = from_requests("t", [["a"]])
    with pytest.raises(ValueError, match="capacity"):
        replay_hits(trace, 0, "lru")
    with pytest.raises(ValueError, match="policy"):
        replay_hits(trace, 1, "fifo")


def test_replay_command_table_and_plot(tmp_path: Path) -> None:
    trace = tmp_path / "tiny.txt"
    # Capacity 2, LRU: r1 stores a, b; r2 hits both (touch leaves a most recent); r3
    # evicts b for c; r4 hits a. 3 hits of 6 accesses = 50.00 %. Ceiling: 2 + 1 of 6.
    trace.write_text("a b\na b\nc\na\n")
    plot = tmp_path / "curves.png"
    result = CliRunner().invoke(
        main, ["replay", str(trace), "--capacity", "2", "--policy", "lru", "--plot", str(plot)]
    )
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if line.strip("│ ").startswith("2 "))
    assert row.split("│")[2].strip() == "50.00" and row.split("│")[-2].strip() == "50.00"
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is missing" in result.output and not plot.exists()
    else:
        assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_replay_command_rejects_bad_capacity(tmp_path: Path) -> None:
    trace = tmp_path / "tiny.txt"
    trace.write_text("a\n")
    result = CliRunner().invoke(main, ["replay", str(trace), "--capacity", "lots"])
    assert result.exit_code != 0 and "neither a positive number" in result.output
