"""The benchmarks' floor and drivers: the plain-Python LRU gives the reference model's
answers, request by request, through the batch API (what ``bench manager`` and
``bench trace`` compare); a floor that answered differently would be no floor."""

from __future__ import annotations

from kvoffload.impl.bench.conventions import compare
from kvoffload.impl.bench.floor import FloorLRU
from kvoffload.impl.bench.manager import Workload


def test_floor_and_kvoffload_agree_with_the_reference_on_the_bench_workload() -> None:
    requests = Workload(400, 16, seed=3, suffix=bytes(4)).requests(3_000)
    runs, differs = compare(requests, 400, "lru", calls=None, reference=True)
    labels = {(run.label, run.convention) for run in runs}
    assert labels == {("floor (OrderedDict LRU)", "batch API"), ("kvoffload", "batch API"),
                      ("reference", "batch API")}
    assert differs == []
    lead = runs[0]
    assert lead.blocks == sum(map(len, requests)) and 0 < lead.hits < lead.blocks
    assert any(answer and answer[1] for _, answer in lead.answers)  # evictions happened


def test_arc_runs_are_compared_with_the_reference_and_the_floor_may_differ() -> None:
    requests = Workload(400, 16, seed=4, suffix=bytes(4)).requests(3_000)
    _, differs = compare(requests, 400, "arc", calls=None, reference=True)
    assert all(d.endswith("(may differ)") for d in differs)


def test_floor_refuses_a_store_when_nothing_is_evictable() -> None:
    floor = FloorLRU(2)
    a, b, c = b"a" * 36, b"b" * 36, b"c" * 36
    out = floor.prepare_store([a, b])
    assert out is not None and out[0] == [a, b] and out[2] == []
    assert floor.prepare_store([c]) is None  # both pending
    floor.complete_store({a, b})
    floor.prepare_load([a])
    out = floor.prepare_store([c])
    assert out is not None and out[2] == [b]  # a is being read
    assert floor.prepare_store([a, b]) is None  # a pinned, c pending


def test_bench_sets_eager_compilation_only_while_its_command_runs(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``kvoffload bench`` times compiled code (eager compile mode) but must not leave that
    mode behind in a process that invoked it (a test through ``CliRunner``)."""
    import os

    from click.testing import CliRunner

    from kvoffload.cli import main

    monkeypatch.delenv("KVOFFLOAD_COMPILE", raising=False)
    result = CliRunner().invoke(main, ["bench", "manager", "--help"])
    assert result.exit_code == 0, result.output
    assert "KVOFFLOAD_COMPILE" not in os.environ
    monkeypatch.setenv("KVOFFLOAD_COMPILE", "twin")
    CliRunner().invoke(main, ["bench", "manager", "--help"])
    assert os.environ["KVOFFLOAD_COMPILE"] == "twin"  # a mode the caller chose is kept
