"""The N family of the contract: our manager behind vLLM's ``OffloadingConnector``.

The reference model has no vLLM in it (``spec`` imports nothing but the standard
library and numpy), so these clauses are executable where vLLM is: the adapter in
``kvoffload/impl/vllm/`` implements them and ``tests/vllm_lane/`` checks each one, with
vLLM's own ``CPUOffloadingManager`` as the judge where vLLM has the behaviour.

- N1 reset fence (0.33 ``on_reset_flushed``): ``impl/vllm/reset_fence.py``;
- N2 admission (``store_threshold``, ``max_tracker_size``): ``impl/vllm/admission.py``;
- N3 metrics (``get_stats``, ``build_metric_definitions``, ``config_info``):
  ``impl/vllm/stats.py``;
- N4 a failed store's release as a ``metadata_only`` event: ``impl/vllm/manager.py``;
- N5 the manager's ``lock``: ``impl/vllm/manager.py``;
- N6 ``submit_load(..., expedited)``: ``impl/vllm/worker.py``;
- N7 re-offers from chunk 0 and ``on_schedule_end``: M5 on the core manager;
- N8 several KV cache groups: ``impl/vllm/worker.py`` and ``impl/copy/indices.py``
  (``group_rows``).

Which vLLM has which interface is detected in ``impl/vllm/features.py``.
"""

from __future__ import annotations

#: The clause ids of the family, in order (``kvoffload contract`` lists their text).
CONNECTOR_CLAUSES = ("N1", "N2", "N3", "N4", "N5", "N6", "N7", "N8")
