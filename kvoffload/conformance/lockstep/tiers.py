"""Conformance of tiers (T1, T2, T4, T5) in lockstep with the reference model (``spec.tiers``).

``check_tier(factory)`` drives a tier — ``factory(num_blocks=, policy=)`` returning an
object with ``lookup``, ``touch``, ``submit_store(job, hashes, payloads)``,
``submit_load(job, hashes, outs)``, ``get_finished()``, ``drain()``, ``quarantined`` and the
fault hooks ``fail_writes(hashes)`` and ``damage(hash)`` — and ``ReferenceTier`` with the
same seeded calls and faults, and compares every answer and the bytes of every load.

``check_shared_table(factory)`` drives two clients of one shared block table —
``factory(num_blocks=, client_id=, lease_ms=, clock=)``, all on one namespace, with
``lookup``, ``touch``, ``prepare_store``, ``finish_store(hashes, success, need_record=False)``,
``prepare_load``, ``complete_load(hashes, strict=False)`` and ``blocks_ref_counts()`` —
against ``ReferenceSharedTier`` on an explicit clock, leases running out on the way.

Each returns a list of findings (empty: conforms); each finding names its clause.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from typing import Any

from ...spec.tiers import ReferenceSharedTier, ReferenceTier, payload_of
from ...spec.types import BlockHash

__all__ = ["check_tier", "check_shared_table"]


def _h(i: int) -> BlockHash:
    return BlockHash(hashlib.sha256(b"tier-check:%d" % i).digest())


def _run_job(tier: Any) -> Any:
    tier.drain()
    results = list(tier.get_finished())
    if len(results) != 1:
        raise AssertionError(f"H2: one job submitted and drained, {len(results)} reported")
    return results[0]


def _store_step(tier: Any, model: ReferenceTier, rng: random.Random, hashes: list[BlockHash], job: int, size: int) -> str | None:
    doomed = {h for h in hashes if rng.random() < 0.2}
    tier.fail_writes(doomed)
    payloads = {h: payload_of(h, size) for h in hashes}
    expected = model.store(hashes, payloads, doomed)
    tier.submit_store(job, hashes, [memoryview(payloads[h]) for h in hashes])
    result = _run_job(tier)
    want = expected is not None and not doomed & set(expected.block_hashes_to_store)
    if bool(result.success) != want:
        return f"T2: store job {job} reported success={result.success}, the model says {want}"
    return None


def _load_step(tier: Any, model: ReferenceTier, hashes: list[BlockHash], job: int, size: int) -> str | None:
    hits = model.lookup(hashes)
    got = tier.lookup(hashes)
    if got != hits:
        return f"M1/T1: lookup answered {got}, the model {hits}"
    if not hits:
        return None
    outs = [bytearray(size) for _ in hashes[:hits]]
    tier.submit_load(job, hashes[:hits], [memoryview(o) for o in outs])
    result = _run_job(tier)
    served = {h: bytes(o) for h, o in zip(hashes, outs) if h in set(result.done)}
    expected = model.load(hashes[:hits])
    if served != expected:
        return f"T1/E1: load job {job} served {len(served)} blocks, the model {len(expected)} (or other bytes)"
    return None


def check_tier(factory: Callable[..., Any], policy: str = "lru", seeds: int = 4, steps: int = 120,
               num_blocks: int = 6, payload_bytes: int = 4608) -> list[str]:
    """T1, T2 (and M1–M7 through them): findings of ``seeds`` seeded runs of ``steps`` jobs."""
    findings: list[str] = []
    universe = [_h(i) for i in range(10)]
    for seed in range(seeds):
        rng = random.Random(seed)
        tier, model = factory(num_blocks=num_blocks, policy=policy), ReferenceTier(num_blocks, policy)
        for job in range(steps):
            hashes = rng.sample(universe, rng.randrange(1, 4))
            action = rng.random()
            finding = None
            if action < 0.45:
                finding = _store_step(tier, model, rng, hashes, job, payload_bytes)
            elif action < 0.75:
                finding = _load_step(tier, model, hashes, job, payload_bytes)
            elif action < 0.85:
                for h in [h for h in hashes if h in model.payloads and h not in model.damaged][:1]:
                    model.damage(h)
                    tier.damage(h)
            else:
                model.touch(hashes)
                tier.touch(hashes)
            if finding is None and set(tier.quarantined) != model.quarantined:
                finding = "T1: the quarantined blocks differ from the model's"
            if finding is not None:
                findings.append(f"seed {seed}, step {job}: {finding}")
                break
        getattr(tier, "close", lambda: None)()  # a tier holding files or connections lets them go
    return findings


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


def _stored_evicted(output: Any) -> tuple[Any, Any] | None:
    """``prepare_store``'s answer as (hashes to store, hashes evicted), or ``None`` (M5)."""
    return None if output is None else (output.block_hashes_to_store, output.block_hashes_evicted)


def _shared_step(tables: dict[str, Any], model: ReferenceSharedTier, rng: random.Random, clock: _Clock,
                 held: dict[str, tuple[list[BlockHash], list[BlockHash]]], universe: list[BlockHash]) -> str | None:
    name = rng.choice(sorted(tables))
    table, hashes, action = tables[name], rng.sample(universe, rng.randrange(1, 4)), rng.random()
    pending, pinned = held[name]
    if action < 0.3:
        want = _stored_evicted(model.prepare_store(name, hashes, clock.now))
        got = _stored_evicted(table.prepare_store(hashes))
        if got != want:
            return (f"M5/T4: prepare_store answered {got!r}, the model {want!r}" if None in (got, want)
                    else "M5/T5: stored or evicted hashes differ from the model's")
        pending += got[0] if got is not None else []
    elif action < 0.5 and pending:
        batch, success = pending[:2], rng.random() < 0.8
        del pending[:2]
        if list(table.finish_store(batch, success, need_record=False)) != model.complete_store(name, batch, success, clock.now):
            return "T4: complete_store acted on other blocks than the client's live pending ones"
    elif action < 0.7:
        hits = model.lookup(hashes, clock.now)
        if table.lookup(hashes) != hits:
            return "M1: lookup differs from the model's"
        if hits:
            model.prepare_load(name, hashes[:hits], clock.now)
            table.prepare_load(hashes[:hits])
            pinned += hashes[:hits]
    elif action < 0.85 and pinned:
        batch = pinned[:3]
        del pinned[:3]
        model.complete_load(name, batch, clock.now)
        table.complete_load(batch, strict=False)
    elif action < 0.92:
        model.touch(hashes, clock.now)
        table.touch(hashes)
    else:
        clock.now += rng.choice([10, 60, 120])  # some leases run out (T4)
    if dict(table.blocks_ref_counts()) != {h: b.ref_cnt for h, b in model.manager.blocks().items()}:
        return "T4/T5: ref counts on the shared state differ from the model's"
    return None


def check_shared_table(factory: Callable[..., Any], steps: int = 400, seed: int = 7, num_blocks: int = 5,
                       lease_ms: int = 100) -> list[str]:
    """T4, T5, T6 (and M1–M7): two clients against ``ReferenceSharedTier``; findings."""
    clock, rng = _Clock(), random.Random(seed)
    tables = {name: factory(num_blocks=num_blocks, client_id=name, lease_ms=lease_ms, clock=clock) for name in "ab"}
    model = ReferenceSharedTier(num_blocks, lease_ms=lease_ms)
    held: dict[str, tuple[list[BlockHash], list[BlockHash]]] = {n: ([], []) for n in tables}  # (pending, pinned)
    universe = [_h(i) for i in range(9)]
    for step in range(steps):
        finding = _shared_step(tables, model, rng, clock, held, universe)
        if finding is not None:
            return [f"step {step}: {finding}"]
    clock.now += 10 * lease_ms
    model.expire(clock.now)
    tables["a"].lookup(universe[:1])  # T6: every step first reclaims expired leases
    leftover = {h: rc for h, rc in tables["a"].blocks_ref_counts().items() if rc != 0}
    if leftover:
        return [f"T4: {len(leftover)} blocks still pinned or pending after every lease ended"]
    return []
