"""The end-to-end simulation (E1, E2) with injected faults: production and reference pass,
and deliberately broken managers make it report corrupt loads or leaked blocks."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402

from kvoffload.conformance.drivers.simulation import SimulationConfig, manager_factory, run_simulation, simulate  # noqa: E402
from kvoffload.spec import CPULoadStoreSpec, ReferenceManager  # noqa: E402

CONFIG = SimulationConfig(requests=150, seed=3)


@pytest.mark.parametrize("target", ["impl", "reference"])
@pytest.mark.parametrize("policy", ["lru", "arc", "s3fifo", "sieve"])
def test_E1_E2_simulation_with_faults(target: str, policy: str) -> None:
    report = run_simulation(manager_factory(target, policy)(CONFIG.capacity), CONFIG)
    assert report.corrupt == 0 and report.leaked == 0, report.format()
    # The run exercised what it claims to.
    assert report.loads > 10 and report.partial_first_block_loads > 0, report.format()
    assert report.failed_store_transfers > 0 and report.aborted_stores > 0, report.format()
    assert report.failed_load_transfers > 0 and report.refusals > 0 and report.evictions > 0, report.format()
    assert report.max_in_flight >= 2, report.format()


class WrongBlock(ReferenceManager):
    """prepare_load hands out another block's address (I4 / E1 bug class)."""

    def prepare_load(self, block_hashes: Any) -> Any:
        spec = super().prepare_load(block_hashes)
        return CPULoadStoreSpec((spec.block_ids + 1) % self.num_blocks)  # type: ignore[attr-defined]


class FailedStoreBecomesReady(ReferenceManager):
    """complete_store(success=False) makes the block ready (M7 broken): stale bytes load."""

    def complete_store(self, block_hashes: Any, success: bool = True) -> None:
        super().complete_store(block_hashes, success=True)


class LeaksFailedStores(ReferenceManager):
    """complete_store(success=False) forgets the hash but never frees the block (E2)."""

    def complete_store(self, block_hashes: Any, success: bool = True) -> None:
        if success:
            return super().complete_store(block_hashes, success=True)
        for block_hash in list(block_hashes):
            block = self.policy.get(block_hash)
            if block is not None and not block.is_ready:
                self.policy.remove(block_hash)


def test_control_wrong_block_is_reported_corrupt() -> None:
    report = run_simulation(WrongBlock(CONFIG.capacity, enable_events=True), CONFIG)
    assert report.corrupt > 0 and not report.ok
    # The judge names the clause the wrong address breaks: the load spec disagrees with the store spec.
    assert report.violation is not None and report.violation.clauses == ("M2",), report.format()


def test_control_failed_store_made_ready_is_reported_corrupt() -> None:
    config = SimulationConfig(requests=300, seed=3, store_fail_rate=0.3)
    report = run_simulation(FailedStoreBecomesReady(config.capacity, enable_events=True), config)
    assert report.corrupt > 0 and not report.ok


def test_control_leaked_blocks_are_reported() -> None:
    report = run_simulation(LeaksFailedStores(CONFIG.capacity, enable_events=True), CONFIG)
    assert report.leaked > 0 and not report.ok


def test_simulate_command() -> None:
    runner = CliRunner()
    done = runner.invoke(simulate, ["--manager", "reference", "--requests", "60", "--seed", "1"])
    assert done.exit_code == 0, done.output
    assert "corrupt loads: 0" in done.output and "leaked blocks: 0" in done.output
    bad = runner.invoke(simulate, ["--manager", "nosuchmodule:factory"])
    assert bad.exit_code == 2
    broken = runner.invoke(simulate, ["--manager", "tests.test_simulation:WrongBlock", "--requests", "150",
                                      "--seed", "3"])
    assert broken.exit_code == 1, broken.output


class _NeverCopies:
    """A third party's store handler that reports success without copying (H1, H2)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.done: list[Any] = []

    def transfer_async(self, job_id: int, spec: Any) -> bool:
        self.done.append(job_id)
        return True

    def get_finished(self) -> list[Any]:
        finished = [(job, True) for job in self.done]
        self.done = []
        return finished

    def wait(self, job_ids: set[int]) -> None:
        return None


def lying_handlers(kv_caches: Any, layout: Any, gpu_block_size: int, factor: int, cpu_blocks: int) -> Any:
    from kvoffload.impl.copy import build_cpu_handlers

    store, load = build_cpu_handlers(kv_caches, layout, gpu_block_size, factor, cpu_blocks)
    return _NeverCopies(store), load


def test_simulate_takes_third_party_handlers() -> None:
    """--handlers MODULE:FACTORY: our own factory named explicitly passes; a store handler
    that never copies is caught (corrupt loads); a missing module is a usage error."""
    runner = CliRunner()
    ours = runner.invoke(simulate, ["--handlers", "kvoffload.impl.copy:build_cpu_handlers", "--requests", "60"])
    assert ours.exit_code == 0, ours.output
    lying = runner.invoke(simulate, ["--handlers", "tests.test_simulation:lying_handlers", "--requests", "150",
                                     "--seed", "3"])
    assert lying.exit_code == 1, lying.output
    assert "corrupt loads: 0" not in lying.output
    missing = runner.invoke(simulate, ["--handlers", "nosuchmodule:factory"])
    assert missing.exit_code == 2


# -- the judge: every manager call of the simulation in lockstep with the model ------------------


def test_M6_simulation_judges_manager_calls() -> None:
    """A manager whose bytes are right but whose events are not (no stored event, M6)
    passes E1 and E2, and the judge names M6; correct managers had every call judged."""
    import planted_bugs as pb

    report = run_simulation(pb.NoStoredEvent(CONFIG.capacity, enable_events=True), CONFIG)
    assert report.corrupt == 0 and report.leaked == 0, report.format()
    assert report.violation is not None and report.violation.clauses[0] == "M6", report.format()
    assert not report.ok and "VIOLATES M6" in report.format()
    good = run_simulation(manager_factory("impl", "arc")(CONFIG.capacity),
                          SimulationConfig(requests=150, seed=3, judge_policy="arc"))
    assert good.ok and good.violation is None and good.judged_calls > 300, good.format()


def test_M1_simulate_third_party_manager_and_handlers() -> None:
    """--manager and --handlers both take MODULE:FACTORY in one run: the third party's
    manager is judged (here it counts pending blocks as hits: M1) with our handlers named
    explicitly; the reference manager named the same way conforms."""
    runner = CliRunner()
    handlers = ["--handlers", "kvoffload.impl.copy:build_cpu_handlers", "--requests", "100", "--seed", "2"]
    ours = runner.invoke(simulate, ["--manager", "kvoffload.conformance.factories:reference_lru_manager", *handlers])
    assert ours.exit_code == 0, ours.output
    assert "manager calls judged, all conform" in ours.output
    bad = runner.invoke(simulate, ["--manager", "planted_bugs:LookupCountsPending", *handlers])
    assert bad.exit_code == 1, bad.output
    assert "lockstep with the model: VIOLATES M1" in bad.output, bad.output
