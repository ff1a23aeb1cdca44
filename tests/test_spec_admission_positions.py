"""The model's N2 admission (``spec/admission.py``) and K5's order with key positions
(``spec/keyed.request_order``), against expectations written out by hand."""

from __future__ import annotations

import pytest

from kvoffload.spec.admission import ReferenceAdmission
from kvoffload.spec.keyed import RequestAccess, request_order


def _key(name: str, group: int) -> bytes:
    """An ``OffloadKey``: block hash + 4-byte big-endian KV cache group index."""
    return name.encode() * 8 + group.to_bytes(4, "big")


def test_N2_a_key_is_admitted_on_its_threshold_th_offer() -> None:
    admission = ReferenceAdmission(3)
    a, b = b"a" * 8, b"b" * 8
    assert admission.offer([a], lambda k: False) == []
    assert admission.offer([a, b], lambda k: False) == []
    assert admission.offer([b, a], lambda k: False) == [a]  # a: 3 offers, b: 2
    assert admission.counts == {b: 2, a: 3}


def test_N2_present_keys_are_kept_whatever_their_count() -> None:
    admission = ReferenceAdmission(2)
    a, b = b"a" * 8, b"b" * 8
    assert admission.offer([a, b], lambda k: k == b) == [b]


def test_N2_full_tracker_pushes_out_the_oldest_key_outside_the_offer() -> None:
    admission = ReferenceAdmission(2, max_tracker_size=2)
    a, b, c = b"a" * 8, b"b" * 8, b"c" * 8
    admission.offer([a], lambda k: False)
    admission.offer([b], lambda k: False)
    admission.offer([c], lambda k: False)  # a (the oldest) goes
    assert list(admission.counts) == [b, c]
    admission.offer([a], lambda k: False)  # b goes; a starts again at 1
    assert admission.counts == {c: 1, a: 1}
    # an offer of two tracked keys and a new one: nothing outside it to push out
    assert admission.offer([c, a, b], lambda k: False) == [c, a]
    assert admission.counts == {c: 2, a: 2}


def test_N2_preview_counts_nothing() -> None:
    admission = ReferenceAdmission(2)
    a = b"a" * 8
    admission.offer([a], lambda k: False)
    assert admission.preview([a], lambda k: False) == [a]
    assert admission.counts == {a: 1}


@pytest.mark.parametrize("threshold, tracker", [(1, 10), (0, 10), (2, 0), (True, 10), (2, 1.5)])
def test_N2_bad_settings_raise(threshold: object, tracker: object) -> None:
    with pytest.raises(ValueError, match="N2"):
        ReferenceAdmission(threshold, tracker)  # type: ignore[arg-type]


def _observed(*keys: bytes) -> RequestAccess:
    access = RequestAccess()
    access.loaded(keys)
    return access


def test_K5_without_positions_groups_then_first_observation() -> None:
    a0, b1, c0, d1 = _key("a", 0), _key("b", 1), _key("c", 0), _key("d", 1)
    assert request_order(_observed(b1, a0, d1, c0)) == [a0, c0, b1, d1]


def test_K5_all_positions_order_every_key_by_position_groups_breaking_ties() -> None:
    a0, a1, b0, b1 = _key("a", 0), _key("a", 1), _key("b", 0), _key("b", 1)
    positions = {a0: 32, a1: 32, b0: 16, b1: 16}
    assert request_order(_observed(a1, a0, b1, b0), positions) == [b0, b1, a0, a1]


def test_K5_a_group_with_every_position_is_ordered_alone() -> None:
    a0, b0, c1, d1 = _key("a", 0), _key("b", 0), _key("c", 1), _key("d", 1)
    positions = {a0: 48, b0: 16, c1: 0}  # d1 has none: group 1 keeps observation order
    assert request_order(_observed(d1, a0, c1, b0), positions) == [b0, a0, d1, c1]
