"""Every planted bug of tests/test_conformance_bugs.py's CAUGHT, run at each seed (default
budget, shrinking off): prints a table, exits 1 on any miss. A policy bug must be caught
with an accepted clause; a manager or backend bug must be caught (unshrunk, the first
failure found may name a clause its consequence broke first, e.g. I8 for a bug of M0:
the cell shows it as ``!CLAUSE``; users get the shrunk report, which the default tests
check at seed 0). Usage: python .ci/planted_seeds.py [--first 0] [--seeds 10]
[--kinds policy,manager,backend] [--only NAME ...]"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from kvoffload.conformance import run_conformance  # noqa: E402
from test_conformance_bugs import CAUGHT  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--first", type=int, default=0, help="first seed")
    parser.add_argument("--seeds", type=int, default=10, help="how many seeds")
    parser.add_argument("--kinds", default="policy,manager,backend", help="comma-separated kinds of target")
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    kinds = set(args.kinds.split(","))
    misses = 0
    total = time.perf_counter()
    for name, kind, factory, policy, strict, clauses in CAUGHT:
        if kind not in kinds or (args.only and name not in args.only):
            continue
        cells, seconds = [], []
        for seed in range(args.first, args.first + args.seeds):
            result = run_conformance(kind, factory, policy=policy, strict=strict, seed=seed, shrink=False)
            seconds.append(result.seconds)
            accepted = result.clause in clauses
            hit = not result.ok and (accepted or kind != "policy")
            misses += not hit
            cells.append("MISS" if result.ok else (result.clause if accepted else f"!{result.clause}"))
        print(f"{kind:8s} {name:26s} {' '.join(f'{c:>5s}' for c in cells)}  max {max(seconds):5.1f}s "
              f"sum {sum(seconds):6.1f}s", flush=True)
    print(f"{misses} misses; {time.perf_counter() - total:.0f}s")
    return 1 if misses else 0


if __name__ == "__main__":
    raise SystemExit(main())
