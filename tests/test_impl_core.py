"""The compiled core's build machinery: one declared layout, a plain-Python twin that
leaves exactly the state the compiled code leaves, and a compile cache that persists in
the user cache directory when the package directory cannot be written (issue 12)."""

from __future__ import annotations

import copy
import json
import os
import random
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import kvoffload
from kvoffload.impl import CPUOffloadingManager
from kvoffload.impl.core import layout, runtime


@pytest.mark.parametrize("policy", ["lru", "arc", "s3fifo"])
def test_I8_key_rows_carry_the_tag_of_their_table_entry(policy: str) -> None:
    """Eviction reads a victim's tag from its key row (``table.row_head``) instead of
    fingerprinting the row again: after stores that evict (and, for ARC / S3-FIFO, make
    ghosts and bring them back) every indexed row's high half is its entry's tag, and
    ``check_invariants`` catches a row whose tag is wrong."""
    from kvoffload.spec.errors import ContractViolation

    rng = random.Random(3)
    pool = [rng.randbytes(rng.choice([8, 32, 40])) for _ in range(40)]
    manager = CPUOffloadingManager(6, policy=policy)
    for _ in range(60):
        out = manager.prepare_store(rng.sample(pool, 4))
        assert out is not None
        manager.complete_store(out.block_hashes_to_store)
        manager.check_invariants()
    entries = manager._table[manager._table != 0]
    nodes = (entries & np.uint64(0xFFFFFFFF)).astype(np.int64) - 1
    assert len(set((nodes >= 6).tolist())) == (1 if policy == "lru" else 2)  # ghosts indexed too
    block = int(nodes[0])
    manager._keys[block, 0] ^= np.uint64(1 << 40)
    with pytest.raises(ContractViolation, match="I8"):
        manager.check_invariants()


def test_layout_fields_tile_each_arena_without_gaps_or_overlaps() -> None:
    cap, ghosts = 7, 14
    for arena in (layout.A64, layout.A32, layout.A8):
        spans = sorted(
            layout.span(layout.FIELDS[name], cap, ghosts)
            for arena_of, name, *_ in layout.FIELD_TABLE
            if arena_of == arena
        )
        assert spans[0][0] == 0
        assert all(stop == start for (_, stop), (start, _) in zip(spans, spans[1:]))
        assert spans[-1][1] == layout.arena_sizes(cap, ghosts)[arena]
    manager = CPUOffloadingManager(cap, policy="arc")
    assert (manager._a64.size, manager._a32.size, manager._a8.size) == layout.arena_sizes(cap, 2 * cap)


def test_every_compiled_function_runs_without_reference_counting() -> None:
    """``jit.kernel``: every compiled function of the core, entry points included, is built
    without numba's reference counting (its per-array atomic incref/decref, and the
    counted wrapper made of each array argument at every entry, cost more than the work);
    and numba then refuses an allocation at compile time."""
    import numpy as np
    from numba.core.errors import TypingError

    from kvoffload.impl.core import batch, evict, ghosts, heap, lists, marks, ops, s3fifo, sieve, state, store, table
    from kvoffload.impl.core.jit import kernel

    modules = (batch, evict, ghosts, heap, lists, marks, ops, s3fifo, sieve, state, store, table)
    compiled = [value for module in modules for value in vars(module).values() if hasattr(value, "targetoptions")]
    assert len(compiled) > 40 and ops.touch in compiled and evict.apply_victims in compiled
    assert all(function.targetoptions.get("_nrt") is False for function in compiled)

    def allocates(n):  # type: ignore[no-untyped-def]
        return np.empty(n)[0]

    with pytest.raises(TypingError):
        kernel()(allocates)(3)


def test_result_codes_are_distinct_from_counts_and_each_other() -> None:
    slow = set(layout.SLOW_PATH)
    assert len(slow) == 3 and all(code < 0 for code in slow)
    assert layout.MISS not in slow and layout.REFUSED not in slow


def test_unknown_compile_mode_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KVOFFLOAD_COMPILE", "sometimes")
    with pytest.raises(ValueError, match="KVOFFLOAD_COMPILE"):
        runtime.mode()


def _io(manager: CPUOffloadingManager) -> Any:
    """``io`` less the one slot that differs between managers by design: the address of
    each one's own hash objects (``layout.INFO_OBJECTS``)."""
    io = manager._io.copy()
    assert io[layout.INFO_OBJECTS] == manager._objects.ctypes.data
    io[layout.INFO_OBJECTS] = 0
    return io


def _call(build: Any, manager: CPUOffloadingManager, hashes: list[bytes]) -> int:
    return int(build(*manager._state, id(hashes), len(hashes), manager._q, manager._io))


@pytest.mark.parametrize("policy", ["lru", "arc", "s3fifo", "sieve"])
def test_twin_and_compiled_builds_answer_and_change_state_identically(policy: str) -> None:
    """The same random calls (stores under pressure, failures, loads, touches of blocks
    and ghosts) through the twin on one manager and the compiled code on another: every
    result, output and state array is equal after every call."""
    rng = random.Random(12)
    pool = [rng.randbytes(rng.choice([8, 16, 32])) for _ in range(60)]
    twin_side = CPUOffloadingManager(16, policy=policy)
    compiled_side = CPUOffloadingManager(16, policy=policy)
    pending: list[bytes] = []
    loaded: list[bytes] = []
    names = ["lookup", "touch", "prepare_store", "store_ok", "store_fail", "prepare_load", "complete_load", "arc_finish",
             "arc_store_misses"]
    for _ in range(400):
        name = rng.choice(names)
        if name in ("store_ok", "store_fail"):
            hashes = rng.sample(pending, min(len(pending), rng.randint(1, 4))) or [pool[0]]
        elif name == "complete_load":
            hashes = loaded[:1] or [pool[0]]
        else:
            hashes = [rng.choice(pool) for _ in range(rng.randint(1, 8))]
        if name in ("arc_finish", "arc_store_misses"):  # K5, K6: per-key flags, the same on both sides
            flags = [rng.randint(0, 1) for _ in hashes]
            for side in (twin_side, compiled_side):
                side._out(layout.IO_OUT_A)[: len(flags)] = flags
        results = {_call(runtime.twin(name), twin_side, hashes), _call(runtime.compiled(name), compiled_side, hashes)}
        assert len(results) == 1, (name, results)
        for mine, theirs in zip(twin_side._state + (_io(twin_side),), compiled_side._state + (_io(compiled_side),)):
            assert np.array_equal(mine, theirs), name
        result = results.pop()
        if name == "prepare_store" and result > 0:
            pending += [hashes[i] for i in twin_side._out(layout.IO_OUT_A)[:result].tolist()]
        elif name in ("store_ok", "store_fail"):
            pending = [h for h in pending if h not in hashes]
        elif name == "prepare_load" and result > 0:
            loaded += hashes
        elif name == "complete_load" and result > 0:
            loaded.remove(hashes[0])
    twin_side.check_invariants()


_GOLDEN = 0x9E3779B97F4A7C15


def _hint_pair(manager: CPUOffloadingManager, block_hash: bytes) -> Any:
    """The hint pair ``(object address, node)`` that ``layout.HINT_SLOTS`` keeps for
    ``block_hash``'s object: a view of ``io``, at the slot its address maps to."""
    slot = ((id(block_hash) * _GOLDEN) % 2**64) >> (64 - layout.HINT_BITS)
    start = len(manager._io) - layout.IO_HINTS + 2 * slot
    return manager._io[start : start + 2]


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_hints_are_only_guesses_checked_before_use(policy: str) -> None:
    """A hint (``layout.HINT_SLOTS``: the node a hash object was last found at) names its
    node after a lookup; forged hints (another live block, a ghost, a freed block whose row
    still holds the hash, nodes out of range) change no answer and no state: two managers
    in the same state, one with every hint of the calls' objects forged before each call,
    answer every call alike and end byte for byte alike."""
    runtime.wait()  # hints come with the compiled calls that read the list itself
    rng = random.Random(8)
    pool = [rng.randbytes(32) for _ in range(14)]
    manager = CPUOffloadingManager(4, policy=policy)
    stored = manager.prepare_store(pool[:4])
    assert stored is not None
    manager.complete_store(stored.block_hashes_to_store)
    assert manager.lookup(pool[:1]) == 1
    assert list(_hint_pair(manager, pool[0])) == [id(pool[0]), int(stored.store_spec.block_ids[0])]
    forged = copy.deepcopy(manager)
    nodes = len(manager._lst)
    stored_at = {}  # the block each hash was last stored in: its row keeps the hash once freed
    for _ in range(300):
        hashes = rng.sample(pool, rng.randint(1, 4))
        for block_hash in hashes:  # a guess of any node, of none that exists, or of its old block
            guesses = [-3, nodes, nodes + 7, *range(nodes), *[stored_at.get(block_hash, -3)] * nodes]
            _hint_pair(forged, block_hash)[:] = (id(block_hash), rng.choice(guesses))
        name = rng.choice(["lookup", "touch", "prepare_store", "complete_store", "fail", "load"])
        complete = rng.random() < 0.5
        answers = []
        for side in (manager, forged):
            if name == "load":
                hits = side.lookup(hashes)
                answers.append(hits)
                if hits:
                    side.complete_load(hashes[:hits]) if side.prepare_load(hashes[:hits]) else None
            elif name == "prepare_store":
                out = side.prepare_store(hashes)
                answers.append(None if out is None else (out.block_hashes_to_store, out.block_hashes_evicted))
                if out is not None:
                    stored_at.update(zip(out.block_hashes_to_store, out.store_spec.block_ids.tolist()))
                    if complete:
                        side.complete_store(out.block_hashes_to_store)
            elif name == "fail":  # M7: the pending blocks freed, their rows left as they were
                answers.append(side.complete_store(hashes, success=False))
            else:
                answers.append(getattr(side, name)(hashes))
        assert answers[0] == answers[1], name
        assert all(np.array_equal(mine, theirs) for mine, theirs in zip(manager._state, forged._state))
    forged.check_invariants()


def _store_and_read(manager: CPUOffloadingManager, hashes: list[bytes], rng: random.Random) -> list[Any]:
    """A few calls of every kind on ``hashes`` (stores that evict, fail and succeed, loads,
    touches, lookups), their answers and events as plain values."""
    seen: list[Any] = []
    for start in range(0, len(hashes), 3):
        out = manager.prepare_store(hashes[start : start + 3])
        seen.append(None if out is None else (out.block_hashes_to_store, list(out.store_spec.block_ids),
                                              out.block_hashes_evicted))
        if out is not None and out.block_hashes_to_store:
            manager.complete_store(out.block_hashes_to_store, success=rng.random() < 0.7)
        manager.touch(rng.sample(hashes, 2))
        hits = manager.lookup(hashes)
        if hits:
            manager.prepare_load(hashes[:hits])
            manager.complete_load(hashes[:hits])
        seen.append((hits, [(e.block_hashes, e.removed) for e in manager.take_events()]))
    return seen


@pytest.mark.parametrize("policy", ["lru", "arc", "s3fifo", "sieve"])
def test_restore_state_returns_to_the_copy_and_answers_as_it(policy: str) -> None:
    """``restore_state(copy)`` (the model checker undoes calls with it) after calls that evict,
    fail, widen the key rows (a 64-byte hash) and leave events untaken: the state arrays,
    the logical state and every later answer are the copy's."""
    rng = random.Random(5)
    pool = [rng.randbytes(32) for _ in range(12)]
    manager = CPUOffloadingManager(4, policy=policy, enable_events=True)
    _store_and_read(manager, pool[:6], rng)
    manager.prepare_store(pool[6:7])  # a pending block and an event left in the queue
    snapshot, expected = copy.deepcopy(manager), copy.deepcopy(manager)
    _store_and_read(manager, [rng.randbytes(64), *pool[::-1]], rng)  # ARC: ghosts come back, ``p`` moves
    assert policy != "arc" or manager.arc_target != expected.arc_target
    manager.restore_state(snapshot)
    # Eviction's prefetches read each manager's own hash objects at the address io holds.
    assert [side._io[layout.INFO_OBJECTS] for side in (manager, snapshot, expected)] == [
        side._objects.ctypes.data for side in (manager, snapshot, expected)]
    assert manager.logical_state() == expected.logical_state()
    assert all(np.array_equal(mine, theirs) for mine, theirs in zip(manager._state, expected._state))
    calls = [*pool[5:], rng.randbytes(40)]
    assert _store_and_read(manager, calls, random.Random(9)) == _store_and_read(expected, calls, random.Random(9))


def test_restore_state_refuses_another_manager_and_changes_nothing() -> None:
    manager = CPUOffloadingManager(4, policy="arc", enable_events=True)
    manager.prepare_store([b"a" * 32, b"b" * 32])
    before = [array.copy() for array in manager._state]
    for other in (CPUOffloadingManager(5, policy="arc"), CPUOffloadingManager(4, policy="lru")):
        with pytest.raises(ValueError, match="copy of this manager"):
            manager.restore_state(other)
        assert all(np.array_equal(mine, then) for mine, then in zip(manager._state, before))


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_same_state_tells_a_call_that_changed_nothing_from_one_that_did(policy: str) -> None:
    """``same_state(copy)`` (the model checker forgets a call with it): true after calls that
    change nothing (lookups, a refused store, a touch of absent hashes), false after any call
    that changes a byte of state (a touch that only renews a stamp, a pin), true again once
    ``restore_state`` undid it."""
    pool = [bytes([i]) * 32 for i in range(6)]
    manager = CPUOffloadingManager(2, policy=policy, enable_events=True)
    stored = manager.prepare_store(pool[:2])
    assert stored is not None
    manager.complete_store(stored.block_hashes_to_store)
    manager.prepare_load(pool[:1])  # pinned: with the other ready block's store pending, nothing is evictable
    pending = manager.prepare_store(pool[2:3])
    assert pending is not None and list(pending.block_hashes_evicted) == [pool[1]]
    snapshot = copy.deepcopy(manager)
    manager.lookup(pool)
    assert manager.prepare_store(pool[3:4]) is None  # refused (M5.4): nothing moves
    manager.touch(pool[4:])
    assert manager.same_state(snapshot)
    manager.touch(pool[2:3])  # the pending block renewed
    assert not manager.same_state(snapshot)
    manager.restore_state(snapshot)
    assert manager.same_state(snapshot)
    manager.complete_load(pool[:1])
    assert not manager.same_state(snapshot)


def _run_python(code: str, env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


_FIRST_USE = """
import json, sys
import kvoffload.impl as impl
m = impl.CPUOffloadingManager(8)
if sys.argv[1] == "store":  # eager mode compiles what is called: the cache test calls lookup only
    out = m.prepare_store([b"x" * 32]); m.complete_store(out.block_hashes_to_store)
answer = m.lookup([b"x" * 32])
figures = {"answer": answer, "file": impl.__file__, "numba": "numba" in sys.modules}
if figures["numba"]:
    from kvoffload.impl.core import ops
    figures["hits"] = sum(ops.lookup.stats.cache_hits.values())
    figures["misses"] = sum(ops.lookup.stats.cache_misses.values())
print(json.dumps(figures))
"""


def _copy_package(tmp_path: Path) -> Path:
    """A copy of the package whose directories numba cannot use for its in-tree cache:
    read-only, and (so that this holds for root too) with a file where ``__pycache__``
    would go."""
    site = tmp_path / "site"
    shutil.copytree(Path(kvoffload.__file__).parent, site / "kvoffload", ignore=shutil.ignore_patterns("__pycache__"))
    folders = [site / "kvoffload", *[p for p in (site / "kvoffload").rglob("*") if p.is_dir()]]
    for folder in folders:
        (folder / "__pycache__").write_text("not a directory\n")
    for path in [*(site / "kvoffload").rglob("*"), *folders]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    return site


def _env(site: Path, home: Path, mode: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "KVOFFLOAD_", "PYTHON"))}
    env.update(PYTHONPATH=str(site), HOME=str(home), XDG_CACHE_HOME=str(home / "cache"), KVOFFLOAD_COMPILE=mode)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@pytest.mark.slow
def test_compile_cache_persists_in_the_user_cache_when_the_package_is_read_only(tmp_path: Path) -> None:
    site = _copy_package(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    env = _env(site, home, "eager")
    try:
        first = json.loads(_run_python(_FIRST_USE, env, tmp_path, "lookup").splitlines()[-1])
        second = json.loads(_run_python(_FIRST_USE, env, tmp_path, "lookup").splitlines()[-1])
    finally:
        for path in [site, *site.rglob("*")]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    assert first["file"].startswith(str(site)) and first["answer"] == 0 == second["answer"]
    assert (first["misses"], first["hits"]) == (1, 0)  # compiled, then saved ...
    assert (second["misses"], second["hits"]) == (0, 1)  # ... and loaded by the next process
    saved = list((home / "cache" / "numba").rglob("*.nbi"))
    assert saved, "nothing was written to the user cache directory"
    assert not [p for p in site.rglob("*.nb*")], "numba wrote into the package copy"


def test_twin_mode_answers_without_importing_numba(tmp_path: Path) -> None:
    env = _env(Path(kvoffload.__file__).parent.parent, tmp_path, "twin")
    out = json.loads(_run_python(_FIRST_USE, env, tmp_path, "store").splitlines()[-1])
    assert out["answer"] == 1 and out["numba"] is False
