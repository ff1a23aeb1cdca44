"""Five FrankTier variants, each with one realistic, non-crashing bug.

See BUGS.md for what each one gets wrong and a call sequence that shows it.
"""

import time

from vllm.v1.kv_offload.base import OffloadingEvent

from .tier import FrankTier


class _EvictWhileLoading(FrankTier):
    # BUG: "ready" is taken to mean "idle"; the load pin (readers) is ignored,
    # so a chunk that a load in flight is reading can be evicted and its slot
    # handed to a new store.
    def _evictable(self, chunk) -> bool:
        return chunk.ready


class _DoubleFreeOnEvict(FrankTier):
    # BUG: the victims' slots are reused directly for the new chunks, but
    # _remove() has already put those same slots back on the free list. The
    # tier now believes it has free space it does not have, and a later store
    # is given a slot that a live chunk still occupies (aliasing).
    def _allocate(self, n, protected):
        need = n - len(self._free)
        victims = self._pick_victims(need, protected) if need > 0 else []
        if victims is None:
            return None
        slots = [self._free.pop() for _ in range(n - len(victims))]
        for key in victims:
            slots.append(self._chunks[key].slot)
            self._remove(key)
        self._emit(victims, removed=True)
        return slots


class _SkippedKeyRowShift(FrankTier):
    # BUG: keys already present are filtered out first, then the remaining
    # keys are zipped with the *unfiltered* chunk_ids, so every new key after
    # a skipped one is stored from the wrong primary row.
    def _plan_store(self, keys, chunk_ids):
        new = [k for k in dict.fromkeys(keys) if k not in self._chunks]
        return list(zip(new, chunk_ids))


class _LoadStopsAtMiss(FrankTier):
    # BUG: the copy loop gives up at the first key that is not present, but
    # successful_keys is computed from what was present at submit time, so
    # keys after the miss are reported loaded although their rows were never
    # written.
    def _run_load(self, job_id, plan):
        start = time.monotonic()
        present = [key for key, slot, _ in plan if slot is not None]
        try:
            for _key, slot, cid in plan:
                if slot is None:
                    break  # job has failed anyway; stop copying
                self._read_slot(slot, cid)
        except Exception:
            present = []
        self._finish_load(job_id, plan, present, start)


class _CoalescedEvents(FrankTier):
    # BUG: to cut event volume, take_events() merges everything queued since
    # the last call into one stored event followed by one removed event. The
    # relative order of a removal and a later re-store of the same key is lost,
    # so replaying the events says a key is gone while it is stored.
    def take_events(self):
        events = list(super().take_events())
        stored = [k for e in events if not e.removed for k in e.keys]
        removed = [k for e in events if e.removed for k in e.keys]
        out = []
        for keys, is_removed in ((stored, False), (removed, True)):
            if keys:
                out.append(
                    OffloadingEvent(
                        keys=keys,
                        medium=self.medium,
                        removed=is_removed,
                        locality=self.locality,
                        ownership=self.tier_type,
                        removal_expected=True,
                    )
                )
        return out


def _build(cls, primary_kv_view, workdir, num_blocks, enable_events):
    return cls(
        offloading_spec=None,
        primary_kv_view=primary_kv_view,
        tier_type="frank",
        workdir=workdir,
        num_blocks=num_blocks,
        enable_events=enable_events,
    )


def make_evict_while_loading(primary_kv_view, workdir, num_blocks, enable_events=False):
    return _build(_EvictWhileLoading, primary_kv_view, workdir, num_blocks, enable_events)


def make_double_free_on_evict(primary_kv_view, workdir, num_blocks, enable_events=False):
    return _build(_DoubleFreeOnEvict, primary_kv_view, workdir, num_blocks, enable_events)


def make_skipped_key_row_shift(primary_kv_view, workdir, num_blocks, enable_events=False):
    return _build(_SkippedKeyRowShift, primary_kv_view, workdir, num_blocks, enable_events)


def make_load_stops_at_miss(primary_kv_view, workdir, num_blocks, enable_events=False):
    return _build(_LoadStopsAtMiss, primary_kv_view, workdir, num_blocks, enable_events)


def make_coalesced_events(primary_kv_view, workdir, num_blocks, enable_events=False):
    return _build(_CoalescedEvents, primary_kv_view, workdir, num_blocks, enable_events)


BUG_FACTORIES = {
    "evict_while_loading": make_evict_while_loading,
    "double_free_on_evict": make_double_free_on_evict,
    "skipped_key_row_shift": make_skipped_key_row_shift,
    "load_stops_at_miss": make_load_stops_at_miss,
    "coalesced_events": make_coalesced_events,
}
