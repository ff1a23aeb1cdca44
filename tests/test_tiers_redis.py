"""The shared Redis tier (T1, T3–T6) against a real redis-server on 127.0.0.1.

The fixture starts ``redis-server`` (``--save '' --appendonly no --maxmemory-policy
noeviction``) on a free port in a temp dir and stops it by its PID. Without the
binary these tests skip, unless ``KVOFFLOAD_REQUIRE_REDIS=1`` (CI sets it) turns the
skip into a failure.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

redis = pytest.importorskip("redis", reason="the redis client is not installed (pip install -e '.[redis]')")

from kvoffload.conformance import check_manager  # noqa: E402
from kvoffload.conformance.lockstep.tiers import check_shared_table  # noqa: E402
from kvoffload.impl.tiers import RecordError, layout_digest  # noqa: E402
from kvoffload.impl.tiers.faultrun import payload_of, run_faults  # noqa: E402
from kvoffload.impl.tiers.redis_server import RedisProcess  # noqa: E402
from kvoffload.impl.tiers.redis_tier import RedisBlockTable, RedisTier  # noqa: E402
from kvoffload.spec import ContractViolation  # noqa: E402

SIZE = 4096


class RedisServer(RedisProcess):
    """The package's launcher; a missing binary skips, or fails where CI requires the server."""

    def __init__(self, directory: Path) -> None:
        try:
            super().__init__(directory)
        except FileNotFoundError as missing:
            if os.environ.get("KVOFFLOAD_REQUIRE_REDIS") == "1":
                pytest.fail(f"{missing}, but KVOFFLOAD_REQUIRE_REDIS=1")
            pytest.skip(str(missing))

    def client(self) -> "redis.Redis":
        return redis.Redis.from_url(self.url)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    running = RedisServer(tmp_path_factory.mktemp("redis"))
    yield running
    running.stop()


def _h(i: int) -> bytes:
    return hashlib.sha256(str(i).encode()).digest()


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


def _table(server: RedisServer, n: int, digest: bytes, client: str, clock: Clock | None = None, lease: int = 100) -> RedisBlockTable:
    return RedisBlockTable(server.client(), n, digest, client_id=client, lease_ms=lease, clock=clock)


def test_T6_redis_block_table_conforms(server: RedisServer) -> None:
    def factory(num_blocks: int, enable_events: bool = False) -> RedisBlockTable:
        return RedisBlockTable(server.client(), num_blocks, secrets.token_bytes(16), enable_events=enable_events)

    for strict in (False, True):
        result = check_manager(factory, policy="lru", strict=strict, max_examples=40)
        assert result.ok, result.message


def test_T4_T5_two_clients_in_lockstep_with_the_model(server: RedisServer) -> None:
    digest = secrets.token_bytes(16)

    def factory(num_blocks: int, client_id: str, lease_ms: int, clock: Clock) -> RedisBlockTable:
        return RedisBlockTable(server.client(), num_blocks, digest, client_id=client_id, lease_ms=lease_ms, clock=clock)

    assert check_shared_table(factory, steps=400) == []

    def never_expires(num_blocks: int, client_id: str, lease_ms: int, clock: Clock) -> RedisBlockTable:
        # A planted bug: leases far longer than agreed, so a dead client's blocks stay held.
        return factory(num_blocks, client_id, lease_ms * 1000, clock)

    digest = secrets.token_bytes(16)
    findings = check_shared_table(never_expires, steps=400)
    assert findings and "T4" in findings[0]


def test_T5_a_pinned_block_survives_other_clients_and_a_late_read_is_never_wrong(server: RedisServer) -> None:
    clock, digest = Clock(), layout_digest("m", "bfloat16", (2, 16, 8, 128))
    reader = RedisTier(_table(server, 2, digest, "reader", clock), SIZE, digest)
    writer = RedisTier(_table(server, 2, digest, "writer", clock), SIZE, digest)
    writer.submit_store(1, [_h(1)], [payload_of(_h(1), SIZE)])
    writer.drain()
    assert [r.success for r in writer.get_finished()] == [True]
    slot = int(reader.table.prepare_load([_h(1)]).block_ids[0])  # a pin under a lease
    assert writer.table.prepare_store([_h(2), _h(3)]) is None  # cannot evict a pinned block (I3, T5)
    clock.now += 500  # the reader stalls past its lease (T4)
    out = writer.table.prepare_store([_h(2), _h(3)])
    assert out is not None and out.block_hashes_evicted == [_h(1)]
    for block_hash in (_h(2), _h(3)):  # one of them now owns the reader's old slot
        writer._write(block_hash, payload_of(block_hash, SIZE))
    assert writer.table.finish_store([_h(2), _h(3)], success=True) == [_h(2), _h(3)]
    dest = bytearray(b"\x01" * SIZE)
    with pytest.raises(RecordError, match="T1|T5"):
        reader._read(slot, _h(1), memoryview(dest))  # the slot now holds another hash, or nothing
    assert dest == bytearray(b"\x01" * SIZE)
    reader.table.complete_load([_h(1)], strict=False)  # a late completion changes nothing
    assert reader.table.lookup([_h(1), _h(2)]) == 0 and reader.table.lookup([_h(2)]) == 1
    with pytest.raises(ContractViolation, match="M3"):
        reader.table.complete_load([_h(1)])


def test_T3_layouts_never_share_blocks(server: RedisServer) -> None:
    one = _table(server, 2, layout_digest("m", "bfloat16", (16,)), "x")
    other = _table(server, 2, layout_digest("m", "float16", (16,)), "x")
    out = one.prepare_store([_h(1)])
    assert out is not None
    one.complete_store([_h(1)])
    assert one.lookup([_h(1)]) == 1 and other.lookup([_h(1)]) == 0
    with pytest.raises(ValueError, match="S4"):
        _table(server, 3, layout_digest("m", "bfloat16", (16,)), "y")  # one namespace, one capacity


_DYING_CLIENT = textwrap.dedent(
    """
    import sys, time, redis
    from kvoffload.impl.tiers.redis_tier import RedisBlockTable
    url, digest = sys.argv[1], bytes.fromhex(sys.argv[2])
    table = RedisBlockTable(redis.Redis.from_url(url), 4, digest, client_id="doomed", lease_ms=400)
    table.prepare_load([b"ready" * 7])                  # a pin
    assert table.prepare_store([b"p1" * 16, b"p2" * 16]) is not None   # two pending blocks
    print("holding", flush=True)
    time.sleep(60)
    """
)


def test_T4_a_client_killed_mid_store_and_mid_load_leaks_nothing(server: RedisServer) -> None:
    digest = secrets.token_bytes(16)
    survivor = RedisBlockTable(server.client(), 4, digest, client_id="survivor", lease_ms=400)
    assert survivor.prepare_store([b"ready" * 7]) is not None
    survivor.complete_store([b"ready" * 7])
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    child = subprocess.Popen([sys.executable, "-c", _DYING_CLIENT, server.url, digest.hex()], stdout=subprocess.PIPE, env=env, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "holding"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert survivor.stats() == (1, 3, 3)  # while the leases run: 2 pending + 1 pinned
    assert survivor.prepare_store([_h(1), _h(2)]) is None  # nothing evictable yet
    time.sleep(0.5)
    assert survivor.stats() == (3, 1, 0)  # reclaimed: pending freed (M7), pin dropped (M3)
    assert survivor.blocks_ref_counts() == {b"ready" * 7: 0}


def test_T1_E1_E2_fault_run_and_a_server_killed_mid_run(tmp_path: Path) -> None:
    own = RedisServer(tmp_path)
    try:
        digest = secrets.token_bytes(16)
        table = RedisBlockTable(own.client(), 24, digest, lease_ms=5_000)
        tier = RedisTier(table, SIZE, digest)

        def leaks() -> int:
            free, present, leases = table.stats()
            return leases + sum(rc != 0 for rc in table.blocks_ref_counts().values()) + (24 - free - present)

        report = run_faults(tier, steps=300, seed=2, leaks=leaks)
        assert report.ok() and report.blocks_loaded > 50, report
        # Corrupt a stored record on the server: its next read fails and is never served (T1).
        ready = [h for h, rc in table.blocks_ref_counts().items() if rc == 0]
        slot = int(table.prepare_load(ready[:1]).block_ids[0])
        table.complete_load(ready[:1])
        record = bytearray(own.client().get(table.slot_key(slot)) or b"")
        record[-1] ^= 0xFF
        own.client().set(table.slot_key(slot), bytes(record))
        dest = bytearray(SIZE)
        tier.submit_load(10_000, ready[:1], [memoryview(dest)])
        tier.drain()
        (result,) = tier.get_finished()
        assert not result.success and dest == bytearray(SIZE) and tier.lookup(ready[:1]) == 0
        # Kill the server in the middle of a run: every job fails or is served verified.
        own.kill()
        report = run_faults(tier, steps=60, seed=3)
        assert report.corrupt_loads == 0 and report.blocks_loaded == 0
        tier.close()
    finally:
        own.stop()


def test_T6_eviction_walks_past_a_page_of_pinned_blocks(server: RedisServer) -> None:
    table = RedisBlockTable(server.client(), 600, secrets.token_bytes(16), client_id="pager")
    hashes = [_h(i) for i in range(600)]
    assert table.prepare_store(hashes) is not None
    table.complete_store(hashes)
    table.prepare_load(hashes[:300])  # the 300 least recent blocks are pinned (I3)
    out = table.prepare_store([_h(1000), _h(1001)])
    assert out is not None and out.block_hashes_evicted == hashes[300:302]  # L3 past two pages
    table.complete_load(hashes[:300])
