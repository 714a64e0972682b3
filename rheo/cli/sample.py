"""`rheo sample CASE.json`: the fast path on a table-model case (family rheo or static).

Decodes N independent continuations of the case's `tokens` tokens in batches of B trials and
prints one JSON object: the counts of the token sequences, the law of the first round's length
and its mean (tau), and the measured rounds per second. Bad input exits with status 2 and one
line (the `rheo` entry point turns every `RheoError` into that).
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter
from typing import TYPE_CHECKING

from rheo.cli import flags
from rheo_fast.family import fast_family_of
from rheo_ref import strict_json
from rheo_ref.errors import CaseError
from rheo_ref.models import Case, load_case
from rheo_ref.sizes import Size, available_memory, batch_bytes, count, gib
from rheo_ref.validate import integer, number, show, within_limit
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
size limits (refused before any work, with the estimate; --force overrides): token draws
--samples x tokens <= 10^8; cells --samples x tokens x nodes x V <= 10^9; tree levels in sequence
batches x tokens x D <= 10^6; one batch's [B, nodes, V] float64 tensors within the memory available.
exit status: 0 ok, 2 bad input or a size refused as too large, 130 interrupted (docs/CLI.md)."""

MAX_CELLS = 1 << 24  # cap on B * expansions * V floats of one batch's q̃ rows
MAX_DRAWS = 10**8  # --samples x tokens (each sequence is counted in Python)
MAX_WORK = 10**9  # --samples x tokens x nodes x V: float64 cells of the rounds' rows (~5e6 per second on one core)
MAX_LEVELS = 10**6  # batches x tokens x D: tree levels decoded in sequence (~0.1 ms each)
MAX_SEED = 2**64 - 1  # torch.Generator.manual_seed takes 64 bits
MAX_THREADS = 1024


def register(subparsers) -> None:
    sp = subparsers.add_parser(
        "sample",
        help="fast-path samples of a case (vectorised torch)",
        description="Decode N independent continuations of a table-model case with the fast path.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sp.add_argument("case", help="case file in the section-10 JSON format")
    sp.add_argument("--samples", type=int, required=True, metavar="N", help="number of independent continuations")
    flags.seed(sp, of="the torch.Generator", required=True)
    sp.add_argument("--device", default="cpu", metavar="DEV", help="cpu or cuda (default cpu)")
    sp.add_argument(
        "--batch", type=int, default=None, metavar="B", help="trials per vectorised batch (default: up to 65536)"
    )
    sp.add_argument("--tokens", type=int, default=None, help="tokens per continuation (default: the case's `tokens`)")
    sp.add_argument(
        "--temperature",
        type=float,
        default=1.0,
        metavar="T",
        help="1: the tables as given; 0: greedy q_samp and p; other T: rows to the power 1/T (float)",
    )
    sp.add_argument(
        "--threads",
        type=int,
        default=1,
        metavar="T",
        help="torch CPU threads (default 1: the tensors are small, extra threads only contend)",
    )
    sp.add_argument(
        "--mutant",
        default=None,
        choices=sorted(MUTANTS),
        metavar="NAME",
        help="run a deliberately broken variant (a negative control of the gate) of the case's scheme "
        "family: " + ", ".join(sorted(MUTANTS)),
    )
    sp.add_argument("--force", action="store_true", help="run even when a size estimate exceeds its limit")
    sp.set_defaults(func=run_sample)


def check_args(args: argparse.Namespace) -> torch.device:
    import torch

    integer("--samples", args.samples, min=1)
    integer("--seed", args.seed, min=0, max=MAX_SEED)
    if args.batch is not None:
        integer("--batch", args.batch, min=1)
    integer("--threads", args.threads, min=1, max=MAX_THREADS)
    number("--temperature", args.temperature, min=0)
    if not re.fullmatch(r"cpu|cuda(:[0-9]{1,4})?", args.device):
        raise CaseError(f"--device {show(args.device)} is not allowed; use cpu, cuda or cuda:<index>")
    if args.device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise CaseError(f"--device {args.device}: CUDA is not available on this machine; use --device cpu")
        if args.device != "cuda" and int(args.device[5:]) >= torch.cuda.device_count():
            raise CaseError(f"--device {args.device}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    return torch.device(args.device)


def check_sizes(case: Case, n: int, args: argparse.Namespace) -> int:
    """Refuse, before any tensor exists, a case whose tables or batches cannot fit; return the batch
    size B (--batch, or the largest with B x expansions x V <= MAX_CELLS, at most 65536)."""
    import math

    s, V = case.scheme, case.vocab_size
    E, N = fast_family_of(s).rows(s)  # rows of one round's draft tensor [B, E, V]; nodes
    for model in {id(m): m for m in (case.draft, case.q_samp_model, case.target)}.values():
        if model.context_length >= 62 / math.log2(
            V + 1
        ):  # rheo_fast.models._Table's context codes (no int*float overflow)
            raise CaseError(
                f"{model.name}: context_length {model.context_length} with vocab_size {V} is too large "
                f"for 64-bit context codes; allowed: (V+1)^context_length < 2^62"
            )
    B = args.batch or max(1, min(65536, MAX_CELLS // (E * V)))
    B = min(B, args.samples)
    if args.force:
        return B
    override = "use fewer --samples or --tokens, a smaller scheme, or --force to run anyway"
    draws = f"--samples {count(args.samples)} x {count(n)} tokens"
    within_limit(f"{draws}: token draws", args.samples * n, MAX_DRAWS, override=override)
    within_limit(
        f"{draws} x {count(N)} tree nodes x V={count(V)}: cells of the rounds' rows (at most one round per token)",
        Size.of(args.samples * n) * Size.of(N) * Size.of(V),
        MAX_WORK,
        override=override,
    )
    batches = -(-args.samples // B)
    within_limit(
        f"{count(batches)} batches x {count(n)} tokens x D={count(s.D)}: tree levels decoded one after another",
        batches * n * s.D,
        MAX_LEVELS,
        override=override,
    )
    mem = device_memory(args.device)
    if mem is not None:
        need = batch_bytes(B, N, V)
        within_limit(
            f"{'--batch' if args.batch else 'the batch'} {count(B)} (x {count(N)} nodes x V={count(V)} "
            f"x 8 bytes): bytes of one batch's tensors",
            need,
            mem,
            override=f"{gib(mem)} of memory is available; use a smaller --batch or scheme, or --force to run anyway",
        )
    return B


def device_memory(device: str) -> int | None:
    """Bytes free on `device` (cpu: memory available to processes), or None when unknown."""
    if device == "cpu":
        return available_memory()
    import torch

    try:
        return torch.cuda.mem_get_info(torch.device(device))[0]
    except (RuntimeError, AssertionError):
        return None


def run_sample(args: argparse.Namespace) -> int:
    import torch

    device = check_args(args)
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    try:
        return _sample(args, device)
    finally:
        torch.set_num_threads(threads)


def _sample(args: argparse.Namespace, device: torch.device) -> int:
    import torch

    from rheo_fast.decode import decode
    from rheo_fast.models import TableTreeModel

    case = load_case(args.case)
    n = case.tokens if args.tokens is None else args.tokens
    variant = variant_named(args.mutant)
    s = case.scheme
    variant.check_family(s.family)  # a mutant of another family is refused before any sampling
    B = check_sizes(case, n, args)
    model = TableTreeModel(case, T=args.temperature, device=device)
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
    print(
        strict_json.dumps(
            {
                "counts": dict(sorted(counts.items())),
                "first_round": {
                    "emitted_length_counts": {str(k): v for k, v in sorted(first.items())},
                    "tau": sum(k * v for k, v in first.items()) / args.samples,
                },
                "rounds_per_second": rounds / elapsed if elapsed > 0 else None,
                **({"mutant": args.mutant} if args.mutant else {}),
            }
        )
    )
    return 0


def progress_bar(samples: int, batch: int):
    """A tqdm bar on stderr when there is more than one batch (tqdm hides it off a terminal)."""
    if samples <= batch:
        return None
    from tqdm import tqdm

    return tqdm(total=samples, unit="seq", desc="rheo sample", disable=None, leave=False)
