"""`rheo sample CASE.json`: the fast path on a table-model case (family rheo or static).

Decodes N independent continuations of the case's `tokens` tokens in batches of B trials and
prints one JSON object: the counts of the token sequences, the law of the first round's length
and its mean (tau), and the measured rounds per second. Bad input exits with status 2 and one
line (the `rheo` entry point turns every `RheoError` into that).
"""
from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from typing import TYPE_CHECKING

from rheo_ref.errors import CaseError
from rheo_ref.models import load_case
from rheo_ref.static import StaticScheme
from rheo_ref.variants import MUTANTS, variant_named

if TYPE_CHECKING:
    import torch

EPILOG = """\
output (one JSON object):
  counts             {"t1,t2,...": count} over the N continuations (first `tokens` tokens)
  first_round        {"emitted_length_counts": {"1": count, ...}, "tau": mean first-round length}
  rounds_per_second  rounds decoded per second of wall time (all trials, all rounds)
  mutant             only with --mutant: the broken variant that produced these samples
randomness: one torch.Generator seeded with --seed on --device; results depend on --batch too.
exit status: 0 ok, 2 bad input."""

MAX_CELLS = 1 << 24  # cap on B * expansions * V floats of one batch's q̃ rows


def register(subparsers) -> None:
    sp = subparsers.add_parser("sample", help="fast-path samples of a case (vectorised torch)",
                               description="Decode N independent continuations of a table-model case with the fast path.",
                               epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sp.add_argument("case", help="case file in the section-10 JSON format")
    sp.add_argument("--samples", type=int, required=True, metavar="N", help="number of independent continuations")
    sp.add_argument("--seed", type=int, required=True, metavar="S", help="seed of the torch.Generator")
    sp.add_argument("--device", default="cpu", metavar="DEV", help="cpu or cuda (default cpu)")
    sp.add_argument("--batch", type=int, default=None, metavar="B", help="trials per vectorised batch (default: up to 65536)")
    sp.add_argument("--tokens", type=int, default=None, help="tokens per continuation (default: the case's `tokens`)")
    sp.add_argument("--temperature", type=float, default=1.0, metavar="T",
                    help="1: the tables as given; 0: greedy q_samp and p; other T: rows to the power 1/T (float)")
    sp.add_argument("--threads", type=int, default=1, metavar="T",
                    help="torch CPU threads (default 1: the tensors are small, extra threads only contend)")
    sp.add_argument("--mutant", default=None, choices=sorted(MUTANTS), metavar="NAME",
                    help="run a deliberately broken variant (a negative control of the gate) of the case's scheme "
                         "family: " + ", ".join(sorted(MUTANTS)))
    sp.set_defaults(func=run_sample)


def check_args(args: argparse.Namespace) -> "torch.device":
    import torch

    if args.samples < 1:
        raise CaseError(f"--samples {args.samples} must be >= 1")
    if args.batch is not None and args.batch < 1:
        raise CaseError(f"--batch {args.batch} must be >= 1")
    if args.device not in ("cpu", "cuda") and not args.device.startswith("cuda:"):
        raise CaseError(f"--device {args.device!r} is not allowed; use cpu or cuda")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise CaseError(f"--device {args.device}: CUDA is not available on this machine; use --device cpu")
    if args.threads < 1:
        raise CaseError(f"--threads {args.threads} must be >= 1")
    if not args.temperature >= 0:
        raise CaseError(f"--temperature {args.temperature} must be >= 0")
    return torch.device(args.device)


def run_sample(args: argparse.Namespace) -> int:
    import torch

    device = check_args(args)
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    try:
        return _sample(args, device)
    finally:
        torch.set_num_threads(threads)


def _sample(args: argparse.Namespace, device: "torch.device") -> int:
    import torch

    from rheo_fast.decode import decode
    from rheo_fast.models import TableTreeModel
    from rheo_fast.tree import Layout

    case = load_case(args.case)
    n = case.tokens if args.tokens is None else args.tokens
    if n < 1:
        raise CaseError(f"--tokens {n} must be >= 1")
    variant = variant_named(args.mutant)
    s = case.scheme
    variant.check_family(s.family)  # a mutant of the other family is refused before any sampling
    if isinstance(s, StaticScheme):
        rows = s.nodes + 1  # q_samp rows [B, rows, V] of one round
    else:
        rows = Layout(s.K, s.W, s.D).E  # q̃ rows [B, rows, V] of one round
    model = TableTreeModel(case, T=args.temperature, device=device)
    B = args.batch or max(1, min(65536, MAX_CELLS // (rows * case.vocab_size)))
    B = min(B, args.samples)
    gen = torch.Generator(device=device).manual_seed(args.seed)
    counts: Counter = Counter()
    first: Counter = Counter()
    rounds, elapsed, done = 0, 0.0, 0
    bar = progress_bar(args.samples, B)
    while done < args.samples:
        b = min(B, args.samples - done)
        t0 = time.perf_counter()
        out = decode(model, [case.context] * b, s, n, generator=gen, variant=variant)
        toks, lens, nr = out.tokens.tolist(), out.first_lengths.tolist(), int(out.rounds.sum())
        elapsed += time.perf_counter() - t0
        counts.update(",".join(map(str, t)) for t in toks)
        first.update(lens)
        rounds, done = rounds + nr, done + b
        if bar is not None:
            bar.update(b)
    if bar is not None:
        bar.close()
    print(json.dumps({
        "counts": dict(sorted(counts.items())),
        "first_round": {"emitted_length_counts": {str(k): v for k, v in sorted(first.items())},
                        "tau": sum(k * v for k, v in first.items()) / args.samples},
        "rounds_per_second": rounds / elapsed if elapsed > 0 else None,
        **({"mutant": args.mutant} if args.mutant else {}),
    }))
    return 0


def progress_bar(samples: int, batch: int):
    """A tqdm bar on stderr when there is more than one batch (tqdm hides it off a terminal)."""
    if samples <= batch:
        return None
    from tqdm import tqdm
    return tqdm(total=samples, unit="seq", desc="rheo sample", disable=None, leave=False)
