"""Where a copy job's work is issued: inline on the host, or on a CUDA stream (H2, H4).

An engine takes a function that issues one job's copies, and the job's rows (GPU block ids
and host sub-block ids, a ``(2, n)`` int64 array), and returns a ``Completion``.

- ``SyncEngine`` (KV cache on the CPU): runs the copies at once; the job is done when
  ``submit`` returns. Same handlers, same checks, so every test runs without a GPU (H4).
- ``CudaEngine``: one dedicated stream per handler (stores and loads never queue behind
  each other or behind compute). At submit it records an event on the *current* stream
  and makes its stream wait on it, so a store reads what the compute queued before it
  produced (read-after-write) and a load does not overwrite blocks that queued kernels
  still read (write-after-read). A second event recorded after the copies marks the job
  done; jobs of one engine finish in submission order because the stream is in-order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

import attrs
import torch

from ...spec.clauses import implements
from .indices import IntArray

__all__ = ["Issue", "Completion", "CopyEngine", "SyncEngine", "CudaEngine", "make_engine"]

logger = logging.getLogger(__name__)

#: Issues one job's copies given its rows as a ``(2, n)`` int64 tensor on the device (row 0
#: GPU block ids, row 1 host sub-block ids) and whether copies may be asynchronous.
Issue = Callable[[torch.Tensor, bool], None]


@attrs.define
class Completion:
    """One submitted job: its success so far and, on CUDA, the event that ends it.

    ``keep`` holds tensors that in-flight copies read (the pinned index tensor) until
    the job is reported.
    """

    success: bool
    event: torch.cuda.Event | None = None
    keep: tuple[torch.Tensor, ...] = ()

    def done(self) -> bool:
        """Whether every copy of the job has landed (or the device failed)."""
        if self.event is None:
            return True
        try:
            finished = bool(self.event.query())  # type: ignore[no-untyped-call]
        except Exception:  # a sticky CUDA error: the job cannot have succeeded (H2)
            logger.exception("CUDA error while polling a copy job")
            self.success, self.event = False, None
            return True
        if finished:
            self.event = None
        return finished

    def synchronize(self) -> None:
        """Block until ``done()`` (H2 ``wait``)."""
        if self.event is None:
            return
        try:
            self.event.synchronize()
        except Exception:
            logger.exception("CUDA error while waiting for a copy job")
            self.success, self.event = False, None


class CopyEngine(Protocol):
    """Runs a job's ``Issue`` function and tracks its completion."""

    def submit(self, issue: Issue, rows: IntArray) -> Completion: ...


class SyncEngine:
    """Copies on the calling thread; a job is done when ``submit`` returns (H4)."""

    def submit(self, issue: Issue, rows: IntArray) -> Completion:
        try:
            issue(torch.from_numpy(rows), False)
        except Exception:  # a failed copy is reported as (job_id, False) (H2)
            logger.exception("copy job failed")
            return Completion(success=False)
        return Completion(success=True)


@implements("H4")
class CudaEngine:
    """Copies on a dedicated CUDA stream, ordered after the current stream (H4)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.index = device.index if device.index is not None else torch.cuda.current_device()
        self.stream = torch.cuda.Stream(device=device)  # type: ignore[no-untyped-call]

    def submit(self, issue: Issue, rows: IntArray) -> Completion:
        if torch.cuda.current_device() != self.index:
            with torch.cuda.device(self.index):
                return self._submit(issue, rows)
        return self._submit(issue, rows)

    def _submit(self, issue: Issue, rows: IntArray) -> Completion:
        """``submit`` with this engine's device current.

        A job's CPU time before its copies are issued is on its critical path, so this
        uses the plainest torch calls: ``wait_stream`` and ``set_stream`` (the stream
        and device context managers cost twice as much, measured on an H200).
        """
        compute = torch.cuda.current_stream()
        self.stream.wait_stream(compute)  # H4: after the compute queued so far
        keep: tuple[torch.Tensor, ...] = ()
        success = True
        torch.cuda.set_stream(self.stream)
        try:
            # Pinned, so the index upload is an async DMA on the copy stream; kept
            # alive in the Completion until the job is reported.
            host_index = torch.from_numpy(rows).pin_memory()
            device_index = host_index.to(self.device, non_blocking=True)
            keep = (host_index, device_index)
            issue(device_index, True)
        except Exception:
            logger.exception("copy job failed while being issued")
            success = False
        finally:
            torch.cuda.set_stream(compute)
        # Recorded even after a failure: copies issued before it may still be in
        # flight, and the job must not be reported (and its blocks reused) before
        # they land.
        done = torch.cuda.Event()  # type: ignore[no-untyped-call]
        done.record(self.stream)
        return Completion(success=success, event=done, keep=keep)


def make_engine(device: torch.device) -> CopyEngine:
    """``CudaEngine`` for a CUDA device, ``SyncEngine`` otherwise."""
    if device.type == "cuda":
        return CudaEngine(device)
    return SyncEngine()


