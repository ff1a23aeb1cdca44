"""One scripted example at sizes above 256, for managers of the contract's interface.

CPython shares int objects only from -5 to 256, so a manager that compares two sizes with
``is``, or keeps a count in a byte, answers like a correct one until a call holds more than
256 blocks. The hypothesis machine (``ManagerMachine``) keeps its caches small (up to 32
blocks: evictions, full ghost lists and deep ARC states come from small caches) and cannot
draw hundreds of hashes without spending its budget on them. Mutation testing on vLLM
0.19's own manager found what that leaves out: ``assert len(blocks) is len(...)`` in
``prepare_store`` and ``if len(candidates) is n: break`` in its LRU's ``evict`` both
survived. vLLM-interface managers get a large arm inside their machine
(``lockstep/vllm/machine.py``); here, one fixed example runs after the hypothesis run has
passed, so that no example of any seed changes (an arm in the machine would shift every
draw after it).

The example drives the same machine (``ManagerMachine.call``, judged by the one judge, a
failure with its runnable reproduction) through a cache of ``CAPACITY`` blocks: one store
of the whole cache (M5, M6), a lookup of all of it (M1), a touch of every other block
(L2, A3), a load of 280 blocks (M2, M3), a store of 270 fresh hashes evicting 270 blocks
at once (M5.3, L3/A4, I6), and the machine's closing probe: a store of ``CAPACITY`` fresh
hashes evicting every block in one call, in order.
"""

from __future__ import annotations

from .manager_machine import ManagerMachine
from .strategies import large_pool

__all__ = ["CAPACITY", "run_large_example"]

#: The example's cache, in blocks: every batch, victim list and count below is above 256.
CAPACITY = 300
LOADED = 280
FRESH = 270


def run_large_example(machine_class: type[ManagerMachine]) -> None:
    """The scripted example on a new instance of ``machine_class`` (``runner.machine_for``'s
    class for a contract-interface manager); raises ``ConformanceFailure`` at the first
    verdict, as a hypothesis example would."""
    machine = machine_class()
    pool = large_pool(3 * CAPACITY)
    machine.start(CAPACITY, True, pool)
    stored, fresh = pool[:CAPACITY], pool[CAPACITY : CAPACITY + FRESH]
    machine._store_and_complete(stored, None)
    machine.no_aliasing()
    machine.call("lookup", stored, "list", exercising=("M1",))
    machine.call("touch", stored[::2], "list", exercising=("M4",))
    machine.call("prepare_load", stored[:LOADED], "list", exercising=("M2",))
    machine.call("complete_load", stored[:LOADED], "list", exercising=("M3",))
    machine._store_and_complete(fresh, None)
    machine.no_aliasing()
    machine.take_events()
    machine.teardown()
