"""Time-boxed drivers over the lockstep machines: ``fuzz`` (many seeds) and ``simulate``
(a scheduler loop with injected faults, E1/E2)."""
