"""The mutation targets of vLLM's files name the release they mutate (``vllm-cpu``: 0.32,
``vllm033-cpu``: 0.33): a mutant's key is its line in that release's file, so the
originals must come from it. Run in this lane under 0.32 and again under the 0.33 overlay."""

from __future__ import annotations

import sys

import pytest

vllm = pytest.importorskip("vllm")

from kvoffload.mutation.scratch import source_dir  # noqa: E402
from kvoffload.mutation.targets import VLLM033_CPU, VLLM_CPU  # noqa: E402

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

