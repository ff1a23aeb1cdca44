"""N9: vLLM 0.33's request-rank LRU order, judged exactly.

Under vLLM 0.33 (the overlay lane) the suite detects 0.33's ``LRUCachePolicy`` and judges
its manager by N9, with evictions steered into open positioned requests; bugs planted in
the RANK logic of vLLM's own ``lru.py`` (built from the installed source, one line each:
``lru_rank_mutants.py``) are caught at default settings with N9 first. Under 0.32 the
same targets are judged by recency (L1). Our manager keeps the installed vLLM's order (its
``lru_order``: auto) and is judged by it, N9 on 0.33."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")

from click.testing import CliRunner  # noqa: E402
from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager  # noqa: E402

from kvoffload.conformance import check_manager  # noqa: E402
from kvoffload.conformance.lockstep.vllm.detect import detect_lru_order  # noqa: E402
from kvoffload.conformance.runner import resolve_lru_order  # noqa: E402
from lru_rank_mutants import MUTANTS, has_request_rank_lru, mutant_factory  # noqa: E402

only_033 = pytest.mark.skipif(not has_request_rank_lru(), reason="vLLM 0.33's LRU; this vLLM's LRU is 0.32's")


def vllm_lru(num_blocks: int, enable_events: bool = False) -> CPUOffloadingManager:
    return CPUOffloadingManager(num_blocks, cache_policy="lru", enable_events=enable_events)


def test_N9_lru_order_is_detected_per_vllm_version_and_declared_by_ours() -> None:
    from vllm.v1.kv_offload.cpu.policies.lru import LRUCachePolicy

    from kvoffload.impl.vllm import make_manager

    expected = "request-rank" if has_request_rank_lru() else "recency"
    assert detect_lru_order(vllm_lru(2)) == expected
    assert detect_lru_order(LRUCachePolicy(cache_capacity=2)) == expected
    assert detect_lru_order(make_manager(2, "lru")) == expected  # declared: ours follows vLLM's own
    assert detect_lru_order(make_manager(2, "lru", lru_order="recency")) == "recency"
    assert detect_lru_order(make_manager(2, "arc")) == "recency"
    with pytest.raises(ValueError, match="lru_order"):
        make_manager(2, "arc", lru_order="request-rank")
    assert resolve_lru_order(vllm_lru(2), "vllm", "arc", "auto") == "-"
    assert resolve_lru_order(vllm_lru(2), "vllm", "lru", "recency") == "recency"  # forced
    with pytest.raises(ValueError, match="N9"):
        resolve_lru_order(vllm_lru(2), "contract", "lru", "request-rank")
    with pytest.raises(ValueError, match="N9"):
        resolve_lru_order(vllm_lru(2), "vllm", "arc", "request-rank")


@only_033
def test_N9_ours_conforms_by_request_rank_under_vllm033() -> None:
    """Our manager on 0.33 (``lru_order`` auto: N9), default settings: judged by N9 with
    evictions inside open positioned requests, nothing found."""
    from kvoffload.impl.vllm import make_manager

    def ours(num_blocks: int, enable_events: bool = False) -> Any:
        return make_manager(num_blocks, "lru", enable_events=enable_events)

    result = check_manager(ours, policy="lru")
    assert result.ok, result.report()
    assert result.lru_order == "request-rank"
    assert {"N9", "K5", "K7", "L3"} <= set(result.clauses_exercised)


@only_033
def test_N9_vllm033_lru_manager_conforms_by_request_rank() -> None:
    """vLLM 0.33's own manager and LRU, default settings: N9 judged, nothing found."""
    result = check_manager(vllm_lru, policy="lru")
    assert result.ok, result.report()
    assert result.interface == "vllm" and result.lru_order == "request-rank"
    assert {"N9", "K5", "K7", "L3"} <= set(result.clauses_exercised)
    assert "lru-order=request-rank" in result.summary()


@only_033
@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_N9_rank_bugs_planted_in_vllm033_lru_are_caught(name: str, tmp_path: Path) -> None:
    """Each one-line RANK bug in vLLM 0.33's ``lru.py`` is caught at default settings
    (seed 0; unshrunk to keep the lane short: the same verdict), N9 named first."""
    result = check_manager(mutant_factory(name, tmp_path), policy="lru", shrink=False)
    assert not result.ok and result.lru_order == "request-rank"
    assert result.clause == "N9", result.report()


def test_N9_cli_reports_the_lru_order(tmp_path: Path, monkeypatch: Any) -> None:
    from kvoffload.cli import main

    (tmp_path / "rank_lru_factory.py").write_text(
        "from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager\n"
        "def lru(num_blocks, enable_events=False):\n"
        "    return CPUOffloadingManager(num_blocks, cache_policy='lru', enable_events=enable_events)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    runner = CliRunner()
    result = runner.invoke(main, ["conform", "manager", "rank_lru_factory:lru", "--policy", "lru",
                                  "--max-examples", "5"])
    expected = "request-rank" if has_request_rank_lru() else "recency"
    assert result.exit_code == 0, result.output
    assert f"lru-order={expected}" in result.output
    bad = runner.invoke(main, ["conform", "manager", "rank_lru_factory:lru", "--policy", "arc",
                               "--lru-order", "request-rank", "--max-examples", "1"])
    assert bad.exit_code == 2 and "N9" in bad.output
