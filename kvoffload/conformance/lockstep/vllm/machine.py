"""Lockstep machine for a manager written against vLLM's per-key interface (K1–K7).

It is the contract's ``ManagerMachine`` (M0–M10, I1–I8, L/A in exact mode) with the
target seen through ``VllmManagerView`` (K2), plus what only the per-key interface has:

- every sweep asks ``lookup(key, ctx)`` per key and expects HIT / HIT_PENDING / MISS (K1);
- requests that span several calls and end with ``on_request_finished`` (K5), whose
  ``prepare_store`` calls report store misses once per request (K6);
- failed stores' metadata-only events (K4) and ``reset_cache`` (K7);
- strict mode accepts the errors vLLM's interface documents (K3); badly typed calls are
  not made (vLLM's interface types keys statically only): M9's type checks are reported
  as skipped.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from ....spec import ReferenceARCPolicy
from ....spec.types import BlockHash
from ....spec.keyed import RequestAccess, arc_request_finished, expected_lookup, request_order
from ...judge import invoke
from ..manager_machine import ManagerMachine
from .adapter import VllmManagerView

__all__ = ["VllmManagerMachine"]

#: Clauses of the batch interface whose failure, on a vLLM target, also implicates the
#: translation of K2 (listed after the broken clause).
BATCH_CLAUSES = {"M0", "M1", "M2", "M3", "M4", "M5", "M6", "M7", "M8"}


class VllmManagerMachine(ManagerMachine):
    extra_imports = ("from kvoffload.conformance.lockstep.vllm import as_contract_manager",)

    def build(self, **arguments: Any) -> Any:
        raw = super().build(**arguments)
        self.construct = f"as_contract_manager({self.construct})"
        self.stats.skipped.add("M9 (bad types: vLLM's interface types keys statically only)")
        self.open_request: RequestAccess | None = None
        self.finished_requests = 0
        self.ghost_store_misses = 0  # K6 reports that moved ARC's p
        return VllmManagerView(raw)

    def fail(self, clauses: Any, message: str, check: str = "") -> Any:
        ids = (clauses,) if isinstance(clauses, str) else tuple(clauses)
        if ids and ids[0] in BATCH_CLAUSES and "K2" not in ids:
            ids = (*ids, "K2")
        if ids and ids[0] in ("L3", "A4", "M10"):
            # exact victims also depend on the per-key interface's recency rules
            ids = (ids[0], *(["K5"] if self.finished_requests else []),
                   *(["K6"] if self.ghost_store_misses else []), *ids[1:])
        super().fail(ids, message, check)

    # -- K1: per-key lookups ----------------------------------------------------------------
    def sweep(self, clauses: tuple[str, ...], why: str) -> None:
        """Ask ``lookup(key, ctx)`` for every pool key (K1) and compare with the model."""
        self.step()
        expected = [expected_lookup(self.ref(h)) for h in self.pool]
        var = self.log.var("s")
        self.log.add(f"{var} = [m.key_lookup(h) for h in ({', '.join(map(self.log.name, self.pool))},)]")
        got: list[str] = []
        for h in self.pool:
            value, error = invoke(self.target.key_lookup, h)
            if error is not None:
                self.fail(("K1", "M1"), f"lookup({self.log.name(h)}, ctx) raised {error!r} ({why})")
            got.append(value)
        self.exercised("K1")
        if got == expected:
            return
        index = next(i for i, (a, b) in enumerate(zip(got, expected)) if a != b)
        h = self.pool[index]
        if "HIT" in (got[index], expected[index]):
            found = self.judge.refine(clauses, h) if got[index] == "HIT" else clauses
            if got[index] == "HIT" and expected[index] == "HIT_PENDING":
                found = ("K1", "M1", *clauses)  # pending blocks are not readable
            found = (*found, "K1")
        elif expected[index] == "MISS":
            found = (*clauses, "K1")  # the target still holds a block the model dropped
        else:
            found = ("K1", *clauses)  # the answer itself is wrong (MISS or RETRY while pending)
        self.fail(
            found,
            f"{why}, lookup({self.log.name(h)}, ctx) answered {got[index]}, but {self.log.name(h)} is "
            f"{ {'MISS': 'absent', 'HIT_PENDING': 'pending', 'HIT': 'ready'}[expected[index]] }: "
            f"K1 expects {expected[index]}",
            f"{var}[{index}] == {expected[index]!r}",
        )

    # -- K6: store misses are observed first ----------------------------------------------------
    def call(self, method: str, items: list[Any], shape: str, **keywords: Any) -> Any:
        if method == "prepare_store":
            absent = [h for h in items if isinstance(h, bytes) and self.ref(h) is None]
            fresh = absent if self.open_request is None else self.open_request.new_store_misses(absent)
            if fresh:
                self.ghost_store_misses += len(set(fresh) & set(self.ghosts()))
                if self.ghost_store_misses:  # p moved (K6): the judge's M10 replay cannot model it
                    self.judge.calls = None
                # K6: vLLM's prepare_store hands its new store misses to the policy
                # (``on_store_miss``, by default a touch: ARC's ghosts move p, A3) first.
                self.model.policy.touch([BlockHash(h) for h in fresh])
                self.judge.record("touch", list(fresh))
                self.exercised("K6")
        return super().call(method, items, shape, **keywords)

    # -- K6 steering: ghosts stored again ------------------------------------------------------------
    @precondition(lambda self: bool(self.ghosts()))
    @rule(data=st.data())
    def store_ghosts(self, data: st.DataObject) -> None:
        """K6, A3: store ARC ghosts again (each moves p), promote a ready T1 block to T2
        (so both lists can give victims) and store fresh keys into the full cache: the
        victims then show whether p moved."""
        for _ in range(data.draw(st.integers(1, 3), label="rounds")):
            ghosts = self.ghosts()
            if ghosts:
                items = data.draw(st.lists(st.sampled_from(ghosts), min_size=1, max_size=min(2, len(ghosts)),
                                           unique=True), label="ghosts")
                self._store_and_complete(items, data)
            ready = self.ready()
            if ready:
                self.call("touch", [data.draw(st.sampled_from(ready), label="promoted")], "list")
        absent = [h for h in self.pool if self.ref(h) is None and h not in self.ghosts()]
        if absent:
            self._prepare_store([data.draw(st.sampled_from(absent), label="fresh")], data)

    # -- K5: requests spanning several calls ------------------------------------------------------
    @rule(data=st.data())
    def finished_request(self, data: st.DataObject) -> None:
        """K5, K6: one request loads some ready keys, offers a batch to prepare_store
        (maybe twice), and finishes; its end updates recency (LRU: a touch; ARC: K5)."""
        access = self.open_request = RequestAccess()
        self.log.add("m.request = m.context()")
        self.target.request = self.target.context()
        try:
            ready = self.ready()
            load: bool = bool(ready) and data.draw(st.booleans(), label="load")
            if load:
                items = data.draw(st.lists(st.sampled_from(ready), min_size=1, max_size=len(ready), unique=True),
                                  label="hashes")
                self._prepare_load(data, items)
                access.loaded(items)
            for _ in range(data.draw(st.integers(1, 2), label="stores")):
                items = self.draw_batch(data, min_size=1)
                absent = [h for h in items if self.ref(h) is None]
                ready_now = [h for h in items if h in self.judge.ready_set()]
                self._prepare_store(items, data)
                stored = [h for h in absent if self.ref(h) == -1]
                access.offered(absent, ready_now, stored)
        finally:
            self.open_request = None
        self.step()
        self.log.add("m.finish_request()")
        _, error = invoke(self.target.finish_request)
        if error is not None:
            self.fail("K5", f"on_request_finished raised {error!r}")
        if isinstance(self.model.policy, ReferenceARCPolicy):
            arc_request_finished(self.model.policy, access)
        else:
            self.model.policy.touch([BlockHash(h) for h in request_order(access)])
        self.finished_requests += 1
        self.judge.calls = None  # no M10 explanation: its replay does not model K5's recency
        self.exercised("K5")
        # Recency shows only in later victims: often store fresh keys into the cache at
        # once, so that the request's keys compete for eviction while the order is new.
        for _ in range(data.draw(st.integers(0, 2), label="then store")):
            absent = [h for h in self.pool if self.ref(h) is None]
            if not absent:
                break
            items = data.draw(st.lists(st.sampled_from(absent), min_size=1, max_size=min(2, len(absent)),
                                       unique=True), label="fresh")
            self._store_and_complete(items, data)

    def _store_and_complete(self, items: list[bytes], data: st.DataObject) -> None:
        """M5 of ``items``, then M6 of those it left pending: ready blocks at once."""
        self._prepare_store(items, data)
        stored = [h for h in items if self.ref(h) == -1]
        if stored:
            self.call("complete_store", stored, "list", success=True)

    # -- K4: metadata-only events ------------------------------------------------------------------
    @rule()
    def take_events(self) -> None:
        """M8, I5 on the announced events; K4 on the metadata-only ones."""
        super().take_events()
        errors = self.target.metadata_only_errors
        if self.target.metadata_only_events:
            self.exercised("K4")
        if errors:
            self.fail("K4", errors[0])

    # -- K7: reset_cache ------------------------------------------------------------------------------
    @precondition(lambda self: hasattr(self.target.manager, "reset_cache"))
    @rule()
    def reset_cache(self) -> None:
        """K7: every block is dropped, in-flight ones included; the free count is the
        capacity again; no event announces it; pre-reset jobs are never completed."""
        self.take_events()
        self.step()
        self.log.add("m.reset_cache()")
        _, error = invoke(self.target.reset_cache)
        if error is not None:
            self.fail("K7", f"reset_cache raised {error!r}")
        self.judge.reset()
        self.inflight.clear()
        self.exercised("K7")
        self.sweep(("K7",), "after reset_cache")

    # -- not made against vLLM's interface ---------------------------------------------------------
    def strict_bad_types(self, data: st.DataObject) -> None:
        """Not a rule here: vLLM's interface does not check key types at run time (K3)."""
