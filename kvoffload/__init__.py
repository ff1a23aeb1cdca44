"""kvoffload: the KV-cache offloading core for vLLM, proven to keep its contract.

- ``kvoffload.spec``: the executable reference model and the shared interfaces.
- ``kvoffload.conformance``: the lockstep conformance suite for any implementation.
- ``kvoffload.impl``: the production implementation (numba manager, torch copy handlers).

Importing ``kvoffload`` needs neither torch nor vLLM.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

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
    ReferenceRequestRankLRUPolicy,
    ReferenceManager,
    ReferenceS3FIFOPolicy,
    ReferenceSIEVEPolicy,
    ReferenceSharedTier,
    ReferenceTier,
    TransferResult,
    TransferSpec,
)

if TYPE_CHECKING:
    __version__: str
    from .impl import CPUOffloadingManager, CPUOffloadingSpec
    from .replay import read_trace, replay_hits
    from .impl.tiers import DiskTier

# The production classes load numba; import them on first use so that
# `import kvoffload` stays light (and works where only the model is wanted).
_LAZY = {
    "CPUOffloadingManager": "kvoffload.impl",
    "CPUOffloadingSpec": "kvoffload.impl",
    "read_trace": "kvoffload.replay",
    "replay_hits": "kvoffload.replay",
    "DiskTier": "kvoffload.impl.tiers",
}


def _version() -> str:
    # importlib.metadata costs tens of milliseconds of start-up: read only when asked.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kvoffload")
    except PackageNotFoundError:  # running from a source tree that was not installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    if name == "__version__":
        value = _version()
        globals()["__version__"] = value
        return value
    raise AttributeError(f"module 'kvoffload' has no attribute {name!r}")

__all__ = [
    "POLICIES",
    "Backend",
    "BlockHash",
    "CPUOffloadingManager",
    "CPUOffloadingSpec",
    "DiskTier",
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
    "ReferenceRequestRankLRUPolicy",
    "ReferenceManager",
    "ReferenceS3FIFOPolicy",
    "ReferenceSIEVEPolicy",
    "ReferenceSharedTier",
    "ReferenceTier",
    "TransferResult",
    "TransferSpec",
    "__version__",
    "read_trace",
    "replay_hits",
]
