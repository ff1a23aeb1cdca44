"""A worker that routes transfer jobs to handlers by medium pair (H1, H2, S3).

Like vLLM's ``OffloadingWorker``: handlers are registered per ``(src, dst)`` spec type,
``transfer_async`` routes by the specs' media, and a handler's refusal (an exception) is
logged and turned into ``False`` (H1) so one bad job cannot take the worker down.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from kvoffload.spec.errors import ContractViolation
from kvoffload.spec.interfaces import OffloadingHandler
from kvoffload.spec.types import LoadStoreSpec, TransferResult, TransferSpec

__all__ = ["OffloadingWorker"]

logger = logging.getLogger(__name__)


class OffloadingWorker:
    """Routes jobs to the handler registered for their ``(src medium, dst medium)``."""

    def __init__(self) -> None:
        self._routes: dict[tuple[str, str], OffloadingHandler] = {}
        self._handlers: list[OffloadingHandler] = []
        self._owner: dict[int, OffloadingHandler] = {}

    def register_handler(
        self,
        src_cls: type[LoadStoreSpec],
        dst_cls: type[LoadStoreSpec],
        handler: OffloadingHandler,
    ) -> None:
        """Route ``src_cls.medium() -> dst_cls.medium()`` jobs to ``handler``."""
        key = (src_cls.medium(), dst_cls.medium())
        if key in self._routes:
            raise ValueError(f"a handler for {key[0]} -> {key[1]} is already registered")
        self._routes[key] = handler
        if all(h is not handler for h in self._handlers):
            self._handlers.append(handler)

    def register_all(
        self, triples: Iterable[tuple[type[LoadStoreSpec], type[LoadStoreSpec], OffloadingHandler]]
    ) -> None:
        """Register what ``OffloadingSpec.get_handlers`` yields (S3)."""
        for src_cls, dst_cls, handler in triples:
            self.register_handler(src_cls, dst_cls, handler)

    def transfer_async(self, job_id: int, spec: TransferSpec) -> bool:
        """Route the job; any refusal is logged and returned as ``False`` (H1)."""
        try:
            src, dst = spec
            key = (src.medium(), dst.medium())
            handler = self._routes.get(key)
            if handler is None:
                raise ContractViolation("H1", f"no handler registered for {key[0]} -> {key[1]}")
            if job_id in self._owner:
                raise ContractViolation("H1", f"job id {job_id!r} is already in flight")
            accepted = bool(handler.transfer_async(job_id, spec))
        except Exception as error:  # H1: the worker never raises for a bad job
            logger.warning("transfer job %r refused: %s", job_id, error)
            return False
        if accepted:
            self._owner[job_id] = handler
        return accepted

    def get_finished(self) -> list[TransferResult]:
        """Every handler's finished jobs; per handler in submission order (H2)."""
        results: list[TransferResult] = []
        for handler in self._handlers:
            for job_id, success in handler.get_finished():
                self._owner.pop(job_id, None)
                results.append((job_id, success))
        return results

    def wait(self, job_ids: set[int]) -> None:
        """Block until the given jobs are done, asking only their handlers (H2)."""
        for handler in self._handlers:
            mine = {j for j in job_ids if self._owner.get(j) is handler}
            if mine:
                handler.wait(mine)
