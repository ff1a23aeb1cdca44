"""Further tiers behind the CPU tier (T1–T6): a bounded disk tier and a shared Redis tier."""

from .blockfile import BlockFile, IOFaults
from .disk import DiskBlockTable, DiskLoadStoreSpec, DiskTier
from .jobs import LOOKUP_HIT, LOOKUP_MISS, LOOKUP_RETRY, TierJobResult
from .records import RecordError, layout_digest

__all__ = [
    "BlockFile",
    "DiskBlockTable",
    "DiskLoadStoreSpec",
    "DiskTier",
    "IOFaults",
    "LOOKUP_HIT",
    "LOOKUP_MISS",
    "LOOKUP_RETRY",
    "RecordError",
    "TierJobResult",
    "layout_digest",
]
