"""The production implementation: numba-compiled manager and policies, CPU backend,
torch copy handlers, and the vLLM connector."""
