"""The disk tier (T1–T3, E1, E2 with I/O faults) against the reference model of a tier."""

from __future__ import annotations

import hashlib
import itertools
import mmap
import os
from pathlib import Path

import pytest

from kvoffload.conformance.lockstep.tiers import check_tier
from kvoffload.impl.tiers import BlockFile, DiskTier, IOFaults, layout_digest
from kvoffload.impl.tiers.faultrun import payload_of, run_faults
from kvoffload.impl.tiers.records import RecordError, pack_header, record_size, verify_record
from kvoffload.spec import ContractViolation

SIZE = 4096 + 512  # not a multiple of the page: records still fill whole aligned slots


def _h(i: int) -> bytes:
    return hashlib.sha256(str(i).encode()).digest()


def _store(tier: DiskTier, job: int, hashes: list[bytes]) -> tuple[bool, list[bytes]]:
    tier.submit_store(job, hashes, [memoryview(payload_of(h, SIZE)) for h in hashes])
    tier.drain()
    (result,) = tier.get_finished()
    return result.success, result.done


def _load(tier: DiskTier, job: int, hashes: list[bytes]) -> dict[bytes, bytes]:
    outs = [bytearray(SIZE) for _ in hashes]
    tier.submit_load(job, hashes, [memoryview(o) for o in outs])
    tier.drain()
    (result,) = tier.get_finished()
    return {h: bytes(o) for h, o in zip(hashes, outs) if h in result.done}


def _leaks(tier: DiskTier) -> int:
    blocks = tier.manager.blocks()
    in_flight = sum(block.ref_cnt != 0 for block in blocks.values())
    return in_flight + (tier.manager.num_blocks - tier.manager.get_num_free_blocks() - len(blocks))


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_T1_T2_disk_tier_conforms_in_lockstep_with_the_model(tmp_path: Path, policy: str) -> None:
    counter = itertools.count()

    def factory(num_blocks: int, policy: str) -> DiskTier:
        return DiskTier(tmp_path / f"blocks{next(counter)}", num_blocks, SIZE, policy=policy)

    assert check_tier(factory, policy=policy, payload_bytes=SIZE) == []


def test_T1_check_tier_catches_a_tier_that_serves_unverified_reads(tmp_path: Path) -> None:
    def factory(num_blocks: int, policy: str) -> DiskTier:
        tier = DiskTier(tmp_path / "blocks", num_blocks, SIZE, policy=policy)
        tier.file.__class__ = _UncheckedFile
        return tier

    findings = check_tier(factory, seeds=2, payload_bytes=SIZE)
    assert findings and "T1" in findings[0]


def test_T2_failed_write_is_a_failed_store(tmp_path: Path) -> None:
    tier = DiskTier(tmp_path / "blocks", 4, SIZE, faults=IOFaults(write_error=1.0))
    tier.manager.core.enable_events = True
    ok, done = _store(tier, 1, [_h(1), _h(2)])
    assert (ok, done) == (False, [])
    assert tier.lookup([_h(1)]) == 0 and tier.lookup_one(_h(1)) == "miss"
    assert tier.manager.get_num_free_blocks() == 4  # M7: freed at once
    assert list(tier.manager.take_events()) == []  # never announced
    tier.file.faults = None
    assert _store(tier, 2, [_h(1)]) == (True, [_h(1)])
    assert _load(tier, 3, [_h(1)]) == {_h(1): payload_of(_h(1), SIZE)}


@pytest.mark.parametrize("fault", ["torn_write", "bit_flip", "read_error"])
def test_T1_a_damaged_record_is_never_served_and_is_quarantined(tmp_path: Path, fault: str) -> None:
    faults = IOFaults()
    tier = DiskTier(tmp_path / "blocks", 2, SIZE, faults=faults)
    setattr(faults, fault, 0.0 if fault == "read_error" else 1.0)
    assert _store(tier, 1, [_h(1)]) == (True, [_h(1)])  # the damage is silent at write time
    setattr(faults, fault, 1.0)
    outs = [bytearray(b"\x07" * SIZE)]
    tier.submit_load(2, [_h(1)], [memoryview(outs[0])])
    tier.drain()
    (result,) = tier.get_finished()
    assert (result.success, result.done) == (False, [])
    assert outs[0] == bytearray(b"\x07" * SIZE)  # the destination is untouched
    assert tier.lookup([_h(1)]) == 0 and _h(1) in tier.quarantined
    with pytest.raises(ContractViolation, match="T1"):
        tier.submit_load(3, [_h(1)], [memoryview(bytearray(SIZE))])
    setattr(faults, fault, 0.0)
    assert _store(tier, 4, [_h(2), _h(3)])[0]  # evicts the quarantined block, reuses its slot
    assert not tier.quarantined
    assert _load(tier, 5, [_h(3)]) == {_h(3): payload_of(_h(3), SIZE)}
    tier.close()


def test_T3_records_of_another_layout_or_hash_fail_verification() -> None:
    payload = payload_of(b"x", 100)
    buffer = memoryview(bytearray(record_size(100)))
    buffer[record_size(0) :] = payload
    ours = layout_digest("m", "bfloat16", (2, 16, 8, 128))
    pack_header(buffer, ours, b"h" * 32, 100)
    assert bytes(verify_record(buffer, ours, b"h" * 32, 100)) == payload
    with pytest.raises(RecordError, match="T3"):
        verify_record(buffer, layout_digest("m", "float16", (2, 16, 8, 128)), b"h" * 32, 100)
    with pytest.raises(RecordError, match="T1"):
        verify_record(buffer, ours, b"h" * 31, 100)  # a prefix of the stored hash (I8)


def test_E1_E2_disk_fault_run(tmp_path: Path) -> None:
    faults = IOFaults(seed=3, write_error=0.05, torn_write=0.05, bit_flip=0.05, read_error=0.05)
    tier = DiskTier(tmp_path / "blocks", 24, SIZE, policy="arc", faults=faults)
    report = run_faults(tier, steps=600, seed=1, leaks=lambda: _leaks(tier))
    assert report.ok(), report
    assert report.blocks_loaded > 100 and report.failed_load_blocks > 0 and report.failed_store_jobs > 0
    assert min(faults.injected.values()) > 0 and len(faults.injected) == 4
    tier.close()


def test_disk_tier_uses_O_DIRECT_where_the_file_system_allows(tmp_path: Path) -> None:
    tier = DiskTier(tmp_path / "blocks", 2, SIZE)
    assert tier.file.slot_bytes % 4096 == 0 and tier.file.slot_bytes >= record_size(SIZE)
    assert (tmp_path / "blocks").stat().st_size == 2 * tier.file.slot_bytes  # preallocated
    buffered = DiskTier(tmp_path / "other", 2, SIZE, direct=False)
    assert not buffered.file.direct
    tier.close()
    buffered.close()


def test_T1_checksum_changes_on_every_single_bit_flip_and_on_a_tear() -> None:
    from kvoffload.impl.tiers.checksum import checksum64

    data = bytearray(payload_of(b"c", 203))  # words, and a tail of 3 bytes
    reference = checksum64(data)
    for position in range(len(data)):
        for bit in range(8):
            data[position] ^= 1 << bit
            assert checksum64(data) != reference, (position, bit)
            data[position] ^= 1 << bit
    torn = data[:100] + bytes(103)
    assert checksum64(torn) != reference and checksum64(data[:-1]) != reference


class _UncheckedFile(BlockFile):
    """A planted bug: reads copy the payload without verifying the record (breaks T1)."""

    def read(self, slot: int, block_hash: bytes, out: memoryview) -> None:
        staging = memoryview(mmap.mmap(-1, self.slot_bytes))
        os.preadv(self._fd, [staging], slot * self.slot_bytes)
        out[:] = staging[self.payload_at : self.payload_at + len(out)]


def test_E1_the_fault_run_catches_a_tier_that_skips_verification(tmp_path: Path) -> None:
    faults = IOFaults(seed=5, bit_flip=0.2, torn_write=0.2)
    tier = DiskTier(tmp_path / "blocks", 24, SIZE, faults=faults)
    tier.file.__class__ = _UncheckedFile
    report = run_faults(tier, steps=300, seed=4, leaks=lambda: _leaks(tier))
    assert report.corrupt_loads > 0 and not report.ok()
    tier.close()


def test_E2_simulate_tier_cli_reports_no_corrupt_load_and_no_leak() -> None:
    from click.testing import CliRunner

    from kvoffload.cli import main

    result = CliRunner().invoke(main, ["simulate-tier", "--steps", "200", "--seed", "1"])
    assert result.exit_code == 0, result.output
    assert "corrupt loads: 0" in result.output and "leaked blocks: 0" in result.output
    assert "write_error" in result.output and "torn_write" in result.output


PAGES = 2 * 4096  # a whole number of pages, as vLLM's shared-region rows are


@pytest.mark.parametrize("direct", [True, False])
def test_T1_page_aligned_payloads_are_written_in_place_and_still_verified(tmp_path: Path, direct: bool) -> None:
    """A page-aligned payload of whole pages is written from the caller's buffer (no
    staging copy): it reads back byte for byte after the buffer changed, a damaged record
    of it is never served (the destination keeps its bytes), and a payload that is not
    page-aligned takes the staging path under O_DIRECT with the same result."""
    tier = DiskTier(tmp_path / "blocks", 4, PAGES, direct=direct)
    rows = mmap.mmap(-1, 3 * PAGES)  # page-aligned, like vLLM's SharedOffloadRegion
    hashes = [_h(i) for i in range(3)]
    for i, h in enumerate(hashes):
        rows[i * PAGES : (i + 1) * PAGES] = payload_of(h, PAGES)
    views = [memoryview(rows)[i * PAGES : (i + 1) * PAGES] for i in range(2)]
    assert all(tier.file._zero_copy(v) for v in views)
    tier.submit_store(1, hashes[:2], views)
    tier.drain()
    assert [r.success for r in tier.get_finished()] == [True]
    rows[: 2 * PAGES] = bytes(2 * PAGES)  # what was written no longer depends on the buffer
    outs = [bytearray(PAGES) for _ in range(2)]
    tier.submit_load(2, hashes[:2], [memoryview(o) for o in outs])
    tier.drain()
    assert [r.success for r in tier.get_finished()] == [True]
    assert [bytes(o) for o in outs] == [payload_of(h, PAGES) for h in hashes[:2]]

    tier.damage(hashes[0])
    out = bytearray(b"\x07" * PAGES)
    tier.submit_load(3, hashes[:1], [memoryview(out)])
    tier.drain()
    assert [r.success for r in tier.get_finished()] == [False] and out == b"\x07" * PAGES

    spare = mmap.mmap(-1, PAGES + 4096)
    spare[512 : 512 + PAGES] = payload_of(hashes[2], PAGES)
    shifted = memoryview(spare)[512 : 512 + PAGES]
    assert tier.file._zero_copy(shifted) == (not tier.file.direct)
    tier.submit_store(4, hashes[2:], [shifted])
    tier.drain()
    assert [(r.success, r.done) for r in tier.get_finished()] == [(True, hashes[2:])]
    back = bytearray(PAGES)
    tier.submit_load(5, hashes[2:], [memoryview(back)])
    tier.drain()
    assert [r.success for r in tier.get_finished()] == [True] and back == payload_of(hashes[2], PAGES)
    tier.close()


def test_E1_E2_disk_fault_run_with_in_place_writes(tmp_path: Path) -> None:
    """The fault run over payloads of whole pages on a buffered file: every write that is
    not torn goes out in place; flipped bits, torn writes, failed writes and reads still
    end in no corrupt load and no leak."""
    faults = IOFaults(seed=3, write_error=0.05, torn_write=0.05, bit_flip=0.05, read_error=0.05)
    tier = DiskTier(tmp_path / "blocks", 24, PAGES, policy="arc", direct=False, faults=faults)
    assert tier.file._zero_copy(memoryview(payload_of(b"x", PAGES)))
    report = run_faults(tier, steps=300, seed=1, leaks=lambda: _leaks(tier))
    assert report.ok(), report
    assert report.failed_load_blocks > 0 and len(faults.injected) == 4
    tier.close()
