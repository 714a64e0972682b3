"""`rheo.processed`: the exact target law of a request, for every sampling setting rheo models
(docs/GATE_REFERENCE.md, "What you import": `rheo.processed`; docs/PROCESSING.md says what each setting does).

The settings are modelled once, in `rheo_ref.processing` (`process`, in an engine's `ORDERS`); this
module only checks the public arguments, refuses what float rounding or an unnamed tie would decide,
and builds the processed target table:

- without a penalty, and with no cut after a grammar's mask, every row is processed on its own and
  the table keeps its shape (any context, any number of tokens);
- a penalty (it counts the tokens emitted so far) or a cut after a grammar's mask (the mask depends
  on the grammar's state) makes a row depend on the whole history: the table is then keyed by the
  whole context, with a row for every prefix of fewer than `tokens` tokens that the processed target
  can reach from the case's context (`context_length` = the case's context + `tokens` − 1).

Only the target p is processed unless `draft=True`: the draft plays no part in the target law.

A processed case remembers the raw case and the settings it came from (`unprocessed`), so that it is never
processed twice: `processed` refuses a case that `processed` returned (a second call would apply a setting
twice, or in an order no engine has); a sampler handed a processed case (`rheo.check_lossless(sampler,
rheo.processed(case, ...))` passes the case as given) reads the raw tables and the settings it must apply
from `rheo.unprocessed(case)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from fractions import Fraction
from typing import Any

from rheo.decoders.laws import MAX_POWER, check_exact_float, processed_row
from rheo_ref import processing
from rheo_ref.errors import CaseError, TooLargeError
from rheo_ref.models import Case, TableModel, present

_ORIGIN = "_rheo_processed_from"  # set on a processed target: (the raw case, the keywords of `processed`)
MAX_ROWS = 200_000  # rows of a history-keyed table (the reachable prefixes) before `processed` refuses
GREEDY_TIES = ("low", "high")  # who an argmax picks of tied tokens: the lowest id (numpy, torch), the highest


def _number(name: str, value: Any, lo: Fraction, hi: Fraction, off: str, *, open_lo: bool = False) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction, str)):
        raise CaseError(f"{name}={value!r} must be a number in {'(' if open_lo else '['}{lo}, {hi}] ({off})")
    f = check_exact_float(value, name) if isinstance(value, float) else Fraction(value)
    if f > hi or f < lo or (open_lo and f == lo):
        raise CaseError(f"{name}={value!r} must be a number in {'(' if open_lo else '['}{lo}, {hi}] ({off})")
    return f


def sampling(
    V: int,
    *,
    temperature: float | None = None,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | Fraction | None = None,
    repetition: int | None = None,
    frequency: float | Fraction | None = None,
    presence: float | Fraction | None = None,
    logit_bias: Mapping[int, Any] | None = None,
    order: str = "transformers",
    ties: Any = None,
) -> processing.Sampling:
    """The checked settings (the arguments of `processed`, which documents them), as the one model of them,
    `rheo_ref.processing.Sampling`."""
    greedy = temperature is not None and not isinstance(temperature, bool) and temperature == 0
    T = Fraction(0) if greedy else Fraction(1, MAX_POWER)  # (replaced below when not greedy)
    T_float = float(temperature) if isinstance(temperature, Fraction) else temperature
    gen = {"top_k": top_k} | ({} if greedy else {"temperature": T_float})
    from rheo.decoders.laws import Processing

    base = Processing.from_gen({k: v for k, v in gen.items() if v is not None})  # one check of T, top-k, top-p
    if not greedy:
        T = Fraction(1, base.power)
    greedy_ties = None
    if isinstance(ties, Mapping) and "greedy" in ties:
        greedy_ties, ties = ties["greedy"], {k: v for k, v in ties.items() if k != "greedy"} or None
    elif isinstance(ties, str) and ties in GREEDY_TIES:
        greedy_ties = ties
    if greedy_ties is not None and greedy_ties not in GREEDY_TIES:
        raise CaseError(
            f"ties greedy={greedy_ties!r}; allowed at T = 0: {', '.join(GREEDY_TIES)} (an argmax emits one token)"
        )
    if repetition is not None and (
        isinstance(repetition, bool) or not isinstance(repetition, int) or not 1 <= repetition <= 8
    ):
        raise CaseError(
            f"repetition={repetition!r} must be an integer θ in 1..8 (logit·θ on a seen token: weight^θ; 1: off)"
        )
    bias = []
    for t, f in (logit_bias or {}).items():
        if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < V:
            raise CaseError(f"logit_bias token {t!r} must be a token id in 0..{V - 1}")
        bias.append((t, _number(f"logit_bias[{t}]", f, Fraction(0), Fraction(10**6), "the factor e^bias; 0 bans")))
    if order not in processing.ORDERS:
        raise CaseError(f"order={order!r}; allowed: {', '.join(processing.ORDERS)}")
    one = Fraction(1)
    return processing.Sampling(
        temperature=T,
        top_k=base.top_k or 0,
        top_p=one if top_p is None else _top_p(top_p),
        min_p=Fraction(0) if min_p is None else _number("min_p", min_p, Fraction(0), one, "0: off"),
        penalty=one
        if frequency is None
        else _number("frequency", frequency, Fraction(0), one, "ρ, 1: off", open_lo=True),
        presence=one
        if presence is None
        else _number("presence", presence, Fraction(0), one, "π, 1: off", open_lo=True),
        repetition=repetition or 1,
        bias=tuple(sorted(bias)),
        order=order,
        ties=processing.check_ties(ties),
        greedy_ties=greedy_ties,
    )


def _top_p(value: Any) -> Fraction:
    """top_p as the number a sampler compares with: a float is its exact binary value (as transformers'
    float comparison sees it), a Fraction or int itself."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)) or not 0 < value <= 1:
        raise CaseError(f"top_p={value!r} must be a number in (0, 1] (1: off)")
    return Fraction(value)


def _table(model: TableModel, s: processing.Sampling) -> TableModel:
    rows = {k: processed_row(r, s, (), (), f"{model.name} row {k!r}") for k, r in model.probs.items()}
    return TableModel(model.vocab_size, model.context_length, rows, model.name)


def _history_table(case: Case, s: processing.Sampling, tokens: int) -> TableModel:
    """The processed target keyed by the whole context: a row for every prefix (of fewer than
    `tokens` tokens) that the processed target reaches from the case's context."""
    ctx, grammar = case.context, case.constraint
    rows: dict[tuple[int, ...], tuple] = {}
    frontier: list[tuple[tuple[int, ...], int]] = [((), 0)]
    for _ in range(tokens):
        nxt: list[tuple[tuple[int, ...], int]] = []
        for seq, state in frontier:
            raw = case.target.row(ctx + seq)
            if grammar is not None:
                raw = grammar.mask(raw, state)
            row = processed_row(raw, s, seq, ctx + seq, f"target row after {[*ctx, *seq]}")
            rows[ctx + seq] = row
            if len(rows) > MAX_ROWS:
                raise TooLargeError(
                    f"the processed target needs more than {MAX_ROWS:,} rows (one per reachable prefix of {tokens} "
                    "tokens); allowed: fewer tokens or a smaller vocabulary"
                )
            nxt += [(seq + (t,), grammar.step(state, t) if grammar else 0) for t, x in enumerate(row) if x]
        frontier = nxt
    return TableModel.from_rows(rows, context_length=len(ctx) + tokens - 1, name=case.target.name)


def processed(
    case: Case,
    *,
    temperature: float | None = None,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | None = None,
    repetition: int | None = None,
    frequency: float | None = None,
    presence: float | None = None,
    logit_bias: Mapping[int, Any] | None = None,
    order: str = "transformers",
    ties: Any = None,
    tokens: int | None = None,
    draft: bool = False,
) -> Case:
    """The case whose target p is processed as a sampler with these settings samples it, exactly in
    rationals (`rheo_ref.processing`, in `order`'s sequence: "transformers", "vllm" or "sglang").

    temperature: 1/k (rows to the power k) or 0 (greedy: the argmax); top_k (0 / None: off); top_p
    (1: off); min_p (0: off); repetition θ (an integer: logit·θ on a token of prompt or output, i.e.
    weight^θ); frequency ρ and presence π (the factors e^(−frequency_penalty) per earlier output
    occurrence and e^(−presence_penalty) once a token is in the output; 1: off); logit_bias {token:
    factor} (the factor e^bias, 0 bans the token). A case with a grammar (`constraint`) is masked by
    the grammar's state before any other processing, in any combination.

    Refused (`CaseError`, naming the row): a boundary float rounding would decide (a top-k near-tie, a
    top-p cumulative mass or a min-p threshold within 1e-6, a near-tie for the argmax), and a cut
    between exactly tied tokens of a target row unless `ties` names who is kept: "all", "low", "high"
    or a rule per cut ({"top_k": "all", "top_p": "high", "greedy": "low"}); at T = 0 "low" is the
    lowest id (numpy's and torch's argmax) and "high" the highest.

    `tokens` (default `case.tokens`): how many tokens a history-keyed table covers (module
    docstring; give the horizon H for a horizon test). `draft=True` processes the draft too (its
    ties are never refused); by default the draft is left as it is."""
    if not isinstance(case, Case):
        raise CaseError(f"case must be a rheo.Case (rheo.Case.from_json, rheo.load_case), got {type(case).__name__}")
    origin = getattr(case.target, _ORIGIN, None)
    if origin is not None:
        raise CaseError(
            f"this case is already processed (rheo.processed with {_shown(origin[1])}): processing it again would "
            "apply the settings twice; allowed: the raw case, with every setting in one call (rheo.unprocessed(case) "
            "gives the raw case and the settings)"
        )
    given = (
        {
            k: v
            for k, v in dict(
                temperature=temperature,
                top_k=top_k,
                top_p=top_p,
                min_p=min_p,
                repetition=repetition,
                frequency=frequency,
                presence=presence,
                logit_bias=logit_bias,
                ties=ties,
            ).items()
            if v is not None
        }
        | ({} if order == "transformers" else {"order": order})
        | ({"tokens": tokens} if tokens is not None else {})
    )
    given |= {"draft": True} if draft else {}
    V = case.target.vocab_size
    s = sampling(
        V,
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        min_p=min_p,
        repetition=repetition,
        frequency=frequency,
        presence=presence,
        logit_bias=logit_bias,
        order=order,
        ties=ties,
    )
    n = case.tokens if tokens is None else tokens
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise CaseError(f"tokens={tokens!r} must be an integer >= 1")
    history = s.history or (case.constraint is not None and s.cuts)
    target = _history_table(case, s, n) if history else _table(case.target, s)
    out = replace(case, target=target)
    if draft:
        if history:
            raise CaseError(
                "draft=True with a penalty or a grammar: the draft's rows depend on the history; process it in the decoder"
            )
        d = replace(s, ties=processing.merge_ties("all", s.ties), greedy_ties=s.greedy_ties or "low")
        ds = None if case.draft_sample is None else _table(case.draft_sample, d)
        out = replace(out, draft=_table(case.draft, d) if present(case.draft) else case.draft, draft_sample=ds)
    # The processed target remembers where it came from (not a field: equality and to_json are the tables'), so
    # that a case built from it (dataclasses.replace, another context) is still known as processed.
    object.__setattr__(out.target, _ORIGIN, (case, given))
    return out


def _shown(settings: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in settings.items()) or "no settings"


def unprocessed(case: Case) -> tuple[Case, dict[str, Any]]:
    """`rheo.unprocessed`: (the raw case, the keywords of the `rheo.processed` call that made `case`); a case
    that `processed` did not make is its own raw case, with no settings ({}). A sampler that builds its models
    from the case it receives builds them from the raw case and applies these settings itself, once."""
    if not isinstance(case, Case):
        raise CaseError(f"case must be a rheo.Case (rheo.Case.from_json, rheo.load_case), got {type(case).__name__}")
    origin = getattr(case.target, _ORIGIN, None)
    if origin is None:
        return case, {}
    raw, given = origin
    drafts = {"draft": raw.draft, "draft_sample": raw.draft_sample} if given.get("draft") else {}
    return replace(case, target=raw.target, **drafts), dict(given)


__all__ = ["MAX_ROWS", "processed", "processed_row", "sampling", "unprocessed"]


def __getattr__(name: str) -> object:
    """The deprecated `Sampling` (PEP 562): the settings model moved to `rheo_ref.processing.Sampling`, the one
    every layer reads; `rheo.deprecated` has its row."""
    from rheo import deprecated

    return deprecated.attribute(__name__, name, {"Sampling": lambda: processing.Sampling})
