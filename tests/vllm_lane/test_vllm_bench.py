"""``kvoffload bench`` under the installed vLLM, 0.32 or 0.33 (the lane runs both).

The bench puts vLLM's own manager beside ours (issue 12, item 3). Its column must name the
release that ran, and its LRU must give our answers exactly on either release: ours keeps
the installed vLLM's order (L1 on 0.32, N9 on 0.33). Under 0.33 the plain-Python floor,
which keeps L1, is what may answer differently: the bench must say so, not fail. The
release is told here from what the install offers (0.33's reset fence, 0.33's ``lru.py``),
not from the version string the bench reads.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("vllm")

from lru_rank_mutants import has_request_rank_lru  # noqa: E402

from kvoffload.impl.bench.conventions import compare, contenders, vllm_calls  # noqa: E402
from kvoffload.impl.bench.interface import Comparison, print_comparisons  # noqa: E402
from kvoffload.impl.vllm.features import RESET_FENCE  # noqa: E402
from kvoffload.traces import TraceKeys, read_trace  # noqa: E402

TRACE = Path(__file__).resolve().parents[1] / "data" / "mooncake_synthetic_head120.jsonl"
#: A capacity at which 0.33's request-rank LRU evicts other keys than L1 on this trace
#: (found by replaying it at 64..2048 blocks: 512 and 1024 differ, the others do not).
DIFFERING_CAPACITY = 512


def _vllm_contender(policy: str):  # type: ignore[no-untyped-def]
    calls = vllm_calls()
    assert calls is not None
    return calls, next(c for c in contenders(16, policy, calls, False) if c.label.startswith("vLLM"))


def test_bench_names_the_installed_release() -> None:
    calls, contender = _vllm_contender("lru")
    assert contender.label == calls.label == ("vLLM 0.33" if RESET_FENCE else "vLLM 0.32")


def test_vllm_lru_is_held_to_our_answers_on_both_releases() -> None:
    calls, lru = _vllm_contender("lru")
    _, arc = _vllm_contender("arc")
    assert lru.must_agree is True  # 0.32: L1 like ours; 0.33: N9 like ours
    assert arc.must_agree is False  # vLLM's ARC is another algorithm (K5/K6 aside)
    floor = next(c for c in contenders(16, "lru", calls, False) if c.label.startswith("floor"))
    assert floor.must_agree is not has_request_rank_lru()  # the floor keeps L1


def test_trace_replay_through_vllm_lru_gives_our_answers_and_033_marks_the_floor() -> None:
    """At a capacity where N9 evicts other keys than L1: vLLM's own LRU answers as ours on
    either release (an earlier ``bench trace`` under 0.33 stopped with "answers differ",
    when ours kept L1); under 0.33 the L1 floor is marked "(may differ)"."""
    calls = vllm_calls()
    assert calls is not None
    make_keys = TraceKeys(16)
    requests = [keys for keys in (make_keys.keys(r) for r in read_trace(str(TRACE), None)) if keys]
    chosen = [c for c in contenders(DIFFERING_CAPACITY, "lru", calls, False) if c.convention == "vLLM interface"]
    runs, differs = compare(requests, DIFFERING_CAPACITY, "lru", calls, False, chosen)
    if has_request_rank_lru():
        assert differs == ["floor (OrderedDict LRU) (vLLM interface) (may differ)"]
    else:
        assert differs == []
    from rich.console import Console

    console = Console(record=True, width=250)
    print_comparisons(console, "replay", [Comparison("trace", DIFFERING_CAPACITY, "lru", runs, differs, 1)])
    assert f"{calls.label} (vLLM if.)" in console.export_text()
