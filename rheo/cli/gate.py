"""`rheo gate CASE.json --decoder NAME` (alias `gate-hf`): gate a decoder under test on the case's table models.

Builds a draft and a target `TableLM` from the case (q_samp and p), runs the decoder N times from the
case's context (N from α, δ and β, as `rheo.assert_lossless` chooses it) and prints the verdict as
one JSON object. `rheo gate --decoder NAME --rows all|quick|SETTING,... --seeds 1,2 [--json FILE]` runs
the rows of the decoder's verdict table instead (docs/THIRD_PARTY.md). The decoders, their help, their
`--gen` keys and their tables are the registry's (`rheo.decoders`; docs/DECODERS.md); a served decoder
(its own virtual environment) is gated the same way.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rheo.cli import flags, user_sampler
from rheo.decoders import DecoderRun, decoders
from rheo.lossless import validate
from rheo.lossless.cluster import CHUNK
from rheo_ref import strict_json
from rheo_ref.errors import CaseError
from rheo_ref.numbers import integer_text, json_float, json_int
from rheo_ref.validate import integer, show

OUTPUT = """\
  temperature must be 1/k (the exact target law is p^k normalised); top_k / top_p are applied exactly.
output (one JSON object):
  decoder, transformers  the decoder and the installed transformers version (where it runs on transformers)
  gen                    the generate options in effect (given, then the decoder's defaults)
  verdict                pass, or REJECT when the first `tokens` tokens do not fit the exact target law
  N, alpha, beta, tv     samples, false-alarm probability, miss probability at TV = tv
  detectable_tv          smallest TV of the decoder's full law over the first `tokens` tokens detected
                         with power 1-beta at this N (<= tv): the tested cells' plus the pooled mass
  p_value, cells         of the test (the exact set test or the Chernoff-bounded weighted chi-square):
                         a proved upper bound on the p-value, never a simulation's floor
  pooled_mass            exact target mass of the light outcomes pooled into one cell
  exact_tv               exact TV of the decoder's own law to the target (a rational), or null where rheo
                         does not know the decoder's law (the heuristic schedule); a served decoder's
                         target is the law its setting claims (vLLM at temperature 0: the argmax chain)
  own_law_p              where exact_tv > 0: the p-value of the same samples against the decoder's own law
  package, path          a third party's distribution (its version) and the code under test
  device                 with --device cuda: where the served driver ran (each driver's reply is checked: the
                         device asked for, its Triton kernels compiled, not interpreted)
  seconds, ms_per_sample wall time of the sampling and the test
  horizon, tests, alpha_each, correction   with --horizon: H, the number of tests, α per test (Bonferroni)
  scheduler, chunk       with --scheduler: the cluster (local or its address) and the samples per chunk
  worst_conditional, worst_cells, summary  where the law deviates most (a rejection's diagnosis)
exit status: 0 pass, 1 REJECT, 2 bad input.
--rows all|quick|SETTING,...: the decoder's verdict table (its case, tokens, alpha, delta unless given), each
  row on every --seeds; prints the markdown rows, then one JSON record a row (decoder, package, version,
  path, setting, gen, exact_tv, verdicts, p_values, N, detectable_tv, seconds, expected, as_expected; device
  with --device cuda, where the rows "not run on CPU" are gated too);
  --json FILE writes the records. Exit status 0 when every verdict is the one its exact TV promises
  (pass at 0, REJECT above delta and for a negative control), else 1."""


def _block(head: str, text: str, width: int) -> list[str]:
    """`head` padded to `width`, then `text`'s lines, the later ones indented under the first."""
    first, *rest = text.splitlines() or [""]
    return [f"  {head:{width}} {first}".rstrip(), *(" " * (width + 3) + line for line in rest)]


def epilog() -> str:
    """The decoders and their --gen keys, from the registry (a registered decoder shows here)."""
    known = decoders().values()
    width = max(len(d.spelling) for d in known)
    lines = ["decoders:"]
    for d in known:
        lines += _block(d.spelling, d.summary, width)
    lines.append("--gen KEY=VALUE (repeatable; VALUE read as JSON when it parses, else as a string):")
    gw = max(len(d.name) + 1 for d in known)
    for d in known:
        lines += _block(d.name + ":", d.gen_help or "(none)", gw)
    return "\n".join(lines) + "\n" + OUTPUT


def register(subparsers: Any) -> None:
    sp = subparsers.add_parser(
        "gate",
        aliases=["gate-hf"],
        help="gate a decoder under test (transformers', eagle, ...) on table language models",
        description="Run a decoder under test (transformers' speculative decoding, rheo's LM path, a third "
        "party's) on TableLMs built from a case and test its output law exactly.",
        epilog=epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sp.add_argument(
        "case", nargs="?", help="case file in the section-10 JSON format (tables, context, tokens); with --rows: "
        "the table's unless given"
    )  # fmt: skip
    sp.add_argument(
        "--decoder",
        default=None,
        metavar="NAME",
        help="a registered decoder (or --sampler for your own): " + " | ".join(d.spelling for d in decoders().values()),
    )
    sp.add_argument(
        "--python",
        default=None,
        metavar="PATH",
        help="a served decoder (vllm, sglang, ...): the python of the environment where its package is installed "
        "(default: this one where the package is importable, else rheo's own .venv-NAME of a checkout)",
    )
    sp.add_argument(
        "--device",
        default="cpu",
        metavar="DEV",
        help="a served decoder's device: cpu (default: its Triton kernels run in Triton's interpreter) or cuda (the "
        "driver sets no TRITON_INTERPRET, builds every tensor on the GPU and runs the compiled kernels; exit 2 with one "
        "line where the served environment's torch sees no CUDA device). Each record's driver path names the device; "
        "python -m rheo.decoders.cuda_rows runs the rows that need CUDA (docs/THIRD_PARTY.md)",
    )
    user_sampler.add_flag(sp)
    flags.alpha(sp, default=ALPHA, what="false-alarm probability")
    sp.add_argument("--tv", type=float, default=TV, help=f"TV detected with power 1-beta (default {TV})")
    flags.beta(sp, default=BETA, at="--tv")
    sp.set_defaults(alpha=None, tv=None, beta=None)  # with --rows: the table's unless given
    sp.add_argument("--gen", action="append", default=[], metavar="KEY=VALUE", help="a generate option (repeatable)")
    sp.add_argument("--tokens", type=int, default=None, help="tokens per sample (default: the case's `tokens`)")
    flags.seed(sp, of="the sampling")
    sp.add_argument(
        "--workers",
        type=int,
        default=None,
        help="sampling processes (default 1); with --scheduler local: the local Dask cluster's processes (default "
        "one a core)",
    )
    sp.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="draw the samples on a Dask cluster, in chunks seeded from --seed and the chunk's index (the verdict "
        "does not depend on the workers; a dead worker's chunks are drawn again): tcp://HOST:PORT of a running "
        "scheduler, or local (a cluster of --workers processes here); needs pip install 'rheo[dask]' (docs/GATE.md)",
    )
    sp.add_argument(
        "--chunk",
        type=int,
        default=None,
        metavar="K",
        help=f"with --scheduler: samples per chunk (default {CHUNK}; a served decoder starts its driver once a chunk)",
    )
    sp.add_argument(
        "--horizon",
        type=int,
        default=None,
        metavar="H",
        help="test every window (x_{k-1}, x_k), k = 2..H, instead of the first tokens' joint law; --alpha is "
        "then the family-wise total, split by Bonferroni (docs/GATE.md)",
    )
    sp.add_argument(
        "--sequential",
        action="store_true",
        help="draw the samples in looks (N/16, N/8, ..., N) and stop at the first look that rejects; --alpha "
        "is spent over the looks, N planned at the last look's level (docs/STATISTICS.md, Early rejection)",
    )
    sp.add_argument(
        "--plot", default=None, metavar="PNG", help="draw observed vs expected for the worst conditional law"
    )
    sp.add_argument(
        "--rows", default=None, metavar="ROWS", help="all | quick | SETTING,...: rows of the decoder's verdict table"
    )
    sp.add_argument(
        "--seeds", default=None, help=f"with --rows: comma-separated seeds (default 1,2; at most {MAX_SEEDS})"
    )
    flags.json_file(sp, what="the --rows records")
    sp.set_defaults(func=run_gate_hf)


ALPHA, TV, BETA = 1e-3, 0.1, 0.01  # one gate's defaults (a table's rows carry their own)


def parse_gen(items: list[str]) -> dict[str, Any]:
    """KEY=VALUE strings -> a dict; VALUE is JSON when it parses (3, 0.5, true), else a string."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CaseError(f"--gen {item!r} must be KEY=VALUE, e.g. num_assistant_tokens=2")
        try:  # JSON numbers within the number grammar's bounds (rheo_ref.numbers)
            out[key] = json.loads(value, parse_int=json_int, parse_float=json_float, parse_constant=_no_constant)
        except json.JSONDecodeError:
            out[key] = value
        except (CaseError, RecursionError) as e:
            raise CaseError(f"--gen {show(item)}: {e if isinstance(e, CaseError) else 'nested too deep'}") from None
    return out


MAX_WORKERS = 64  # sampling processes
MAX_SEEDS = 100  # --rows --seeds: every row of the table runs once a seed
ROWS_ONLY = ("seeds", "json")  # flags that only --rows reads


def _no_constant(name: str) -> None:
    raise json.JSONDecodeError(f"{name} is not a JSON number", name, 0)  # read as the string it is


def device_check(device: str, entry: Any) -> None:
    """--device: cpu or cuda; cuda for a decoder that runs in this process is refused in one line (a served decoder's
    driver finds itself whether its environment shows a CUDA device: `rheo.decoders.device`)."""
    from rheo.decoders.device import DEVICES

    if device not in DEVICES:
        raise CaseError(f"--device {show(device)}; allowed: {', '.join(DEVICES)}")
    if device != "cpu" and entry is not None and entry.served is None:
        served = ", ".join(n for n, d in decoders().items() if d.served)
        raise CaseError(f"--device {device} with decoder {entry.name}: only a served decoder's driver takes a device "
                        f"({served}); allowed for {entry.name}: --device cpu")  # fmt: skip


@contextlib.contextmanager
def served_device(device: str) -> Iterator[None]:
    """RHEO_SERVED_DEVICE set to --device for this command's drivers and sampling workers (which inherit it), and
    restored when the command ends (a command run in-process, e.g. by a test, leaves no device behind)."""
    from rheo.decoders.device import DEVICE_VAR

    before = os.environ.get(DEVICE_VAR)
    os.environ[DEVICE_VAR] = device
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(DEVICE_VAR, None)
        else:
            os.environ[DEVICE_VAR] = before


def run_gate_hf(args: argparse.Namespace) -> int:
    device = getattr(args, "device", "cpu")
    with served_device(device if isinstance(device, str) else "cpu"):
        return _run_gate_hf(args)


def _run_gate_hf(args: argparse.Namespace) -> int:

    from rheo_ref.models import load_case

    sampling = args.sampling = sampling_options(args)  # (--workers, --scheduler, --chunk: checked before any work)
    if getattr(args, "sampler", None) is not None or args.decoder is None:  # the user's own sampler (or neither)
        return user_sampler.gate(args, alpha=ALPHA, tv=TV, beta=BETA)
    entry = decoders().get(DecoderRun.head(args.decoder))
    device_check(getattr(args, "device", "cpu"), entry)
    if getattr(args, "python", None) is not None:
        from rheo.decoders.served import PYTHON_VAR

        if entry is None or entry.served is None:
            raise CaseError(f"--python {show(args.python)}: only a served decoder runs in another environment; "
                            f"allowed with --python: {', '.join(n for n, d in decoders().items() if d.served)}")  # fmt: skip
        os.environ[PYTHON_VAR] = str(Path(args.python).absolute())  # (the sampling workers inherit it)
    if args.rows is not None:
        if entry is not None:  # up front, as each row is gated later (one gate: gate_hf checks it, once)
            entry.check_environment()
        for name in ("alpha", "tv", "beta"):  # up front, as each row is gated later (a failing row is a record)
            if getattr(args, name) is not None:
                validate.rate(f"--{name}", getattr(args, name))
        if getattr(args, "sequential", False):
            raise CaseError("--sequential with --rows: the verdict table's rows run the fixed-N gate; allowed: "
                            "--sequential with one gate (CASE, no --rows)")  # fmt: skip
        return run_rows(args, sampling)
    given = [f"--{k}" for k in ROWS_ONLY if getattr(args, k) is not None]
    if given:
        raise CaseError(
            f"{' and '.join(given)} without --rows: {'they apply' if len(given) > 1 else 'it applies'} to the decoder's "
            "verdict table only; one gate takes "
            "--seed S and prints its JSON record on stdout (or add --rows all|quick|SETTING,...)"
        )
    if args.case is None:
        raise CaseError("rheo gate needs a CASE file (or --rows, which runs the decoder's table on its own cases)")
    args.alpha, args.tv, args.beta = (ALPHA if args.alpha is None else args.alpha, TV if args.tv is None else args.tv,
                                      BETA if args.beta is None else args.beta)  # fmt: skip
    case = load_case(args.case)
    decoder = DecoderRun.parse(args.decoder, parse_gen(args.gen))
    with flags.library_checks(flags.GATE):  # the library checks the flags once (gate_hf), in their words
        report = _one_gate(args, case, decoder, sampling)
    if args.plot:
        from rheo.lossless.diagnosis import plot_worst

        report["plot"] = plot_worst(report, args.plot)
    print(strict_json.dumps(report))
    return 0 if report["verdict"] == "pass" else 1


def _one_gate(args: argparse.Namespace, case: Any, decoder: Any, sampling: dict) -> dict:
    """One gate: the flags handed to the library's `gate_hf` as they are (it checks them, once, before any
    work: a cluster is started on the first draw); with --scheduler local, --workers is the cluster's size."""
    from rheo.decoders.gate import gate_hf

    scheduler = sampling["scheduler"]
    on = {} if scheduler is None else {"scheduler": scheduler, "chunk": sampling["chunk"]}
    report = gate_hf(  # (refuses a context shorter than the decoder's min_context first: Decoder.check_context)
        case,
        decoder,
        alpha=args.alpha,
        tv=args.tv,
        beta=args.beta,
        seed=args.seed,
        tokens=args.tokens,
        workers=sampling["workers"] if scheduler is not None else args.workers,
        horizon=args.horizon,
        sequential=bool(getattr(args, "sequential", False)),
        **on,
    )
    if scheduler is not None:
        report["scheduler"] = args.scheduler
    return report


def sampling_options(args: argparse.Namespace) -> dict[str, Any]:
    """--workers, --scheduler, --chunk checked (CaseError, exit 2): {"workers", "scheduler", "chunk"}; with
    --scheduler local, `args.workers` is the local cluster's size (None: one a core), else it is the sampling
    processes (default 1)."""
    from rheo.lossless.cluster import LOCAL, check_chunk, check_scheduler

    scheduler = getattr(args, "scheduler", None)
    chunk = getattr(args, "chunk", None)
    if args.workers is not None:
        integer("--workers", args.workers, min=1, max=MAX_WORKERS)
    if scheduler is None:
        if chunk is not None:
            raise CaseError(f"--chunk {show(chunk)} without --scheduler: chunks are what a Dask cluster's workers "
                            "draw; allowed: --chunk with --scheduler ADDRESS|local")  # fmt: skip
        args.workers = 1 if args.workers is None else args.workers
        return {"workers": args.workers, "scheduler": None, "chunk": None}
    if scheduler != LOCAL and args.workers is not None:
        raise CaseError(f"--workers {args.workers} with --scheduler {show(scheduler)}: a running cluster has its own "
                        f"workers; allowed: --workers with --scheduler {LOCAL} (the local cluster's processes)")  # fmt: skip
    try:
        check_scheduler(scheduler, args.workers if scheduler == LOCAL else None)
    except CaseError:
        raise CaseError(f"--scheduler {show(scheduler)}; allowed: tcp://HOST:PORT of a running Dask scheduler (port "
                        f"1-65535; tls:// and ws:// need a security configuration rheo does not take) or {LOCAL} (a "
                        "cluster of --workers processes on this machine)") from None  # fmt: skip
    try:
        chunk = check_chunk(CHUNK if chunk is None else chunk)
    except CaseError as e:
        raise CaseError(f"--chunk {show(chunk)}: {str(e).partition('; ')[2]}") from None
    from rheo.lossless.cluster import require_dask

    require_dask()  # (no Dask: MissingDependencyError naming the extra, exit 2, before any work)
    sampling = {"workers": args.workers, "scheduler": scheduler, "chunk": chunk}
    args.workers = 1  # (the sampling processes: the cluster's workers draw)
    return sampling


@contextlib.contextmanager
def cluster(args: argparse.Namespace, sampling: dict) -> Iterator[Any]:
    """None without --scheduler; else a `distributed.Client` of the cluster (a local one started here, and
    closed on leaving), one for every gate of the command (--rows: every row)."""
    if sampling["scheduler"] is None:
        yield None
        return
    from rheo.lossless.cluster import connect

    with connect(sampling["scheduler"], sampling["workers"]) as client:
        yield client


def parse_seeds(text: str | None) -> tuple[int, ...]:
    """`1,2` -> (1, 2): at most MAX_SEEDS integers in [0, 2^63), in ASCII digits (None: the default 1,2)."""
    if text is None:
        return (1, 2)
    allowed = f"allowed: at most {MAX_SEEDS} comma-separated integers in [0, 2^63) in ASCII digits, e.g. 1,2"
    items = text.split(",")
    if len(items) > MAX_SEEDS:
        raise CaseError(f"--seeds has {len(items):,} seeds; {allowed}")
    try:
        seeds = tuple(integer_text(s, "--seeds") for s in items)
    except CaseError:
        seeds = ()
    if not seeds or any(not 0 <= s < 2**63 for s in seeds):
        raise CaseError(f"--seeds {show(text)}; {allowed}")
    return seeds


ONE_GATE_ONLY = ("gen", "tokens", "horizon", "plot")  # a row carries its own


def run_rows(args: argparse.Namespace, sampling: dict[str, Any]) -> int:
    """`--rows`: the decoder's verdict table, each row on every seed (`rheo.decoders.rows.run_row`)."""
    from rheo.decoders.rows import MARKDOWN_HEAD, markdown_row, run_row
    from rheo_ref.atomic import check_writable, write_text_atomic

    given = [f"--{k}" for k in ONE_GATE_ONLY if getattr(args, k) not in (None, [])]
    if given:
        raise CaseError(f"--rows with {', '.join(given)}: each row carries its own; allowed with --rows: "
                        "CASE, --alpha, --tv, --beta, --seeds, --workers, --scheduler, --chunk, --json")  # fmt: skip
    known = decoders()
    name = DecoderRun.head(args.decoder)
    if name not in known or ":" in args.decoder:
        raise CaseError(f"--rows needs a decoder's name (its rows carry any :ARG); allowed: {', '.join(known)}")
    entry = known[name]
    if entry.table is None:
        raise CaseError(f"decoder {name} declares no verdict table; allowed with --rows: "
                        f"{', '.join(n for n, d in known.items() if d.table is not None)}")  # fmt: skip
    rows = entry.table.select(args.rows)
    seeds = parse_seeds(args.seeds)
    if args.json is not None:
        check_writable(args.json)
    opts = dict(case=args.case, alpha=args.alpha, tv=args.tv, beta=args.beta, workers=args.workers)
    with cluster(args, sampling) as scheduler:
        on: dict[str, Any] | None = None if scheduler is None else {"scheduler": scheduler, "chunk": sampling["chunk"]}
        records = [
            run_row(entry, r, entry.table, seeds=seeds, sampling=on, **opts) for r in rows
        ]  # (failing: a record)
    print(MARKDOWN_HEAD)
    for r in records:
        print(markdown_row(r))
    for r in records:
        print(strict_json.dumps(r))
    if args.json is not None:
        write_text_atomic(args.json, strict_json.dumps(records, indent=1) + "\n")
    return 0 if all(r["as_expected"] for r in records) else 1
