"""The compiled core of :class:`kvoffload.impl.CPUOffloadingManager` (numba, nopython).

* ``layout`` — the state layout and result ABI, declared once (read by both sides);
* ``state`` — arenas and ``io`` unpacked into views; ``batch``/``pyobj`` — reading a batch (``rows``: packing one in numpy; ``cpython``: the object layout);
* ``table`` — the hash table (I8); ``lists``, ``heap``, ``ghosts`` — recency lists,
  reactivated-block heaps, ARC's ghost lists;
* ``evict`` — eviction in the contract's steps (P5, L3, A4, A5); ``store`` — ``prepare_store``;
* ``ops`` — the entry points; ``runtime`` — compiled or plain-Python (``twin``) builds;
* ``jit`` — how a function is built (``kernel``).
"""
