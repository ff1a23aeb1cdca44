"""Drive vLLM's real ``Scheduler`` and ``OffloadingConnector`` (scheduler role) without a
model: the engine's loop with a stand-in for the model runner that reports every transfer
job as done one step later (what the worker connector does) and samples token 1.

Works with vLLM 0.32 and with 0.33's pure-Python modules over the 0.32 environment
(``.ci/vllm033_overlay.sh``). vLLM is imported lazily (the default run never imports this).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BLOCK = 16  # tokens per device block (and per offloaded chunk)
LAYERS = ("model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn")


def tiny_model_dir(path: Path) -> Path:
    """A Llama ``config.json`` (no weights): all ``ModelConfig`` reads."""
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "vocab_size": 512,
        "max_position_embeddings": 512,
        "torch_dtype": "float32",
    }
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(config))
    return path


@dataclass
class Driver:
    scheduler: Any
    config: Any = None
    stats: list[dict[str, Any]] = field(default_factory=list)  # kv_connector_stats per step
    _done_jobs: dict[int, int] = field(default_factory=dict)
    _done_loads: set[str] = field(default_factory=set)
    _hasher: Any = None

    @property
    def manager(self) -> Any:
        return self.scheduler.connector.connector_scheduler.manager

    def add(self, req_id: str, tokens: list[int], max_tokens: int = 1) -> None:
        from vllm import SamplingParams
        from vllm.v1.request import Request

        params = SamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=True)
        self.scheduler.add_request(
            Request(req_id, tokens, params, None, block_hasher=self._hasher)
        )

    def step(self) -> Any:
        from vllm.distributed.kv_transfer.kv_connector.v1.offloading.common import OffloadingWorkerMetadata
        from vllm.v1.outputs import KVConnectorOutput, ModelRunnerOutput

        out = self.scheduler.schedule()
        meta = out.kv_connector_metadata
        # 0.33's sync loads (sync_load_budget_bytes): the worker submits them expedited and
        # waits within the step, so they are reported in this step's output.
        sync_jobs = [job_id for job_id, job in (meta.load_jobs.items() if meta else ()) if getattr(job, "sync", False)]
        for job_id in sync_jobs:
            self._done_jobs[job_id] = 1
        req_ids = list(out.num_scheduled_tokens)
        sampled = []
        for req_id in req_ids:
            request = self.scheduler.requests[req_id]
            done = request.num_computed_tokens + out.num_scheduled_tokens[req_id]
            sampled.append([1] if done >= request.num_tokens else [])
        connector_output = KVConnectorOutput(
            finished_recving=set(self._done_loads),
            kv_connector_worker_meta=OffloadingWorkerMetadata(completed_jobs=dict(self._done_jobs)),
        )
        self._done_jobs, self._done_loads = {}, set()
        if meta is not None:
            for job_id, job in meta.load_jobs.items():
                if job_id in sync_jobs:
                    continue
                self._done_jobs[job_id] = 1
                self._done_loads.add(job.req_id)
            for job_id in meta.store_jobs:
                self._done_jobs[job_id] = 1
        runner = ModelRunnerOutput(
            req_ids=req_ids,
            req_id_to_index={r: i for i, r in enumerate(req_ids)},
            sampled_token_ids=sampled,
            kv_connector_output=connector_output,
        )
        outputs = self.scheduler.update_from_output(out, runner)
        for engine_outputs in outputs.values():
            scheduler_stats = getattr(engine_outputs, "scheduler_stats", None)
            payload = getattr(scheduler_stats, "kv_connector_stats", None)
            if payload:
                self.stats.append(payload)
        return out

    def run(self, max_steps: int = 50) -> None:
        """Steps until no request is left and no transfer is outstanding."""
        for _ in range(max_steps):
            self.step()
            if not self.scheduler.has_requests() and not self._done_jobs and not self._done_loads:
                self.step()  # deliver the last completions
                return
        raise AssertionError(f"requests still running after {max_steps} steps")


def build(tmp_path: Path, extra: dict[str, Any], *, device_blocks: int = 14, events: bool = False) -> Driver:
    """A real ``Scheduler`` with the ``OffloadingConnector`` over kvoffload's spec."""
    import torch
    from vllm.config import (
        CacheConfig,
        DeviceConfig,
        KVEventsConfig,
        KVTransferConfig,
        ModelConfig,
        SchedulerConfig,
        VllmConfig,
    )
    from vllm.utils.hashing import sha256
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec, KVCacheTensor
    from vllm.v1.structured_output import StructuredOutputManager

    model = ModelConfig(
        model=str(tiny_model_dir(tmp_path / "model")), skip_tokenizer_init=True, dtype="float32", max_model_len=256
    )
    transfer = KVTransferConfig(
        kv_connector="OffloadingConnector",
        kv_role="kv_both",
        kv_connector_extra_config={"spec_name": "KVOffloadingSpec", "spec_module_path": "kvoffload.impl.vllm", **extra},
    )
    config = VllmConfig(
        model_config=model,
        cache_config=CacheConfig(block_size=BLOCK, enable_prefix_caching=True),
        scheduler_config=SchedulerConfig(
            max_num_seqs=8, max_num_batched_tokens=1024, max_model_len=256, is_encoder_decoder=False
        ),
        kv_transfer_config=transfer,
        kv_events_config=KVEventsConfig(enable_kv_cache_events=events, publisher="null") if events else None,
        device_config=DeviceConfig("cpu"),
    )
    config.cache_config.num_gpu_blocks = device_blocks  # what the engine sets after profiling
    spec = FullAttentionSpec(block_size=BLOCK, num_kv_heads=2, head_size=32, dtype=torch.float32)
    page = spec.page_size_bytes
    cache = KVCacheConfig(
        num_blocks=device_blocks,
        kv_cache_tensors=[
            KVCacheTensor(size=page * device_blocks, layers=[name], layer_stride=page * device_blocks, block_stride=page)
            for name in LAYERS
        ],
        kv_cache_groups=[KVCacheGroupSpec(list(LAYERS), spec)],
    )
    scheduler = Scheduler(
        vllm_config=config,
        kv_cache_config=cache,
        structured_output_manager=StructuredOutputManager(config),
        block_size=BLOCK,
        log_stats=True,
    )
    init_none_hash(sha256)
    return Driver(scheduler=scheduler, config=config, _hasher=get_request_block_hasher(BLOCK, sha256))


def prometheus_frontend(config: Any) -> tuple[Any, Any]:
    """vLLM's Prometheus side of the connector's stats (what ``vllm serve`` builds), on a
    registry of its own: ``(prom_metrics, registry)``."""
    import functools

    import prometheus_client
    from vllm.distributed.kv_transfer.kv_connector.v1.offloading_connector import OffloadingConnector

    registry = prometheus_client.CollectorRegistry()
    kinds = (prometheus_client.Counter, prometheus_client.Gauge, prometheus_client.Histogram)
    metric_types = {kind: functools.partial(kind, registry=registry) for kind in kinds}
    prom = OffloadingConnector.build_prom_metrics(config, metric_types, ["model_name", "engine"], {0: ["tiny", "0"]})
    return prom, registry
