"""Intrusive FIFO/recency queues over dense integer key ids, for the compiled replay.

Every key is in at most one queue at a time (``where[k]``: 0 none, else the queue's
number), so one pair of ``prev``/``nxt`` arrays serves every queue of a policy. Queue
``q``'s oldest key is ``ls[HEAD, q]``, its newest ``ls[TAIL, q]``, its length
``ls[SIZE, q]``; -1 means none.
"""

from __future__ import annotations

from ..impl.jitcache import cached_njit

__all__ = ["HEAD", "TAIL", "SIZE", "push", "unlink", "pop_oldest"]

HEAD, TAIL, SIZE = 0, 1, 2


@cached_njit()
def push(prev, nxt, where, ls, q, k):  # type: ignore[no-untyped-def]
    """Append key ``k`` (in no queue) at queue ``q``'s newest end."""
    tail = ls[TAIL, q]
    prev[k] = tail
    nxt[k] = -1
    if tail >= 0:
        nxt[tail] = k
    else:
        ls[HEAD, q] = k
    ls[TAIL, q] = k
    ls[SIZE, q] += 1
    where[k] = q


@cached_njit()
def unlink(prev, nxt, where, ls, k):  # type: ignore[no-untyped-def]
    """Take key ``k`` out of its queue (``where[k]`` becomes 0)."""
    q = where[k]
    p = prev[k]
    n = nxt[k]
    if p >= 0:
        nxt[p] = n
    else:
        ls[HEAD, q] = n
    if n >= 0:
        prev[n] = p
    else:
        ls[TAIL, q] = p
    ls[SIZE, q] -= 1
    where[k] = 0


@cached_njit()
def pop_oldest(prev, nxt, where, ls, q):  # type: ignore[no-untyped-def]
    """Remove and return queue ``q``'s oldest key (the queue must not be empty)."""
    k = ls[HEAD, q]
    unlink(prev, nxt, where, ls, k)
    return k
