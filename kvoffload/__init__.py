"""kvoffload: the KV-cache offloading core for vLLM, proven to keep its contract.

- ``kvoffload.spec``: the executable reference model and the shared interfaces.
- ``kvoffload.conformance``: the lockstep conformance suite for any implementation.
- ``kvoffload.impl``: the production implementation (numba manager, torch copy handlers).

Importing ``kvoffload`` needs neither torch nor vLLM.
"""

from importlib.metadata import PackageNotFoundError, version

from .spec import (
    POLICIES,
    Backend,
    BlockHash,
    BlockStatus,
    CachePolicy,
    ContractViolation,
    CPULoadStoreSpec,
    GPULoadStoreSpec,
    LoadStoreSpec,
    OffloadingEvent,
    OffloadingHandler,
    OffloadingManager,
    OffloadingSpec,
    PrepareStoreOutput,
    ReferenceARCPolicy,
    ReferenceCPUBackend,
    ReferenceLRUPolicy,
    ReferenceManager,
    TransferResult,
    TransferSpec,
)

try:
    __version__ = version("kvoffload")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0+unknown"

__all__ = [
    "POLICIES",
    "Backend",
    "BlockHash",
    "BlockStatus",
    "CPULoadStoreSpec",
    "CachePolicy",
    "ContractViolation",
    "GPULoadStoreSpec",
    "LoadStoreSpec",
    "OffloadingEvent",
    "OffloadingHandler",
    "OffloadingManager",
    "OffloadingSpec",
    "PrepareStoreOutput",
    "ReferenceARCPolicy",
    "ReferenceCPUBackend",
    "ReferenceLRUPolicy",
    "ReferenceManager",
    "TransferResult",
    "TransferSpec",
    "__version__",
]
