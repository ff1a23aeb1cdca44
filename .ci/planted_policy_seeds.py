"""Every planted POLICY bug of tests/test_conformance_bugs.py's CAUGHT, caught at each
seed (default budget, shrinking off) with an accepted clause: prints a table, exits 1
on any miss. Usage: python .ci/planted_policy_seeds.py [--first 0] [--seeds 10] [--only NAME ...]"""

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
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    misses = 0
    total = time.perf_counter()
    for name, kind, factory, policy, strict, clauses in CAUGHT:
        if kind != "policy" or (args.only and name not in args.only):
            continue
        cells, seconds = [], []
        for seed in range(args.first, args.first + args.seeds):
            result = run_conformance(kind, factory, policy=policy, strict=strict, seed=seed, shrink=False)
            seconds.append(result.seconds)
            hit = not result.ok and result.clause in clauses
            misses += not hit
            cells.append(f"{result.clause}" if hit else ("MISS" if result.ok else f"!{result.clause}"))
        print(f"{name:24s} {' '.join(f'{c:>4s}' for c in cells)}  max {max(seconds):5.1f}s sum {sum(seconds):6.1f}s",
              flush=True)
    print(f"{misses} misses; {time.perf_counter() - total:.0f}s")
    return 1 if misses else 0


if __name__ == "__main__":
    raise SystemExit(main())
