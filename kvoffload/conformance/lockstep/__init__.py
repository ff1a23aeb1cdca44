"""Lockstep machines: a target and the reference model driven call by call (hypothesis).

One machine per kind of target (manager, policy, backend; copy handlers and tiers have
their own seeded lockstep checks), the strategies that steer them, and the adapters for
targets written against vLLM's own interfaces (``vllm/``, K1–K9). Verdicts come from
``kvoffload.conformance.judge``; failures are rendered by ``kvoffload.conformance.reports``.
"""
