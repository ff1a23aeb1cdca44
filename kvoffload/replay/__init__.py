"""Hit ratios of the contract's policies on request traces (``kvoffload replay``).

- ``traces``: reading Mooncake JSONL and plain-text traces into dense integer keys.
- ``simulate``: the replay semantics, the compiled simulators of every policy and the
  two bounds (an infinite cache, Belady's MIN), and the reference replay through
  ``ReferenceManager`` that the compiled ones are checked against.
- ``cli``: the command (table, progress bar, PNG plot with the ``plot`` extra).
"""

from .simulate import REPLAY_POLICIES, replay_hits, replay_reference
from .traces import Trace, read_trace

__all__ = ["REPLAY_POLICIES", "Trace", "read_trace", "replay_hits", "replay_reference"]
