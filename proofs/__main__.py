"""`python -m proofs`: run every claim, print claim · method · verdict · seconds.

Exit status 0 when every verdict equals the recorded one, 1 otherwise (a proved statement that
no longer checks, or a recorded counterexample that stopped refuting), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rheo_ref import strict_json
from rheo_ref.atomic import open_atomic

from . import all_claims
from ._claim import run_claim


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m proofs", description=__doc__.splitlines()[0])
    ap.add_argument(
        "--only", action="append", metavar="ID", help="run only claims whose id starts with ID (repeatable)"
    )
    ap.add_argument("--json", metavar="PATH", help="also write every result (numbers, counterexamples) as JSON")
    ap.add_argument("--list", action="store_true", help="list the claims and their recorded verdicts, run nothing")
    args = ap.parse_args(argv)
    claims = all_claims()
    if args.only:
        claims = [c for c in claims if any(c.id == o or c.id.startswith(o + ".") for o in args.only)]
        if not claims:
            ap.error(f"no claim matches {args.only}; ids: {', '.join(c.id for c in all_claims())}")
    if args.list:
        for c in claims:
            print(f"{c.id:8} {c.recorded:45} {c.statement}")
        return 0
    t0 = time.perf_counter()
    results, bad = [], []
    for c in claims:
        r = run_claim(c)
        results.append(r)
        mark = "" if r.ok else f"   <-- recorded: {c.recorded}"
        print(
            f"{c.id} · {c.statement} · {c.method} · {r.outcome.verdict} · {r.seconds:.2f}s{mark}\n"
            f"    {r.outcome.detail}",
            flush=True,
        )
        if not r.ok:
            bad.append(r)
    print(f"\n{len(results) - len(bad)}/{len(results)} verdicts as recorded, {time.perf_counter() - t0:.1f}s")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        with open_atomic(args.json) as fh:
            strict_json.dump(
                [
                    {
                        "id": r.claim.id,
                        "statement": r.claim.statement,
                        "method": r.claim.method,
                        "recorded": r.claim.recorded,
                        "verdict": r.outcome.verdict,
                        "detail": r.outcome.detail,
                        "counterexample": r.outcome.counterexample,
                        "numbers": r.outcome.numbers,
                        "seconds": round(r.seconds, 3),
                    }
                    for r in results
                ],
                fh,
                indent=1,
                default=str,
            )
    for r in bad:
        print(
            f"DIFFERS: {r.claim.id}: {r.outcome.verdict} (recorded {r.claim.recorded}): {r.outcome.detail}",
            file=sys.stderr,
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
