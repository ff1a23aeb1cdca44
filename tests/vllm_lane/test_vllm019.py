"""vLLM 0.19, the generation whose connector called the contract's batch API, under the
0.19 overlay (``.ci/vllm_overlay.sh 0.19``; the vLLM lane runs this file there alone, and
it skips under 0.32 and 0.33).

Issue 12 asks the batch core to be measured beside vLLM 0.19's own manager: the bench's
batch table and its side-by-side table drive that manager through its own interface (the
batch API), and its LRU must answer as ours does, call by call (both keep L1). And code
nobody here wrote, judged by the suite: 0.19's LRU manager conforms, in lockstep and in
every reachable state at capacities 1-3; 0.19's ARC refuses a store it could serve (I6:
its ``evict`` gives up when T2 has no idle block and T1 is below its target, where 0.32's
falls back to T1), and both the lockstep suite and the model checker must say so.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import click
import pytest
from rich.console import Console

pytest.importorskip("vllm")

from kvoffload.conformance import check_manager, check_policy  # noqa: E402
from kvoffload.impl.bench.conventions import compare, contenders, vllm_batch_manager, vllm_batch_release  # noqa: E402
from kvoffload.impl.bench.manager import _batch_configs, _vllm_builder, builders, vllm_label  # noqa: E402

if vllm_batch_release() is None:
    pytest.skip("the installed vLLM's manager is of the per-key generation (0.32, 0.33)", allow_module_level=True)

import vllm019_factories as factories  # noqa: E402
from vllm_helpers import judge_mutant  # noqa: E402

HERE = Path(__file__).resolve().parent


def test_the_installed_release_is_named_with_the_interface_it_is_driven_through() -> None:
    assert vllm_batch_release() == "vLLM 0.19"
    assert vllm_label() == "vLLM 0.19 (batch API)"
    found = _vllm_builder("arc")
    assert found is not None and found[0] == "batch API"


def test_batch_table_holds_vllm_019_lru_to_our_answers_on_every_call() -> None:
    """Both scenarios (pressure: loads and stores left in flight, victims chosen among the
    blocks eviction may take); the row says how many calls were compared."""
    console = Console(file=io.StringIO(), width=250)
    results = _batch_configs(console, [64, 1024], [16], ["lru"], ["steady", "pressure"], 4_000, 0, 0, True)
    assert len(results) == 4
    assert all("vllm" in r["timers"] and r["vllm_agreed"] > 100 for r in results)


def test_batch_table_reports_a_wrong_answer_of_vllms_lru_at_its_call() -> None:
    class MissesAHit(type(vllm_batch_manager(1, "lru"))):  # type: ignore[misc]
        calls = 0

        def lookup(self, block_hashes):  # type: ignore[no-untyped-def]
            hits = super().lookup(block_hashes)
            MissesAHit.calls += 1
            return hits - 1 if hits and MissesAHit.calls > 5 else hits

    build = {**builders("lru", False, False), "vllm": lambda c: MissesAHit(16, c, "lru")}
    with pytest.raises(click.ClickException) as failed:
        _batch_configs(Console(file=io.StringIO()), [512], [16], ["lru"], ["steady"], 2_000, 0, 0, True, build)
    assert "vLLM 0.19 (batch API)'s lookup answered" in failed.value.message


def test_vllm_arc_is_timed_but_not_held_to_our_answers() -> None:
    """Its ARC is another algorithm (and refuses where ours evicts, below): timed, not compared."""
    results = _batch_configs(Console(file=io.StringIO()), [64], [16], ["arc"], ["pressure"], 4_000, 0, 0, True)
    assert "vllm" in results[0]["timers"] and results[0]["vllm_agreed"] == 0


def test_side_by_side_table_has_vllm_019_through_the_batch_api() -> None:
    chosen = {c.label: c for c in contenders(256, "lru", None, False)}
    assert chosen["vLLM 0.19"].convention == "batch API" and chosen["vLLM 0.19"].must_agree
    assert not next(c for c in contenders(256, "arc", None, False) if c.label == "vLLM 0.19").must_agree
    from kvoffload.impl.bench.manager import Workload

    requests = Workload(256, 16, 0).requests(6_000)
    runs, differs = compare(requests, 256, "lru", None, False)
    assert differs == [] and "vLLM 0.19" in [run.label for run in runs]


def test_conformance_vllm_019_lru_manager_conforms() -> None:
    result = check_manager(factories.lru_manager, policy="lru", max_examples=60)
    assert result.ok, result.message


@pytest.mark.parametrize("check, factory", [(check_manager, factories.arc_manager),
                                            (check_policy, factories.arc_policy)])
def test_conformance_finds_vllm_019_arc_refusing_a_store_it_could_serve(check, factory) -> None:  # type: ignore[no-untyped-def]
    result = check(factory, policy="arc")
    assert not result.ok
    assert result.clauses[0] == "I6", result.message


def _check_exhaustive(target: str, policy: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kvoffload", "check-exhaustive", "--capacity", "3", "--policy", policy,
         "--target", target], capture_output=True, text=True, timeout=300, cwd=HERE)


def test_model_checker_proves_vllm_019_lru_manager_at_capacities_1_to_3() -> None:
    run = _check_exhaustive("vllm019_factories:lru_manager", "lru")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "conforms" in run.stdout and "every reachable state" in run.stdout


def test_model_checker_refutes_vllm_019_arc_with_a_runnable_reproduction() -> None:
    run = _check_exhaustive("vllm019_factories:arc_manager", "arc")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "assert r is not None" in run.stdout
    reproduction = run.stdout[run.stdout.index("m = arc_manager"):run.stdout.index("# the failing check")]
    assert "VIOLATES I6 after 4 calls" in run.stdout  # a shortest sequence, then the probe's 3 calls
    assert reproduction.count("\n") <= 10


def test_mutation_target_of_019_judges_its_files_through_the_batch_api(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """``kvoffload mutation run --target vllm019-cpu``: 0.19's LRU manager and policy, copied
    and judged by the contract's suites. The originals conform; ``touch`` without its
    ``reversed`` (the last key ends up most recent, P4 wants the first) is killed."""
    from kvoffload.mutation.targets import VLLM019_CPU

    original, mutated = "for block_hash in reversed(list(block_hashes)):", "for block_hash in list(block_hashes):"
    shipped, mutant, text = judge_mutant(VLLM019_CPU, tmp_path, "policies/lru.py", original, mutated,
                                         before=VLLM019_CPU.files)
    assert "kvo_mut_vllm019.policies.abstract" in text
    assert shipped == [0, 0, 0] and mutant == 1
    said = capsys.readouterr().out
    assert "VIOLATES" in said.split("conforms")[-1] and "interface=contract" in said, said
