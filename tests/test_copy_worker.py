"""The routing worker: medium-pair routing, refusal -> False (H1), reporting (H2)."""

from __future__ import annotations

import logging

import pytest

torch = pytest.importorskip("torch")

from kvoffload.impl.copy import OffloadingWorker, build_cpu_handlers, cpu_handler_triples  # noqa: E402
from kvoffload.spec.types import CPULoadStoreSpec, GPULoadStoreSpec, LoadStoreSpec  # noqa: E402


class DiskSpec(CPULoadStoreSpec):
    @staticmethod
    def medium() -> str:
        return "DISK"


@pytest.fixture
def worker():
    kv = {"a": torch.arange(2 * 6 * 4, dtype=torch.float32).reshape(2, 6, 4)}
    store, load = build_cpu_handlers(kv, "kv_blocks", 16, 1, 4)
    w = OffloadingWorker()
    w.register_all(cpu_handler_triples(store, load))
    return kv, w, store, load


def test_routes_by_medium_pair(worker):
    kv, w, store, load = worker
    before = kv["a"].clone()
    assert w.transfer_async(1, (GPULoadStoreSpec([2, 3]), CPULoadStoreSpec([0, 1])))
    assert w.transfer_async(2, (CPULoadStoreSpec([1, 0]), GPULoadStoreSpec([4, 5])))
    w.wait({1, 2})
    assert sorted(w.get_finished()) == [(1, True), (2, True)]
    assert w.get_finished() == []
    assert torch.equal(kv["a"][:, 4], before[:, 3]) and torch.equal(kv["a"][:, 5], before[:, 2])


def test_H1_worker_turns_errors_into_false_and_logs(worker, caplog):
    kv, w, store, load = worker
    caplog.set_level(logging.WARNING)
    bad = [
        (1, (GPULoadStoreSpec([0]), DiskSpec([0]))),  # no handler for GPU -> DISK
        (2, (GPULoadStoreSpec([0, 1]), CPULoadStoreSpec([0]))),  # H3 length mismatch
        (3, (CPULoadStoreSpec([9]), GPULoadStoreSpec([0]))),  # out of range
        ("4", (GPULoadStoreSpec([0]), CPULoadStoreSpec([0]))),  # non-int job id
        ([5], (GPULoadStoreSpec([0]), CPULoadStoreSpec([0]))),  # unhashable job id
        (6, "not a spec"),
    ]
    for job_id, spec in bad:
        assert w.transfer_async(job_id, spec) is False
    assert len([r for r in caplog.records if "refused" in r.getMessage()]) == len(bad)
    assert w.get_finished() == []


def test_job_id_in_flight_across_handlers(worker):
    kv, w, store, load = worker
    assert w.transfer_async(1, (GPULoadStoreSpec([0]), CPULoadStoreSpec([0])))
    assert w.transfer_async(1, (CPULoadStoreSpec([0]), GPULoadStoreSpec([1]))) is False
    assert w.get_finished() == [(1, True)]


def test_register_twice_is_an_error(worker):
    kv, w, store, load = worker
    with pytest.raises(ValueError, match="already registered"):
        w.register_handler(GPULoadStoreSpec, CPULoadStoreSpec, store)


def test_handler_returning_false_is_not_tracked():
    class Refuser:
        def transfer_async(self, job_id: int, spec: object) -> bool:
            return False

        def get_finished(self) -> list[tuple[int, bool]]:
            return []

        def wait(self, job_ids: set[int]) -> None:
            raise AssertionError("not owned")

    w = OffloadingWorker()
    w.register_handler(GPULoadStoreSpec, DiskSpec, Refuser())  # type: ignore[arg-type]
    assert w.transfer_async(1, (GPULoadStoreSpec([0]), DiskSpec([0]))) is False
    w.wait({1})


def test_spec_classes_route_by_medium_not_class():
    class OtherCPU(LoadStoreSpec):
        block_ids = [0]

        @staticmethod
        def medium() -> str:
            return "CPU"

    kv = {"a": torch.zeros(3, 2)}
    store, load = build_cpu_handlers(kv, "blocks", 16, 1, 2)
    w = OffloadingWorker()
    w.register_handler(GPULoadStoreSpec, CPULoadStoreSpec, store)
    assert w.transfer_async(1, (GPULoadStoreSpec([0]), OtherCPU()))
    assert w.get_finished() == [(1, True)]
