"""The executable reference model of the KV-offloading contract (CONTRACT.md beside this file).

Small, plain, obviously correct: the oracle every other part of kvoffload is judged by.
Nothing here imports ``kvoffload.impl`` or ``kvoffload.conformance``.

Where each clause lives (exactly: each implementing class or function carries
``@implements(...)``, and ``kvoffload contract --where`` prints those markers):

- vocabulary, ``BlockStatus``, specs, events: ``types``
- M0, M9 (reading hash arguments): ``hashes``
- M1–M10, I1–I8: ``manager``
- B1–B4: ``backend``
- P1–P6, L1–L3: ``lru``; N9 (vLLM 0.33's request-rank LRU order): ``rank_lru``; A1–A6: ``arc``; F1–F7: ``s3fifo``; V1–V6: ``sieve``
- S1–S4: ``offloading_spec``
- T1–T6 (further tiers, sharing, leases): ``tiers``
- C1–C6 (caller protocol), H1–H4 (copy handlers): ``interfaces``; the expected state of
  copy handlers (H1–H3, E1; needs torch, so not imported here): ``handler_model``;
  E1, E2 (end to end) are properties of a manager and handlers together, checked by the
  conformance suite and the tests.
"""

from .arc import ReferenceARCPolicy
from .backend import ReferenceCPUBackend
from .clauses import Clause, contract_clauses, contract_text
from .errors import ContractViolation
from .hashes import read_hashes
from .interfaces import Backend, CachePolicy, OffloadingHandler, OffloadingManager
from .lru import ReferenceLRUPolicy
from .manager import POLICIES, ReferenceManager, make_reference_policy
from .rank_lru import ReferenceRequestRankLRUPolicy
from .offloading_spec import OffloadingSpec
from .s3fifo import ReferenceS3FIFOPolicy
from .sieve import ReferenceSIEVEPolicy
from .tiers import ReferenceSharedTier, ReferenceTier
from .types import (
    BlockHash,
    BlockIdsLoadStoreSpec,
    BlockStatus,
    CPULoadStoreSpec,
    GPULoadStoreSpec,
    LoadStoreSpec,
    OffloadingEvent,
    PrepareStoreOutput,
    TransferResult,
    TransferSpec,
)

__all__ = [
    "Backend",
    "BlockHash",
    "BlockIdsLoadStoreSpec",
    "BlockStatus",
    "CPULoadStoreSpec",
    "CachePolicy",
    "Clause",
    "ContractViolation",
    "GPULoadStoreSpec",
    "LoadStoreSpec",
    "OffloadingEvent",
    "OffloadingHandler",
    "OffloadingManager",
    "OffloadingSpec",
    "POLICIES",
    "PrepareStoreOutput",
    "ReferenceARCPolicy",
    "ReferenceCPUBackend",
    "ReferenceLRUPolicy",
    "ReferenceRequestRankLRUPolicy",
    "ReferenceManager",
    "ReferenceS3FIFOPolicy",
    "ReferenceSIEVEPolicy",
    "ReferenceSharedTier",
    "ReferenceTier",
    "TransferResult",
    "TransferSpec",
    "contract_clauses",
    "contract_text",
    "make_reference_policy",
    "read_hashes",
]
