"""The conformance suite for targets written against vLLM's own interfaces (K1–K9).

A manager written for vLLM 0.32/0.33's per-key ``OffloadingManager`` (``lookup(key,
req_context) -> LookupResult``, ``PrepareStoreOutput(keys_to_store, store_spec,
evicted_keys)``, ``OffloadingEvent(keys, medium, removed[, metadata_only])``) or for its
``CachePolicy`` (``touch(keys, req_context)``; 0.33: ``insert(key, chunk, req_context)``)
runs in lockstep with the reference model through an adapter that presents it with the
contract's batch interface (``as_contract_manager``, ``as_contract_policy``); the
per-key rules only that interface has are checked by ``VllmManagerMachine``.

These modes need vLLM importable (``require_vllm``); the rest of the suite does not.
"""

from __future__ import annotations

from .adapter import VllmManagerView, VllmPolicyView
from .detect import INTERFACES, VllmUnavailable, detect_interface, require_vllm

__all__ = ["INTERFACES", "VllmUnavailable", "detect_interface", "require_vllm", "as_contract_manager", "as_contract_policy"]

#: A vLLM-interface manager seen through the contract's batch interface (K1–K9); the
#: adapter itself, under the name the reproductions call (vLLM is needed to build one).
as_contract_manager = VllmManagerView
#: A vLLM ``CachePolicy`` seen through the contract's policy interface (K8).
as_contract_policy = VllmPolicyView
