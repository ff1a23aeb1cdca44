"""The compiled paths under ``NUMBA_BOUNDSCHECK=1`` (M9: no out-of-range index is ever used).

Runs in a subprocess with its own empty ``NUMBA_CACHE_DIR`` (a warm cache would silently
drop the flag: numba's cache key ignores it). A canary proves the lane can fail: a
deliberately out-of-bounds read in a small compiled function must raise ``IndexError``.
Then the manager runs in lockstep with the reference on random calls.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import os, random
    import numpy as np
    from numba import njit

    @njit(cache=True)
    def canary(a, i):
        return a[i]

    try:
        canary(np.zeros(3), 5)
    except IndexError:
        pass
    else:
        raise SystemExit("canary: out-of-bounds read did not raise; boundscheck is off")

    from kvoffload.impl import CPUOffloadingManager
    from kvoffload.spec import ContractViolation, ReferenceManager

    rng = random.Random(7)
    pool = [bytes([i]) * 8 for i in range(4)] + [bytes([i]) * 32 for i in range(10)]
    pool += [bytes([i]) * 32 + b"abcd" for i in range(4)] + [bytes([1]) * 8 + bytes(8)]
    for policy in ("lru", "arc"):
        for fingerprint in ("default", "constant", "low_bits:1"):
            impl = CPUOffloadingManager(num_blocks=5, policy=policy, enable_events=True,
                                        fingerprint=fingerprint)
            ref = ReferenceManager(5, policy=policy, enable_events=True)
            for step in range(600):
                impl.direct = step % 3 != 0  # both front ends (list reader, packed buffer)
                op = rng.choice(["lookup", "touch", "prepare_store", "prepare_load",
                                 "complete_load", "complete_store", "complete_store_fail"])
                batch = rng.sample(pool, rng.randint(0, 6))
                args = (batch, False) if op == "complete_store_fail" else (batch,)
                name = "complete_store" if op == "complete_store_fail" else op
                results = []
                for manager in (impl, ref):
                    try:
                        out = getattr(manager, name)(list(args[0]), *args[1:])
                        if out is not None and hasattr(out, "block_hashes_to_store"):
                            out = (out.block_hashes_to_store, out.block_hashes_evicted)
                        elif out is not None and hasattr(out, "block_ids"):
                            out = len(out.block_ids)
                        results.append(("ok", out))
                    except ContractViolation as error:
                        results.append(("violation", error.clause))
                assert results[0] == results[1], (policy, fingerprint, step, op, results)
                got = [(e.block_hashes, e.removed) for e in impl.take_events()]
                want = [(e.block_hashes, e.removed) for e in ref.take_events()]
                assert got == want, (policy, fingerprint, step)
                impl.check_invariants()
    print("BOUNDSCHECK-LOCKSTEP-OK")
    """
)


def test_M9_compiled_paths_under_boundscheck(tmp_path: Path) -> None:
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    script = tmp_path / "boundscheck_lane.py"
    script.write_text(SCRIPT, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "BOUNDSCHECK-LOCKSTEP-OK" in done.stdout
