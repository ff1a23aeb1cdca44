"""``kvoffload.traces``: Mooncake JSONL requests and their prefix-chained block keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvoffload.traces import TraceError, TraceKeys, TraceRequest, read_trace

SAMPLE = Path(__file__).parent / "data" / "mooncake_synthetic_head120.jsonl"


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_reads_every_request_of_the_sample_in_order() -> None:
    requests = list(read_trace(SAMPLE))
    raw = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    assert len(requests) == len(raw) == 120
    assert requests[0] == TraceRequest(float(raw[0]["timestamp"]), raw[0]["input_length"],
                                       raw[0]["output_length"], tuple(raw[0]["hash_ids"]))
    assert [r.hash_ids for r in requests] == [tuple(r["hash_ids"]) for r in raw]
    assert len(list(read_trace(SAMPLE, limit=7))) == 7


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "JSON object"),
        ('{"input_length": 5, "output_length": 1, "hash_ids": [1, "x"]}', "hash_ids"),
        ('{"input_length": -5, "output_length": 1, "hash_ids": [1]}', "input_length"),
        ('{"input_length": 5, "output_length": 1, "hash_ids": [1], "timestamp": "now"}', "timestamp"),
        ('{"input_length": 5, "output_length": 1, "hash_ids": [36893488147419103232]}', "64-bit"),
    ],
)
def test_a_malformed_line_names_file_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    good = '{"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [1]}'
    path = _write(tmp_path, [good, "", line])
    with pytest.raises(TraceError, match=message) as error:
        list(read_trace(path))
    assert f"{path}:3" in str(error.value)


def test_keys_are_prefix_chained_at_vllm_block_size() -> None:
    keys = TraceKeys(block_size=16)
    a = keys.keys(TraceRequest(0, 1024, 1, (1, 2)))
    b = keys.keys(TraceRequest(0, 1024, 1, (1, 3)))
    c = keys.keys(TraceRequest(0, 1024, 1, (4, 2)))
    assert len(a) == 64 and len(set(a)) == 64 and all(len(k) == 36 and k.endswith(bytes(4)) for k in a)
    assert a[:32] == b[:32] and set(a[32:]).isdisjoint(b[32:])  # same first id: same first keys
    assert set(a).isdisjoint(c)  # id 2 after another prefix: other keys (chained)
    assert TraceKeys(block_size=16).keys(TraceRequest(5, 1024, 9, (1, 2))) == a  # deterministic


def test_only_full_blocks_get_keys() -> None:
    keys = TraceKeys(block_size=16)
    assert len(keys.keys(TraceRequest(0, 1000, 1, (1, 2)))) == 1000 // 16
    assert len(keys.keys(TraceRequest(0, 5000, 1, (1, 2)))) == 64  # no more than the ids cover
    assert keys.keys(TraceRequest(0, 15, 1, (1,))) == []
    assert len(TraceKeys(block_size=512).keys(TraceRequest(0, 1024, 1, (1, 2)))) == 2


@pytest.mark.parametrize("block_size", [0, -16, 24, 1024, 1.5])
def test_block_size_must_divide_512(block_size: object) -> None:
    with pytest.raises(ValueError, match="block_size"):
        TraceKeys(block_size=block_size)  # type: ignore[arg-type]


def test_replay_and_bench_trace_read_the_same_requests_through_one_reader(tmp_path: Path) -> None:
    """``kvoffload replay`` and ``kvoffload bench trace`` get their requests from this
    module: the same keys per request (count and sharing), a record without lengths
    counted in full, and a malformed line refused by both with the same message."""
    from kvoffload.replay.traces import read_trace as replay_read

    lines = SAMPLE.read_text(encoding="utf-8").splitlines()[:30] + ['{"hash_ids": [7, 1]}']
    path = _write(tmp_path, lines)
    requests = list(read_trace(path))
    assert requests[-1] == TraceRequest(0.0, None, None, (7, 1))
    keys = TraceKeys(block_size=64)
    bench = [keys.keys(r) for r in requests]
    replay = list(replay_read(path, "mooncake", block_size=64).requests())
    assert [len(k) for k in bench] == [len(k) for k in replay] and len(bench[-1]) == 16
    # equal keys in one numbering exactly where equal in the other
    first_seen: dict[bytes, int] = {}
    for ours, theirs in zip(bench, replay):
        assert [first_seen.setdefault(k, key_id) for k, key_id in zip(ours, theirs)] == theirs
    assert len(set(first_seen.values())) == len(first_seen)
    bad = _write(tmp_path, [lines[0], '{"input_length": 3}'])
    with pytest.raises(TraceError) as from_bench:
        list(read_trace(bad))
    with pytest.raises(TraceError) as from_replay:
        replay_read(bad, "mooncake")
    assert str(from_bench.value) == str(from_replay.value) and f"{bad}:2" in str(from_bench.value)
