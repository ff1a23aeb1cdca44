"""The production implementation: numba-compiled manager and policies, CPU backend,
torch copy handlers, and the vLLM connector.

``CPUOffloadingManager`` is the fast manager (identical behaviour to
``kvoffload.spec.ReferenceManager``); ``CPUBackend``, ``LRUCachePolicy``,
``ARCCachePolicy``, ``S3FIFOCachePolicy`` and ``SIEVECachePolicy`` are stand-alone
components for composing other managers.
"""

from .components import ARCCachePolicy, CPUBackend, LRUCachePolicy, S3FIFOCachePolicy, SIEVECachePolicy
from .cpu_spec import CPUOffloadingSpec
from .fingerprint import FINGERPRINT_MODES, fingerprint_mask
from .manager import MANAGER_POLICIES, CPUOffloadingManager

__all__ = [
    "ARCCachePolicy",
    "CPUBackend",
    "CPUOffloadingManager",
    "CPUOffloadingSpec",
    "FINGERPRINT_MODES",
    "LRUCachePolicy",
    "MANAGER_POLICIES",
    "S3FIFOCachePolicy",
    "SIEVECachePolicy",
    "fingerprint_mask",
]
