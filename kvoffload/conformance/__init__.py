"""The conformance suite: lockstep stateful testing of any manager, backend, policy or
handler against the reference model in ``kvoffload.spec``."""
