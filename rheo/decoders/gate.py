"""Third-party decoders under the gate: transformers' speculative decoding (and rheo's own LM code
path) run on `TableLM`s of a case, as samplers of `rheo.assert_lossless` (docs/THIRD_PARTY.md).

A decoder is named as on the command line (`rheo gate-hf --decoder`):
- `assisted`: `target.generate(ids, assistant_model=draft, do_sample=True, ...)`;
- `ensemble:W`: the same with `assistant_ensemble_weight=W` (documented as lossy);
- `prompt-lookup`: `target.generate(ids, prompt_lookup_num_tokens=k, do_sample=True, ...)`;
- `rheo-lm`: rheo's real-model path (`rheo_fast.lm`: KV caches, tree masks, position ids,
  compaction) with a `TableLM` target and a table draft head, on the case's rheo scheme;
- `eagle`: eagle-llm's `EaModel.eagenerate` (EAGLE-1) on the stand-in kit (`rheo.decoders.eagle.sampler`), its law
  `rheo.decoders.eagle.law.Eagle`;
- `seqspec:METHOD`: sequential-speculative-decoding's `speculative_generate(method=METHOD)` (standard,
  naive_hsd, capped_hsd) on the case's `TableLM`s (`rheo.decoders.seqspec.sampler`), its law `rheo.decoders.seqspec.law.SeqSpec`.
`gen` holds the `generate` options (`--gen KEY=VALUE`). transformers 5.24 reads
`num_assistant_tokens`, `num_assistant_tokens_schedule` and `assistant_confidence_threshold` from
the *assistant's* `generation_config` and ignores them when given to `generate`
(docs/THIRD_PARTY.md, finding 1), so they are set there; unset ones keep transformers' defaults
(20, "constant", 0.4).

Laws: with temperature / top-k / top-p the law sampling targets is the processed p
(`rheo.decoders.laws.Processing`), and that is what the gate tests. transformers 5.24 processes the
assistant's q *twice* (its `generate` gets the target's warpers as a custom list and adds its own
from the copied config: temperature T acts as T², top-p is applied twice), in sampling and in the
ratio alike, so the decoder stays lossless and only its acceptance changes (finding 2); the exact
laws below model it. The decoder's own exact law, where
rheo knows it (`HFDecoder.exact_law`, from `rheo.decoders.laws.Chain` or `rheo_ref.exact.Exact`), gives
the exact TV reported beside the verdict.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from rheo.decoders.laws import (
    Chain,
    Processing,
    check_exact_float,
    lookup_drafter,
    point_mass,
    table_drafter,
    table_row,
)
from rheo.lossless.horizon import HorizonTest, assert_lossless
from rheo.lossless.stats import DEFAULT_BETA, LawTest, Sampler, seed_for
from rheo_ref.errors import CaseError, LosslessError
from rheo_ref.exact import Exact, Law, target_law
from rheo_ref.exact import tv as total_variation
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.static.scheme import parse_weight
from rheo_ref.models import Case

KINDS = ("assisted", "prompt-lookup", "ensemble", "rheo-lm", "eagle", "seqspec")
DECODERS = (
    "assisted",
    "prompt-lookup",
    "ensemble:W",
    "rheo-lm",
    "eagle",
    "seqspec:METHOD",
)  # as written on the command line
ON_DRAFT = ("num_assistant_tokens", "num_assistant_tokens_schedule", "assistant_confidence_threshold")
PROCESSING = ("temperature", "top_k", "top_p")
LOOKUP = ("prompt_lookup_num_tokens", "max_matching_ngram_size")
GEN_KEYS = {
    "assisted": ON_DRAFT + PROCESSING,
    "ensemble": ON_DRAFT + PROCESSING,
    "prompt-lookup": LOOKUP + PROCESSING,
    "rheo-lm": ("temperature",),
    "eagle": PROCESSING,
    "seqspec": PROCESSING + ("gamma",),
}
SEQSPEC_GAMMA = 5  # speculative_generate's default
MAX_GAMMA = 8  # the exact law enumerates V^gamma drafts a round
HF_DEFAULTS = {
    "num_assistant_tokens": 20,
    "num_assistant_tokens_schedule": "constant",
    "assistant_confidence_threshold": 0.4,
    "max_matching_ngram_size": 2,
}  # transformers 5.24's
LOOKUP_TOKENS = 3  # prompt_lookup_num_tokens when not given (transformers has no default: it is the switch)
SCHEDULES = ("constant", "heuristic", "heuristic_transient")


@dataclass(frozen=True)
class HFDecoder:
    """One decoder with its `generate` options (see the module docstring)."""

    kind: str
    gen: tuple[tuple[str, Any], ...] = ()
    weight: Fraction | None = None  # ensemble:W
    method: str | None = None  # seqspec:METHOD

    @classmethod
    def parse(cls, name: str, gen: Mapping[str, Any] | None = None) -> HFDecoder:
        """`assisted`, `prompt-lookup`, `ensemble:W` (W a rational in (0, 1), e.g. 1/2) or `rheo-lm`."""
        head, _, arg = name.partition(":")
        if head not in KINDS or (head in ("ensemble", "seqspec")) != bool(arg):
            raise CaseError(f"unknown decoder {name!r}; allowed: {', '.join(DECODERS)}")
        weight = method = None
        if head == "seqspec":
            from rheo.decoders.seqspec.sampler import METHODS

            if arg not in METHODS:
                raise CaseError(f"decoder {name!r}: unknown method {arg!r}; allowed: {', '.join(METHODS)}")
            method = arg
        if head == "ensemble":
            weight = parse_weight(arg)
            if weight == 1:
                raise CaseError(
                    f"decoder {name!r}: transformers needs an ensemble weight in (0, 1); 1 is plain assisted"
                )
        gen = dict(gen or {})
        bad = sorted(set(gen) - set(GEN_KEYS[head]))
        if bad:
            raise CaseError(
                f"decoder {head}: --gen {bad[0]} is not supported (the exact target law would be unknown); "
                f"allowed: {', '.join(GEN_KEYS[head])}"
            )
        if head == "eagle" and gen.get("top_k") and gen.get("top_p") not in (None, 1):
            raise CaseError(
                "decoder eagle: --gen top_k and top_p together are not supported (eagle applies top-p before "
                "top-k, transformers top-k before top-p); give one of them"
            )
        dec = cls(head, tuple(sorted(gen.items())), weight, method)
        dec.check()
        return dec

    @property
    def name(self) -> str:
        if self.kind == "seqspec":
            return f"seqspec:{self.method}"
        return f"ensemble:{self.weight}" if self.kind == "ensemble" else self.kind

    def options(self) -> dict[str, Any]:
        """The generate options in effect: the given ones, then transformers' defaults for the rest."""
        out = dict(self.gen)
        if self.kind in ("assisted", "ensemble"):
            for k in ON_DRAFT:
                out.setdefault(k, HF_DEFAULTS[k])
        if self.kind in ("eagle", "seqspec"):
            out.setdefault("temperature", 1)  # eagle's own default, 0, is greedy; seqspec's 0.6 is not 1/k
        if self.kind == "seqspec":
            out.setdefault("gamma", SEQSPEC_GAMMA)
        if self.kind == "prompt-lookup":
            out.setdefault("prompt_lookup_num_tokens", LOOKUP_TOKENS)
            out.setdefault("max_matching_ngram_size", HF_DEFAULTS["max_matching_ngram_size"])
        return out

    def check(self) -> None:
        opts = self.options()
        self.processing()
        for k in ("num_assistant_tokens", "prompt_lookup_num_tokens", "max_matching_ngram_size"):
            if k in opts and (isinstance(opts[k], bool) or not isinstance(opts[k], int) or opts[k] < 1):
                raise CaseError(f"{k}={opts[k]!r} must be an integer >= 1")
        g = opts.get("gamma", 1)
        if isinstance(g, bool) or not isinstance(g, int) or not 1 <= g <= MAX_GAMMA:
            raise CaseError(f"gamma={g!r} must be an integer in [1, {MAX_GAMMA}]")
        if opts.get("num_assistant_tokens_schedule", "constant") not in SCHEDULES:
            raise CaseError(
                f"num_assistant_tokens_schedule={opts['num_assistant_tokens_schedule']!r}; "
                f"allowed: {', '.join(SCHEDULES)}"
            )
        thr = opts.get("assistant_confidence_threshold", 0)
        if isinstance(thr, bool) or not isinstance(thr, (int, float)) or not 0 <= thr < 1:
            raise CaseError(f"assistant_confidence_threshold={thr!r} must be a number in [0, 1)")

    def processing(self) -> Processing:
        return Processing.from_gen(dict(self.gen))

    # --- laws

    def target_case(self, case: Case, n: int) -> Case:
        """The case whose target law sampling aims at: p (and q) processed, `n` tokens."""
        c = self.processing().case(case)
        return Case(c.draft, c.target, c.scheme, c.context, n, c.draft_sample)

    def exact_law(self, case: Case, n: int) -> Law | None:
        """The decoder's exact law of the first n tokens where rheo knows it, else None (the
        heuristic schedule carries state across rounds and calls)."""
        proc, opts = self.processing(), self.options()
        if self.kind == "eagle":
            from rheo.decoders.eagle.law import Eagle

            return Eagle(case.target, case.q_samp_model, proc).token_law(case.context, n)
        if self.kind == "seqspec":
            from rheo.decoders.seqspec.law import SeqSpec

            law = SeqSpec(case.target, case.q_samp_model, proc, method=str(self.method), gamma=opts["gamma"])
            return law.token_law(case.context, n)
        if self.kind == "rheo-lm":
            p = proc.table(case.target)
            ds = proc.table(case.q_samp_model) if not proc.identity else None
            return Exact(Case(case.draft, p, case.scheme_as(Scheme), case.context, n, ds)).token_law(n)
        p = proc.table(case.target)
        if self.kind == "prompt-lookup":
            chain = Chain(
                p,
                lookup_drafter(opts["prompt_lookup_num_tokens"], opts["max_matching_ngram_size"]),
                point_mass(case.vocab_size),
                cap=n,
                horizon=n + 1,
            )
            return chain.token_law(n, case.context)
        if opts["num_assistant_tokens_schedule"] != "constant":
            return None
        q = proc.table(proc.table(case.q_samp_model))  # processed twice, as transformers does (finding 2)
        thr = check_exact_float(opts["assistant_confidence_threshold"], "assistant_confidence_threshold")
        chain = Chain(
            p,
            table_drafter(q, thr),
            table_row(q),
            self.weight or Fraction(1),
            opts["num_assistant_tokens"],
            horizon=n + 1,
        )
        return chain.token_law(n, case.context)

    # --- sampling

    def sampler(self, case: Case, *, workers: int = 1) -> Sampler:
        """A sampler (c, seed, num_samples) -> sequences of `c.tokens` tokens from `c.context`, decoding
        with the models of `case` (the unprocessed tables: transformers processes them itself)."""
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise CaseError(f"workers={workers!r} must be an integer >= 1")
        if self.kind == "rheo-lm":
            case.scheme_as(Scheme)
            if len(case.context) < 2:
                raise CaseError(f"decoder rheo-lm needs a context of at least 2 tokens, got {list(case.context)}")
        if self.kind == "eagle":
            from rheo.decoders.eagle.sampler import EAGLE_CHILDREN

            if case.vocab_size < EAGLE_CHILDREN:
                raise CaseError(
                    f"decoder eagle draws {EAGLE_CHILDREN} children per node without replacement: it needs "
                    f"vocab_size >= {EAGLE_CHILDREN}, got {case.vocab_size}"
                )
        obj = case.to_json()

        def sample(c: Case, seed: int, num_samples: int) -> list[tuple[int, ...]]:
            job = (obj, self, list(c.context), c.tokens)
            if workers == 1:
                return decode_batch(*job, seed, num_samples)
            sizes = [num_samples // workers + (i < num_samples % workers) for i in range(workers)]
            with ProcessPoolExecutor(workers, mp_context=_spawn()) as pool:
                parts = [pool.submit(decode_batch, *job, seed_for(f"{seed}|{i}"), k) for i, k in enumerate(sizes) if k]
                return [s for part in parts for s in part.result()]

        sample.__name__ = f"hf_sampler[{self.name}]"
        return sample


def _spawn() -> Any:
    import multiprocessing

    return multiprocessing.get_context("spawn")  # fresh interpreters: no inherited torch threads


@contextlib.contextmanager
def quiet_one_thread() -> Iterator[None]:
    """torch on one thread (tiny tensors; the machine is shared) and transformers' logger at errors only."""
    import torch
    from transformers.utils import logging

    threads, level = torch.get_num_threads(), logging.get_verbosity()
    torch.set_num_threads(1)
    logging.set_verbosity_error()
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        logging.set_verbosity(level)


def decode_batch(
    case_obj: dict, decoder: HFDecoder, context: list[int], n: int, seed: int, num_samples: int
) -> list[tuple[int, ...]]:
    """num_samples independent decodes of n tokens from `context` (a module function: workers call it)."""
    import torch

    case = Case.from_json(case_obj)
    with quiet_one_thread():
        if decoder.kind == "eagle":
            from rheo.decoders.eagle.sampler import sample_eagle

            return sample_eagle(case, context, n, seed, num_samples, gen=decoder.options())
        if decoder.kind == "seqspec":
            from rheo.decoders.seqspec.sampler import sample_seqspec

            return sample_seqspec(
                case, context, n, seed, num_samples,
                method=str(decoder.method), gamma=decoder.options()["gamma"], proc=decoder.processing(),
            )  # fmt: skip
        if decoder.kind == "rheo-lm":
            from rheo_fast.lm.table_head import generate_tokens, table_tree_model

            T = 1 / decoder.processing().power
            lm, g = table_tree_model(case, T=T), torch.Generator().manual_seed(seed % 2**63)
            return [tuple(generate_tokens(lm, context, case.scheme_as(Scheme), n, g)) for _ in range(num_samples)]
        from rheo_fast.table_lm import table_lm

        target = table_lm(case.target)  # prompt-lookup brings its own draft: the case's may be absent
        opts = decoder.options()
        kwargs = {k: v for k, v in opts.items() if k not in ON_DRAFT}
        if decoder.kind in ("assisted", "ensemble"):
            draft = table_lm(case.q_samp_model)
            for k in ON_DRAFT:  # where transformers reads them (finding 1)
                setattr(draft.generation_config, k, opts[k])
            kwargs["assistant_model"] = draft
        if decoder.weight is not None:
            kwargs["assistant_ensemble_weight"] = float(decoder.weight)
        ids = torch.tensor([context])
        mask = torch.ones_like(ids)
        torch.manual_seed(seed % 2**63)
        out = []
        for _ in range(num_samples):  # n + 1 new tokens: see rheo.decoders.laws on draft caps
            seq = target.generate(ids, attention_mask=mask, do_sample=True, max_new_tokens=n + 1, **kwargs)
            out.append(tuple(seq[0, len(context) : len(context) + n].tolist()))
        return out


# --- the gate ----------------------------------------------------------------------------------


def dist_version(name: str) -> str | None:
    """The installed version of the distribution `name` (None: not installed)."""
    import importlib.metadata as md

    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None


def gate_hf(
    case: Case,
    decoder: HFDecoder,
    *,
    alpha: float,
    tv: float,
    seed: int,
    beta: float = DEFAULT_BETA,
    tokens: int | None = None,
    workers: int = 1,
    horizon: int | None = None,
) -> dict[str, Any]:
    """Run `decoder` on the case's table models and test its first n tokens against the exact
    (processed) target law, or with `horizon` every window (x_{k−1}, x_k), k ≤ H (`alpha` the
    family-wise total; rheo.lossless.horizon). Returns the verdict as a JSON-ready dict (docs/THIRD_PARTY.md)."""
    n = case.tokens if tokens is None else tokens
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise CaseError(f"tokens={n!r} must be an integer >= 1")
    tcase = decoder.target_case(case, n)
    sampler = decoder.sampler(case, workers=workers)  # checks the case first (before the exact law's cost)
    exact = decoder.exact_law(case, n)
    if workers == 1:
        import transformers  # noqa: F401  (loaded before the clock starts: seconds are the sampling's)
    t0 = time.perf_counter()
    res: LawTest | HorizonTest
    try:
        if horizon is None:
            res = assert_lossless(sampler, tcase, alpha=alpha, tv=tv, beta=beta, seed=seed)
        else:
            res = assert_lossless(sampler, tcase, alpha=alpha, tv=tv, beta=beta, seed=seed, horizon=horizon)
    except LosslessError as e:
        res = e.result
    seconds = time.perf_counter() - t0
    exact_tv = None if exact is None else total_variation(exact, target_law(tcase, n))
    extra = {}
    package = {"eagle": "eagle-llm", "seqspec": "sequential-speculative-decoding"}.get(decoder.kind)
    if package is not None:
        extra["package"] = f"{package} {dist_version(package)}"
    return {
        "decoder": decoder.name,
        **extra,
        "transformers": dist_version("transformers"),
        "gen": decoder.options(),
        "tokens": n,
        "verdict": "REJECT" if res.rejected else "pass",
        "N": res.n,
        "alpha": res.alpha,
        "beta": res.beta,
        "tv": res.tv,
        "detectable_tv": res.detectable_tv,
        "p_value": res.p_value,
        "cells": res.cells,
        "exact_tv": None if exact_tv is None else str(exact_tv),
        "exact_tv_float": None if exact_tv is None else float(exact_tv),
        "seed": seed,
        "seconds": round(seconds, 3),
        "ms_per_sample": round(1000 * seconds / res.n, 3),
        **horizon_fields(res),
    }


def horizon_fields(res: LawTest | HorizonTest) -> dict[str, Any]:
    """The horizon (tests, α per test) and where the law deviates most, for the JSON verdict."""
    out: dict[str, Any] = {}
    if isinstance(res, HorizonTest):
        out = {"horizon": res.horizon, "tests": res.planned, "alpha_each": res.alpha_each, "correction": res.correction}
    cond = res.worst_conditional
    out["worst_conditional"] = None if cond is None else cond.text()
    out["worst_conditional_law"] = None if cond is None else cond.to_json()
    out["worst_cells"] = [c.text() for c in res.top_cells[:3]]
    out["summary"] = res.summary()
    return out
