"""The mutation targets of vLLM's files name the release they mutate (``vllm-cpu``: 0.32,
``vllm033-cpu``: 0.33): a mutant's key is its line in that release's file, so the
originals must come from it. Run in this lane under 0.32 and again under the 0.33 overlay.
Their ``-mc`` twins judge the same mutants with the model checker (``check-exhaustive``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

vllm = pytest.importorskip("vllm")

from kvoffload.mutation.scratch import source_dir  # noqa: E402
from kvoffload.mutation.targets import VLLM033_CPU, VLLM033_CPU_MC, VLLM_CPU, VLLM_CPU_MC  # noqa: E402
from vllm_helpers import judge_mutant  # noqa: E402

RUNNING = "0.33" if vllm.__version__.startswith("0.33.") else "0.32"


def test_the_target_of_the_running_release_copies_its_files() -> None:
    target = VLLM033_CPU if RUNNING == "0.33" else VLLM_CPU
    lru = (source_dir(target, sys.executable) / "policies" / "lru.py").read_text(encoding="utf-8")
    # 0.33's LRU ranks keys by request (N9): its policy has on_request_access, 0.32's has not
    assert ("def on_request_access" in lru) is (RUNNING == "0.33")


def test_the_target_of_the_other_release_is_refused_with_the_way_to_run_it() -> None:
    other = VLLM_CPU if RUNNING == "0.33" else VLLM033_CPU
    with pytest.raises(ValueError, match=f"mutates vLLM {other.vllm_version}'s files, but .* imports vLLM {RUNNING}"):
        source_dir(other, sys.executable)


def test_the_model_checker_target_kills_a_mutant_of_the_running_release(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM's ``LRUCachePolicy.touch`` without its ``reversed`` (the last key ends up most
    recent, P4 wants the first): the original passes ``check-exhaustive`` of the policy and
    of the manager, the mutant is refuted by the first."""
    target = VLLM033_CPU_MC if RUNNING == "0.33" else VLLM_CPU_MC
    assert all(suite.capacity for runs in target.suites.values() for suite in runs)
    admission = [(s.store_threshold, s.max_tracker_size) for s in target.suites["manager.py"] if s.max_tracker_size]
    # N2 judged by the checker too: trackers of 1 and 2 keys, threshold 3 (above the lowest), and off
    assert admission == [(2, 1), (2, 2), (3, 1), (1, 1)]
    original, mutated = "self._update_recency(reversed(list(keys)))", "self._update_recency(list(keys))"
    assert judge_mutant(target, tmp_path, "policies/lru.py", original, mutated)[:2] == ([0], 1)
    said = capsys.readouterr().out
    assert said.count("conforms check-exhaustive") == 2, said
    assert "VIOLATES L" in said.split("conforms")[-1] and "--policies-only --capacity 3 --policy lru" in said, said
