"""What a tier reports about a finished job (vLLM's ``JobResult`` without vLLM)."""

from __future__ import annotations

import attrs

from ...spec.types import BlockHash

__all__ = ["TierJobResult", "LOOKUP_HIT", "LOOKUP_MISS", "LOOKUP_RETRY"]

LOOKUP_HIT = "hit"
LOOKUP_MISS = "miss"
LOOKUP_RETRY = "retry"  # a store of the block is in flight (vLLM's RETRY)


@attrs.frozen
class TierJobResult:
    """``success`` when every block of the job landed (store) or verified (load).

    ``done``: the hashes that landed or were served; a partial load serves a subset
    (T1), a partial store announces a subset (T2).
    """

    job_id: int
    success: bool
    done: list[BlockHash]
    nbytes: int = 0
