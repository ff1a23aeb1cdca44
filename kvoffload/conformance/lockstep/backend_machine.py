"""State machine for a ``Backend`` (B1–B4).

The model is the count of free blocks and the set of blocks handed out. Default mode
never over-allocates or frees a block twice; strict mode does, and expects B2 and B3
(a ``ContractViolation`` and no change).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from ...spec import BlockStatus
from .machine_base import ConformanceMachine, strict_rule
from .strategies import hash_pools

__all__ = ["BackendMachine"]


class BackendMachine(ConformanceMachine):
    kind = "backend"
    target_var = "b"

    @initialize(data=st.data())
    def setup(self, data: st.DataObject) -> None:
        self.capacity = data.draw(st.sampled_from((1, 2, 3, 4, 2, 3, 5, 8, 16, 32)), label="num_blocks")
        self.pool: list[bytes] = data.draw(hash_pools(1, 8), label="pool")
        self.target: Any = self.build(num_blocks=self.capacity)
        self.free_count = self.capacity
        self.live: list[tuple[Any, str]] = []  # handed-out blocks and their source
        self.freed: list[tuple[Any, str]] = []  # blocks given back (not live any more)
        self.medium = getattr(self.target, "medium", None)

    def live_ids(self) -> set[int]:
        return {int(block.block_id) for block, _ in self.live}

    def _free_check(self, clause: str, why: str) -> None:
        value = self.call_or_fail("B1", "get_num_free_blocks", self.target.get_num_free_blocks)
        if not 0 <= value <= self.capacity:
            self.fail("B1", f"get_num_free_blocks() is {value}, outside [0, {self.capacity}]",
                      f"0 <= b.get_num_free_blocks() <= {self.capacity}")
        if value != self.free_count:
            self.fail(clause, f"{why}, get_num_free_blocks() is {value}, expected {self.free_count}",
                      f"b.get_num_free_blocks() == {self.free_count}")

    def _allocate(self, count: int) -> None:
        self.step()
        hashes = [self.pool[i % len(self.pool)] + bytes([i]) for i in range(count)]
        var = self.log.var()
        source = "[" + ", ".join(f"{self.log.name(h[:-1])} + bytes([{i}])" for i, h in enumerate(hashes)) + "]"
        what = f"allocate_blocks of {count} blocks with {self.free_count} free"
        if count > self.free_count:
            self.refused("B2", f"b.allocate_blocks({source})", "over-allocation must raise", what,
                         self.target.allocate_blocks, hashes)
            self._free_check("B2", "after a refused over-allocation")
            return
        self.log.add(f"{var} = b.allocate_blocks({source})")
        blocks = list(self.call_or_fail("B2", what, self.target.allocate_blocks, hashes))
        if len(blocks) != count:
            self.fail("B2", f"allocate_blocks returned {len(blocks)} blocks for {count} hashes", f"len({var}) == {count}")
        taken = self.live_ids()
        for index, block in enumerate(blocks):
            if int(block.ref_cnt) != -1:
                self.fail("B2", f"a new block has ref_cnt {block.ref_cnt}, expected -1 (pending)",
                          f"{var}[{index}].ref_cnt == -1")
            if int(block.block_id) in taken:
                self.fail("B2", f"allocate_blocks handed out block id {block.block_id}, which is already live",
                          f"{var}[{index}].block_id not in {sorted(taken)!r}")
            if self.medium == "CPU" and not 0 <= int(block.block_id) < self.capacity:
                self.fail("B4", f"CPU block id {block.block_id} outside [0, {self.capacity})",
                          f"0 <= {var}[{index}].block_id < {self.capacity}")
            taken.add(int(block.block_id))
            self.live.append((block, f"{var}[{index}]"))
        self.free_count -= count
        self.exercised("B2", "B4")
        self._free_check("B2", f"after allocating {count}")

    @precondition(lambda self: self.free_count > 0)
    @rule(data=st.data())
    def allocate(self, data: st.DataObject) -> None:
        """B2 within the free count."""
        self._allocate(data.draw(st.integers(0, self.free_count), label="count"))

    @precondition(lambda self: bool(self.live))
    @rule(data=st.data())
    def free(self, data: st.DataObject) -> None:
        """B3 of a live block."""
        block, source = self.live.pop(data.draw(st.integers(0, len(self.live) - 1), label="block"))
        self.call_or_fail("B3", "free of a live block", self.target.free, block, source=f"b.free({source})")
        self.freed.append((block, source))
        self.free_count += 1
        self.exercised("B3")
        self._free_check("B3", "after a free")

    @precondition(lambda self: bool(self.live))
    @rule(data=st.data())
    def spec(self, data: st.DataObject) -> None:
        """B4: a spec of the backend's medium addressing exactly the blocks, in order."""
        self.step()
        chosen = data.draw(st.lists(st.integers(0, len(self.live) - 1), max_size=len(self.live), unique=True), label="blocks")
        blocks = [self.live[i][0] for i in chosen]
        hashes = [self.pool[i % len(self.pool)] for i in range(len(blocks))]
        var = self.log.var("spec")
        sources = "[" + ", ".join(self.live[i][1] for i in chosen) + "]"
        self.log.add(f"{var} = b.get_load_store_spec([{', '.join(map(self.log.name, hashes))}], {sources})")
        value = self.call_or_fail("B4", "get_load_store_spec", self.target.get_load_store_spec, hashes, blocks)
        self.exercised("B4")
        medium = value.medium() if hasattr(value, "medium") else None
        if medium != self.medium:
            self.fail("B4", f"spec medium {medium!r} differs from the backend's medium {self.medium!r}",
                      f"{var}.medium() == b.medium")
        ids = getattr(value, "block_ids", None)
        expected = [int(block.block_id) for block in blocks]
        if ids is not None and [int(i) for i in ids] != expected:
            self.fail("B4", f"spec addresses {[int(i) for i in ids]!r}, the blocks are {expected!r}",
                      f"list({var}.block_ids) == [blk.block_id for blk in {sources}]")

    @strict_rule
    def strict_over_allocate(self, data: st.DataObject) -> None:
        """B2: more than the free count raises, nothing changes."""
        self._allocate(self.free_count + data.draw(st.integers(1, 2), label="excess"))

    @strict_rule
    def strict_bad_free(self, data: st.DataObject) -> None:
        """B3: a double free or a foreign block raises, nothing changes."""
        self.step()
        live_ids = self.live_ids()
        stale = [(b, s) for b, s in self.freed if int(b.block_id) not in live_ids]  # a live block's id is live
        if bool(stale) and data.draw(st.booleans(), label="double"):
            block, source = stale[data.draw(st.integers(0, len(stale) - 1), label="freed")]
            what = "freeing a block twice"
        else:
            choices = [i for i in range(self.capacity + 2) if i not in live_ids]
            block_id = data.draw(st.sampled_from(choices), label="foreign id")
            block = BlockStatus(block_id)
            source = f"BlockStatus({block_id})"
            what = "freeing a block this backend did not hand out"
        self.refused("B3", f"b.free({source})", f"{what} must raise", what, self.target.free, block)
        self._free_check("B3", f"after {what} was refused")

    @invariant()
    def free_count_in_range(self) -> None:
        """B1 (checked once ``setup`` ran)."""
        self._free_check("B1", "between calls")
        self.exercised("B1")
