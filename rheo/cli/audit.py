"""`rheo audit` (the `make run` job): the self-audit matrix of every registered family (rheo.selfgate.audit)."""

from __future__ import annotations

import argparse

from rheo.cli import flags
from rheo_ref.errors import CaseError
from rheo_ref.family import DEFAULT_FAMILIES
from rheo_ref.validate import integer, show


def run_audit_cmd(args: argparse.Namespace) -> int:
    from rheo.selfgate.audit import run_audit

    integer("--seed", args.seed, min=0, max=2**64 - 1)
    families = None
    if args.family is not None:
        from rheo.families.registry import suite_families

        known = suite_families()
        for name in args.family:
            if name not in known:
                raise CaseError(f"--family {show(name)} is not a registered family; allowed: {', '.join(known)}")
        families = tuple(args.family)
    return run_audit(json_path=args.json, statistical=not args.no_stats, seed=args.seed, families=families)


def register(sub) -> None:
    au = sub.add_parser(
        "audit",
        help="the main job: a matrix of schemes, exact TV, tau, enumeration sizes",
        description="Audit a built-in matrix of schemes: exact TV to the target, tau, brute vs classes "
        "enumeration sizes and times, and the fast path's statistical verdict.",
    )
    flags.json_file(au, what="the table")
    au.add_argument("--no-stats", action="store_true", help="skip the fast path's statistical verdict column")
    flags.seed(au, of="the statistical column")
    au.add_argument(
        "--family",
        action="append",
        metavar="NAME",
        help="audit only this family's rows (repeat for several; default: every registered family: "
        f"{', '.join(DEFAULT_FAMILIES)} and any added by rheo_ref.family.register)",
    )
    au.set_defaults(func=run_audit_cmd)
