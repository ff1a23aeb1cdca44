"""The caller's model of a vLLM secondary tier (``spec.secondary_tier``, T7–T12): what the
judge of ``kvoffload conform tier`` asks of it, without vLLM."""

from __future__ import annotations

from kvoffload.spec.secondary_tier import SecondaryTierModel
from kvoffload.spec.tiers import payload_of

A, B = b"a" * 36, b"b" * 36
ROW = 64


def _stored(model: SecondaryTierModel) -> None:
    """Job 1 stores A from row 0 and is reported; the caller scribbles row 0."""
    assert model.submit_store(1, [A], [0]) == [(0, payload_of(A, ROW))]
    job, fault = model.finish(1, True, None)
    assert fault is None and job is not None
    model.scribble(job, 2)


def test_T7_hit_only_for_a_key_a_store_carried() -> None:
    model = SecondaryTierModel(4, ROW, 2)
    assert model.hit_allowed(A) is not None and model.hit_allowed(A).startswith("T7")
    model.submit_store(1, [A], [0])
    assert model.hit_allowed(A) is None  # in flight is enough: the load then holds it to T8


def test_T8_loaded_bytes_are_the_keys_and_wrong_ones_are_told_apart() -> None:
    model = SecondaryTierModel(4, ROW, 2)
    _stored(model)
    model.submit_store(3, [B], [1])
    model.submit_load(4, [A], [2], owed=True)
    assert model.free_rows(3) is None and model.free_rows(2) == [3, 0]  # row 0 was given back last
    job, fault = model.finish(4, True, None)
    assert fault is None and job is not None
    assert model.served(job, True, None) == [(A, 2)]
    assert model.wrong_bytes(A, 2, payload_of(A, ROW)) is None
    assert "another key" in model.wrong_bytes(A, 2, payload_of(B, ROW))
    assert "was not written" in model.wrong_bytes(A, 2, bytes(ROW))
    scribbled = model.expected[0]  # what the caller wrote into row 0 after job 1
    assert model.wrong_bytes(A, 2, scribbled).startswith("T8, T10")


def test_T8_an_owed_load_must_succeed_and_successful_keys_belong_to_the_job() -> None:
    model = SecondaryTierModel(4, ROW, 2)
    _stored(model)
    model.submit_load(3, [A], [1], owed=True)
    job, fault = model.finish(3, False, None)
    assert job is not None and fault is not None and fault.startswith("T8: load job 3 failed")
    model.scribble(job, 4)
    model.submit_load(5, [A], [1], owed=False)
    job, fault = model.finish(5, False, [B])
    assert job is not None and fault is not None and fault.startswith("T8: successful_keys")
    model.scribble(job, 6)
    model.submit_load(5, [A], [1], owed=False)
    job, fault = model.finish(5, False, [])
    assert fault is None and job is not None and model.served(job, False, []) == []


def test_T9_each_job_reported_once() -> None:
    model = SecondaryTierModel(4, ROW, 2)
    _stored(model)
    assert "a second time" in model.finish(1, True, None)[1]
    assert "never submitted" in model.finish(9, True, None)[1]
    model.submit_store(3, [B], [1])
    assert model.unreported() == [3]


def test_T10_rows_the_tier_may_not_write_are_watched() -> None:
    model = SecondaryTierModel(4, ROW, 2)
    model.submit_store(1, [A], [0])
    model.submit_load(2, [A], [1], owed=False)
    rows = dict(model.expected)
    assert 1 not in rows  # the load's row: the tier writes it
    assert model.changed_rows(rows.items()) is None
    fault = model.changed_rows([(0, bytes(ROW))])
    assert fault is not None and "while store job 1 was reading it" in fault
    assert model.changed_rows([(1, b"anything")]) is None


def test_T11_events_name_keys_given_and_removals_are_remembered() -> None:
    model = SecondaryTierModel(4, ROW, 2)
    assert model.event_fault([A], removed=False).startswith("T11")
    model.submit_store(1, [A], [0])
    assert model.event_fault([A], removed=False) is None
    assert model.event_fault([A], removed=True) is None and model.announced_removed() == [A]
    assert model.event_fault([A], removed=False) is None and model.announced_removed() == []
    assert model.event_fault([A], removed=True, metadata_only=True) is None
    assert model.announced_removed() == []  # metadata only: no public change


def test_T12_a_store_with_room_and_nothing_in_flight_must_succeed() -> None:
    model = SecondaryTierModel(4, ROW, 2)
    model.submit_store(1, [A, B], [0, 1])  # nothing in flight, 2 keys for a capacity of 2: owed
    assert model.finish(1, False, None)[1].startswith("T12: store job 1")
    model.submit_store(2, [A], [2])
    model.submit_store(3, [B], [3])  # job 2 in flight: job 3 may fail
    assert model.finish(3, False, None)[1] is None
    assert model.finish(2, True, None)[1] is None
    model.submit_store(5, [A, B, b"c" * 36], [2, 3, 0][:3])  # more keys than the capacity: may fail
    assert not model.in_flight[5].owed and model.finish(5, False, None)[1] is None


def test_T13_keys_stored_within_capacity_must_be_kept_until_a_rebuild() -> None:
    model = SecondaryTierModel(4, ROW, 2)
    model.submit_store(1, [A], [0])
    assert model.must_keep() == []  # in flight
    model.finish(1, True, None)
    assert model.must_keep() == [A]
    model.submit_store(2, [B], [1])
    model.finish(2, False, None)  # a failed store of B: A must still be kept, B need not be
    assert model.must_keep() == [A]
    model.rebuilt()
    assert model.must_keep() == []
    model.submit_store(3, [b"c" * 36], [2])
    model.finish(3, True, None)
    assert model.must_keep() == []  # three distinct keys given to a tier of two: it may evict
