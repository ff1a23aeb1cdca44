"""K5: a request observes one ``prepare_store``'s absent and ready keys in the order of
the offer, as vLLM's manager records them (not absent keys first)."""

from __future__ import annotations

from kvoffload.spec.keyed import RequestAccess, request_order

G0 = (0).to_bytes(4, "big")
A, B, C = b"a" * 8 + G0, b"b" * 8 + G0, b"c" * 8 + G0


def test_K5_offer_observed_in_input_order() -> None:
    access = RequestAccess()
    # B is ready, A and C absent; the offer lists B first
    access.offered([A, C], [B], [A, C], offer=[B, A, C])
    assert request_order(access) == [B, A, C]
    assert access.reused == {B} and access.inserted == {A, C}


def test_K5_pending_keys_of_the_offer_are_not_observed() -> None:
    access = RequestAccess()
    access.offered([C], [], [C], offer=[A, C])  # A pending: neither absent nor ready
    assert request_order(access) == [C]
