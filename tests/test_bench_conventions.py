"""The benchmarks' floor and drivers: the plain-Python LRU gives the reference model's
answers, request by request, through the batch API (what ``bench manager`` and
``bench trace`` compare); a floor that answered differently would be no floor."""

from __future__ import annotations

import gc
import io
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import click
import pytest
from rich.console import Console

from kvoffload.impl import CPUOffloadingManager
from kvoffload.impl.bench.conventions import Contender, compare, run_pass
from kvoffload.impl.bench.floor import FloorLRU
from kvoffload.impl.bench.interface import Comparison, print_comparisons
from kvoffload.impl.bench.manager import Workload, _batch_configs, manager_passes
from kvoffload.spec import BlockHash, ReferenceManager


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


class _ReferenceMissingAHit(ReferenceManager):
    """The reference model, except that the first of its lookups from number ``wrong_at``
    on (counted from 0) that has hits answers one hit fewer: a planted wrong answer."""

    def __init__(self, capacity: int, policy: str, wrong_at: int) -> None:
        super().__init__(capacity, policy=policy)
        self.lookups = 0
        self.wrong_at = wrong_at

    def lookup(self, block_hashes: Iterable[BlockHash]) -> int:
        hits = super().lookup(block_hashes)
        self.lookups += 1
        if self.lookups - 1 < self.wrong_at or not hits:
            return hits
        self.wrong_at = 2**62  # once
        return hits - 1


def test_a_planted_wrong_answer_in_one_pass_of_compare_is_reported_with_its_request() -> None:
    """Every contender runs in a pass of its own; the recorded answers are compared
    afterwards, and the wrong one is named with the request where it first differs."""
    requests = Workload(400, 16, seed=5, suffix=bytes(4)).requests(2_000)
    chosen = [
        Contender("kvoffload", "batch API", lambda: CPUOffloadingManager(400, policy="lru"), True),
        # Prefill is 400 / 4096 = 1 request: timed request 2 is lookup number 3.
        Contender("reference", "batch API", lambda: _ReferenceMissingAHit(400, "lru", wrong_at=3), True),
    ]
    runs, differs = compare(requests, 400, "lru", None, reference=True, chosen=chosen)
    assert [run.label for run in runs] == ["kvoffload", "reference"]
    planted = next(n for n, (hits, _) in enumerate(runs[0].answers) if n >= 2 and hits)
    assert runs[0].answers[:planted] == runs[1].answers[:planted]
    assert runs[1].answers[planted][0] == runs[0].answers[planted][0] - 1
    assert differs == [f"reference (batch API) at request {planted}: hits {runs[0].answers[planted][0] - 1}, "
                       f"kvoffload {runs[0].answers[planted][0]}"]
    comparison = Comparison("planted", 400, "lru", runs, differs, sum(map(len, requests)))
    with pytest.raises(click.ClickException, match=f"reference \\(batch API\\) at request {planted}: hits"):
        print_comparisons(Console(file=io.StringIO()), "planted", [comparison])


def test_a_planted_wrong_answer_in_the_reference_pass_of_bench_manager_fails_at_its_call() -> None:
    """The per-operation table: production and reference in passes of their own, the
    reference's recorded calls compared afterwards; the planted answer is reported with
    the call number, the operation and both answers."""
    build = {"impl": lambda c: CPUOffloadingManager(c, policy="lru"),
             "ref": lambda c: _ReferenceMissingAHit(c, "lru", wrong_at=4)}
    console = Console(file=io.StringIO())
    with pytest.raises(click.ClickException) as failed:
        _batch_configs(console, [512], [16], ["lru"], ["steady"], 1_000, 10**6, 0, False, build)
    assert "at capacity 512 lru batch 16 steady, call " in str(failed.value.message)
    assert "the reference's lookup answered" in failed.value.message
    assert "the production manager's lookup answered" in failed.value.message


def test_bench_manager_passes_agree_and_drop_each_manager_before_the_next() -> None:
    """Without a planted error the two passes agree call for call (the workload is the
    same in every pass), and each manager is gone once its pass returns."""
    built: list[weakref.ref[Any]] = []

    def make(capacity: int) -> CPUOffloadingManager:
        manager = CPUOffloadingManager(capacity, policy="arc")
        built.append(weakref.ref(manager))
        return manager

    passes = manager_passes("impl", make, 512, [(16, "steady", 1_000), (16, "pressure", 1_000)], seed=1)
    assert len(built) == 1 and built[0]() is None
    results = _batch_configs(Console(file=io.StringIO()), [512], [16], ["arc"], ["steady", "pressure"],
                             1_000, 10**6, 1, False)
    assert [r["agreed"] for r in results] == [len(p.calls) for p in passes] and results[0]["agreed"] > 100
    assert all(r["checked"] for r in results)


@pytest.mark.parametrize("collector_on", [True, False])
def test_a_pass_leaves_the_collector_as_the_caller_had_it(collector_on: bool) -> None:
    requests = Workload(64, 16, seed=5, suffix=bytes(4)).requests(200)
    contender = Contender("kvoffload", "batch API", lambda: CPUOffloadingManager(64, policy="lru"), True)
    was = gc.isenabled()
    (gc.enable if collector_on else gc.disable)()
    try:
        run_pass(contender, requests, 64, calls=None)
        assert gc.isenabled() is collector_on
    finally:
        (gc.enable if was else gc.disable)()


def _run(label: str, convention: str, hits: int, blocks: int = 100) -> Any:
    from kvoffload.impl.bench.conventions import Run

    run = Run(label, convention)
    run.hits, run.blocks = hits, blocks
    run.ns["lookup"] = 1000
    return run


@pytest.mark.parametrize(("vllm_hits", "shown"), [(20, "20.0% (vLLM 0.33: 25.0%)"), (25, "25.0%")])
def test_the_side_by_side_table_names_vllms_release_and_its_other_hit_ratio(vllm_hits: int, shown: str) -> None:
    """vLLM's column is headed by the release that ran (``VllmCalls.label``); where its own
    manager hit another number of keys (0.33's request-ranked LRU, N9; its ARC), its hit
    ratio stands beside ours."""
    ours = 25 if vllm_hits == 25 else 20
    runs = [_run("floor (OrderedDict LRU)", "vLLM interface", ours), _run("kvoffload", "vLLM interface", ours),
            _run("vLLM 0.33", "vLLM interface", 25)]
    console = Console(record=True, width=300, file=io.StringIO())
    print_comparisons(console, "t", [Comparison("w", 10, "lru", runs, [], 100)])
    text = console.export_text()
    assert "vLLM 0.33 (vLLM if.)" in text and "vLLM 0.32" not in text
    row = next(line for line in text.splitlines() if line.startswith("│") and " w " in line)
    assert shown in row and row.count("(vLLM 0.33") == (vllm_hits != 25)


def test_the_side_by_side_table_puts_vllm_019_among_the_batch_api_runs() -> None:
    """vLLM 0.19's connector called the batch API: its run (convention "batch API") gets a
    column of its own there, headed by its release, with its ratio to that convention's
    floor; without such a run the batch API's columns stay floor, kvoffload, reference."""
    runs = [_run("floor (OrderedDict LRU)", "batch API", 20), _run("kvoffload", "batch API", 20),
            _run("vLLM 0.19", "batch API", 20, blocks=25), _run("reference", "batch API", 20, blocks=50)]
    console = Console(record=True, width=300, file=io.StringIO())
    print_comparisons(console, "t", [Comparison("w", 10, "lru", runs, [], 100)])
    text = console.export_text()
    header = " ".join(line for line in text.splitlines() if line.startswith("┃"))
    assert "vLLM 0.19 (batch)" in header
    row = next(line for line in text.splitlines() if line.startswith("│") and " w " in line)
    cells = [cell.strip() for cell in row.strip("│").split("│")]
    # floor 10 ns/block; kvoffload 10 (×1.00); vLLM 0.19 40 (×4.00); reference 20 (×2.00)
    assert cells[8:15] == ["10", "10", "×1.00", "40", "×4.00", "20", "×2.00"]
    console = Console(record=True, width=300, file=io.StringIO())
    print_comparisons(console, "t", [Comparison("w", 10, "lru", [r for r in runs if r.label != "vLLM 0.19"], [], 100)])
    assert "(batch)" in console.export_text() and "vLLM 0.19" not in console.export_text()


def test_median_of_takes_the_lower_middle_value() -> None:
    from kvoffload.impl.bench.conventions import median_of

    assert median_of([5.0]) == 5.0
    assert median_of([9.0, 1.0, 4.0]) == 4.0
    assert median_of([9.0, 1.0, 4.0, 7.0]) == 4.0  # a value one round measured, not a mean


def test_median_run_takes_each_phase_median_and_keeps_every_rounds_total() -> None:
    from kvoffload.impl.bench.conventions import Run, median_run

    rounds = []
    for lookup, store in ((100, 900), (300, 500), (200, 700)):
        run = Run("kvoffload", "batch API", blocks=10, hits=4, answers=[(4, None)])
        run.ns.update(lookup=lookup, store=store)
        rounds.append(run)
    one = median_run(rounds)
    assert (one.ns["lookup"], one.ns["store"], one.ns["load"]) == (200, 700, 0)  # each phase on its own
    assert one.rounds == [100.0, 80.0, 90.0] and one.spread() == " (80–100)"
    assert (one.blocks, one.hits, one.answers) == (10, 4, [(4, None)])


def test_repeated_compare_takes_each_phase_median_and_runs_the_reference_once() -> None:
    """``compare(repeat=3)``: every contender three rounds in turn (the reference one), each
    phase of the result the median of its rounds, every round's total kept for the spread."""
    requests = Workload(400, 16, seed=6, suffix=bytes(4)).requests(2_000)
    built: list[str] = []

    def counted(label: str, make: Any) -> Any:
        def build() -> Any:
            built.append(label)
            return make()
        return build

    chosen = [
        Contender("kvoffload", "batch API", counted("kvoffload", lambda: CPUOffloadingManager(400, policy="lru")),
                  True),
        Contender("floor (OrderedDict LRU)", "batch API", counted("floor", lambda: FloorLRU(400)), True),
        Contender("reference", "batch API", counted("reference", lambda: ReferenceManager(400, policy="lru")), True),
    ]
    runs, differs = compare(requests, 400, "lru", None, reference=True, chosen=chosen, repeat=3)
    assert differs == []
    assert built == ["kvoffload", "floor", "reference", "kvoffload", "floor", "kvoffload", "floor"]  # in turn
    ours, floor, reference = runs
    assert len(ours.rounds) == 3 and len(floor.rounds) == 3 and reference.rounds == []
    assert ours.spread() == f" ({min(ours.rounds):.0f}–{max(ours.rounds):.0f})" and reference.spread() == ""
    assert ours.answers == floor.answers == reference.answers and len(ours.answers) == len(requests)


def test_a_contender_answering_a_later_round_otherwise_fails_the_comparison() -> None:
    """The rounds drive the same requests: a manager whose second round misses a hit the
    first had (here: a reference-model variant built only for round 2) is reported with the
    round and the request, and ``print_comparisons`` fails on it (it is never "may differ")."""
    requests = Workload(400, 16, seed=5, suffix=bytes(4)).requests(2_000)
    builds: Iterator[Callable[[], ReferenceManager]] = iter(
        [lambda: ReferenceManager(400, policy="lru"), lambda: _ReferenceMissingAHit(400, "lru", wrong_at=3)])
    chosen = [
        Contender("kvoffload", "batch API", lambda: CPUOffloadingManager(400, policy="lru"), True),
        Contender("floor (OrderedDict LRU)", "batch API", lambda: next(builds)(), False),
    ]
    runs, differs = compare(requests, 400, "lru", None, reference=False, chosen=chosen, repeat=2)
    assert len(differs) == 1 and differs[0].startswith(
        "floor (OrderedDict LRU) (batch API) answered round 2 unlike round 1, at request ")
    assert ": hits " in differs[0] and ", round 1 " in differs[0]
    comparison = Comparison("unstable", 400, "lru", runs, differs, sum(map(len, requests)))
    with pytest.raises(click.ClickException, match="answered round 2 unlike round 1"):
        print_comparisons(Console(file=io.StringIO()), "unstable", [comparison])


def test_repeated_per_operation_table_holds_later_rounds_to_the_first() -> None:
    """``_batch_configs(repeat=2)``: the median of two rounds per operation, the reference in
    the first alone; a production manager whose second round answers otherwise fails the
    bench naming the round, the configuration and the call."""
    built = {"impl": 0}

    def make(capacity: int) -> Any:
        built["impl"] += 1
        return CPUOffloadingManager(capacity, policy="lru")

    build = {"impl": make, "ref": lambda c: ReferenceManager(c, policy="lru")}
    console = Console(file=io.StringIO())
    results = _batch_configs(console, [512], [16], ["lru"], ["steady"], 1_000, 10**6, 0, False, build, repeat=2)
    timer = results[0]["timers"]["impl"]
    assert len(timer.rounds) == 2 and timer.spread().startswith(" (")
    assert results[0]["timers"]["ref"].rounds == [results[0]["timers"]["ref"].total()]  # one round
    assert results[0]["agreed"] > 100 and built["impl"] == 3  # the warm pass and two rounds

    rounds: Iterator[Callable[[int], Any]] = iter(
        [lambda c: CPUOffloadingManager(c, policy="lru"), lambda c: CPUOffloadingManager(c, policy="lru"),
         lambda c: _ReferenceMissingAHit(c, "lru", wrong_at=4)])
    unstable = {"impl": lambda c: next(rounds)(c)}
    with pytest.raises(click.ClickException) as failed:
        _batch_configs(console, [512], [16], ["lru"], ["steady"], 1_000, 10**6, 0, False, unstable, repeat=2)
    assert "impl answered round 2 unlike round 1 at capacity 512 lru batch 16 steady, call " in failed.value.message
    assert "round 2's lookup answered" in failed.value.message and "round 1's lookup answered" in failed.value.message


def test_bench_manager_repeat_option_runs_rounds_in_both_tables() -> None:
    """``kvoffload bench manager --repeat 2`` as a user runs it: both tables say they are
    medians of 2 rounds, and the phase table's "all" carries the rounds' least and greatest."""
    from click.testing import CliRunner

    from kvoffload.cli import main

    result = CliRunner().invoke(main, ["bench", "manager", "--capacities", "1e3", "--batch-sizes", "16",
                                       "--scenarios", "steady", "--interface-capacities", "1e3", "--blocks", "400",
                                       "--policies", "lru", "--no-cold-start", "--repeat", "2"],
                                terminal_width=300)
    assert result.exit_code == 0, result.output
    assert "every figure is the median of 2 rounds" in result.output
    assert "the whole sweep ran 2 rounds" in result.output
    assert "round 2 of 2" in result.output
    floor_row = next(line for line in result.output.splitlines() if "floor (OrderedDict LRU)" in line)
    assert floor_row.rstrip(" │").endswith(")") and "–" in floor_row  # "all (least–greatest)"
