"""A small, readable speculative decoder on the transformers-style interface: rheo's known-good
baseline for the bug classes that broke real decoders (docs/GATE_REFERENCE.md, "Bug classes").

Chain speculative sampling (Leviathan et al. 2023; Chen et al. 2023), as serving stacks run it:
- prefill: the first token is sampled from the target's processed row after the prompt;
- each round, the draft proposes γ tokens x_1..x_γ, each drawn from its processed row q;
- verification (`Request.verify`):
  `token`: x_j is accepted with probability min(1, p(x_j)/q(x_j)); at the first rejection a
  token is drawn from the residual max(p − q, 0) renormalised and the round ends; when every
  draft is accepted a bonus token is drawn from p after x_γ;
  `block`: block verification (Sun et al. 2024, "Block verification accelerates speculative
  decoding", Algorithm 2): weights w_0 = 1, w_i = min(1, w_{i−1}·p(x_i)/q(x_i)); the longest
  prefix τ whose test η_i ≤ h_i passes is kept, h_i = s_i/(s_i + 1 − w_i) for i < γ with
  s_i = Σ_x max(w_i·p(x) − q(x), 0) after x_1..x_i, h_γ = w_γ; then one token from the block
  residual max(w_τ·p − q, 0) renormalised (τ < γ), or the bonus from p (τ = γ);
  `tree`: a draft tree of `TREE_WIDTH` branches, each a chain of γ tokens whose first token is
  drawn from the root's q independently of the other branches' (with replacement), verified as
  SpecInfer does (Miao et al. 2024, multi-draft recursive rejection sampling): the first tokens
  are tried in branch order, x^b accepted w.p. min(1, p_b(x^b)/q(x^b)) with p_0 = p and
  p_{b+1} = max(p_b − q, 0) renormalised after a rejection; after every branch is rejected one
  token is drawn from the last residual; after x^b is accepted its chain is verified token by
  token against the target rows along branch b (row (b, j): after x^b_1..x^b_j), then the bonus.

Rows are probability rows of table models (`rheo_ref.models.TableModel`). The logits processors
act on them as transformers' `LogitsProcessorList` acts on logits = log(row), in its order:
frequency penalty (logit − ln(1/ρ)·count, i.e. weight·ρ^count over the generated tokens),
temperature (weight^(1/T), 1/T an integer), top-k (ties at the k-th value kept, as
`TopKLogitsWarper`), top-p (`TopPLogitsWarper`: sorted ascending, drop while the cumulative
mass ≤ 1 − top_p, keep at least one). With rational rows and ρ every processed row is rational,
so the same code gives the exact law (`rheo_ref.bugclasses.exact`, Fractions) and samples
(`rheo.selfgate.bugclasses`, floats): the numbers are whatever the rows hold.

Randomness comes from a `Random` with stream positions: `uniform(position)` names a uniform of
one random stream; asking for a position twice gives the same uniform. The correct decoder takes
a fresh position for every draw (`Stream.next`).

Every step a bug class got wrong is a method of `Steps`; the decoder calls only those methods.
A mutant is a `Steps` subclass handed in (`rheo_ref.bugclasses.mutants`): this module never
names one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any, Protocol

from .. import processing
from ..constraint import Constraint
from ..errors import CaseError
from ..models import TableModel
from ..processing import normalise

Num = Any  # a Fraction (exact law) or a float (samples)
Weights = tuple  # one row of non-negative numbers over the vocabulary, not necessarily normalised
VERIFY = ("token", "block", "tree")
HARNESS_TIES = (("top_k", "all"), ("top_p", "high"))  # the served decoder's tie rules (`Request`)
TREE_WIDTH = 2  # branches of the `tree` verification's draft tree


@dataclass(frozen=True, kw_only=True)
class Request(processing.Sampling):
    """The sampling parameters of a request (the one settings model, `rheo_ref.processing.Sampling`, which
    says what each setting does and in which order) and the decoder's shape (gamma, verify), keyword-only.

    temperature: 0 (greedy) or 1/T an integer 1..4, so rows stay rational; top_k: 0 = off; top_p:
    1 = off; penalty ρ: the frequency factor per earlier occurrence of a token among the generated
    ones (1 = off); gamma: draft tokens per round (per branch under `tree`); verify: `token`,
    `block` or `tree`; min_p: 0 = off; presence π: the factor on a token already generated (1 = off); repetition θ: an integer, the
    power on a token of prompt or output (1 = off); bias: (token, factor) pairs, factor = e^bias
    (0: banned); order: `transformers` or `vllm` (`rheo_ref.processing.ORDERS`); ties: who is kept of
    tokens tied across a top-k / top-p cut (`rheo_ref.processing.check_ties`: `all`, `low`, `high`, a
    rule per cut, or None: such a cut refused). The default, `HARNESS_TIES`, is this harness's served
    decoder: top-k keeps every tied token (transformers' `TopKLogitsWarper`, vLLM's mask) and top-p
    drops the lower ids first (a stable ascending sort), so it keeps the higher ids."""

    gamma: int = 2
    verify: str = "token"
    ties: processing.Ties = HARNESS_TIES

    def __post_init__(self) -> None:
        T = Fraction(self.temperature)
        inv = 1 / T if T else None
        if T != 0 and (inv is None or inv.denominator != 1 or not 1 <= inv <= 4):
            raise CaseError(f"temperature={self.temperature}; allowed: 0 (greedy), 1, 1/2, 1/3, 1/4 (1/T an integer)")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            raise CaseError(f"top_k={self.top_k!r}; allowed: an integer >= 0 (0: off)")
        if not 0 < Fraction(self.top_p) <= 1:
            raise CaseError(f"top_p={self.top_p}; allowed: 0 < top_p <= 1 (1: off)")
        if not 0 < Fraction(self.penalty) <= 1:
            raise CaseError(f"penalty={self.penalty}; allowed: 0 < ρ <= 1 (1: off)")
        if not isinstance(self.gamma, int) or not 1 <= self.gamma <= 4:
            raise CaseError(f"gamma={self.gamma!r}; allowed: 1..4 draft tokens per round")
        if self.verify not in VERIFY:
            raise CaseError(f"verify={self.verify!r}; allowed: {', '.join(VERIFY)}")
        if not 0 <= Fraction(self.min_p) <= 1:
            raise CaseError(f"min_p={self.min_p}; allowed: 0 <= min_p <= 1 (0: off)")
        if not 0 < Fraction(self.presence) <= 1:
            raise CaseError(f"presence={self.presence}; allowed: 0 < π <= 1 (1: off)")
        if not isinstance(self.repetition, int) or not 1 <= self.repetition <= 4:
            raise CaseError(f"repetition={self.repetition!r}; allowed: an integer θ in 1..4 (1: off)")
        if any(not isinstance(t, int) or t < 0 or Fraction(f) < 0 for t, f in self.bias):
            raise CaseError(f"bias={self.bias!r}; allowed: (token id >= 0, factor >= 0) pairs")
        if self.order not in processing.ORDERS:
            raise CaseError(f"order={self.order!r}; allowed: {', '.join(processing.ORDERS)}")
        object.__setattr__(self, "ties", processing.check_ties(self.ties))

    def to_json(self) -> dict:
        out: dict = {
            "temperature": str(self.temperature),
            "top_k": self.top_k,
            "top_p": str(self.top_p),
            "penalty": str(self.penalty),
            "gamma": self.gamma,
            "verify": self.verify,
        }
        extra = {  # written only when set, so a case without them reads as before
            "min_p": (str(self.min_p), self.min_p != 0),
            "presence": (str(self.presence), self.presence != 1),
            "repetition": (self.repetition, self.repetition != 1),
            "bias": ([[t, str(f)] for t, f in self.bias], bool(self.bias)),
            "order": (self.order, self.order != "transformers"),
            "ties": (
                self.ties if self.ties is None or isinstance(self.ties, str) else dict(self.ties),
                self.ties != HARNESS_TIES,
            ),
        }
        out.update({k: v for k, (v, on) in extra.items() if on})
        return out

    @classmethod
    def from_json(cls, obj: dict) -> Request:
        return cls(
            temperature=Fraction(obj.get("temperature", "1")),
            top_k=int(obj.get("top_k", 0)),
            top_p=Fraction(obj.get("top_p", "1")),
            penalty=Fraction(obj.get("penalty", "1")),
            gamma=int(obj.get("gamma", 2)),
            verify=str(obj.get("verify", "token")),
            min_p=Fraction(obj.get("min_p", "0")),
            presence=Fraction(obj.get("presence", "1")),
            repetition=int(obj.get("repetition", 1)),
            bias=tuple((int(t), Fraction(f)) for t, f in obj.get("bias", [])),
            order=str(obj.get("order", "transformers")),
            ties=obj.get("ties", HARNESS_TIES),
        )


DEFAULT_REQUEST = Request()  # what a server uses when the request's parameters are lost


# --- logits processors: rheo_ref.processing, the one implementation -----------------------------


def process(
    row: Weights, counts: Sequence[int], req: Request, seen: Sequence[int] = (), replace: tuple = ()
) -> Weights:
    """The processed, normalised row (`rheo_ref.processing.process`, the request's order;
    `replace`: a mutant's stand-in steps)."""
    key = type(row[0]).__name__  # 0.5 == Fraction(1, 2) as a key
    return _process(row, tuple(counts), req, key, tuple(sorted(set(seen))), replace)


@lru_cache(maxsize=1 << 16)
def _process(row: Weights, counts: tuple, req: Request, kind: str, seen: tuple, replace: tuple) -> Weights:
    return processing.process(row, req, counts, seen, replace=replace)


def residual(p: Weights, q: Weights, weight: Num = 1) -> Weights:
    """max(weight·p − q, 0) renormalised; a residual of zero mass (reachable only when the q
    verification sees is not the q that was sampled) draws from p."""
    r = tuple(max(weight * a - b, 0 * a) for a, b in zip(p, q))
    return normalise(r) if sum(r) > 0 else p


# --- randomness --------------------------------------------------------------------------------


class Random(Protocol):
    """The random stream: `uniform(position)` is the uniform at a stream position (the same
    position gives the same uniform); a uniform is tested (`below`) or turned into a token by
    inverse CDF (`pick`: the first t with u < Σ_{i≤t} row_i/Σ row; `closed`: with u ≤, which differs
    only for a u exactly on a cumulative sum). A plain number may stand for a uniform (a constant)."""

    def uniform(self, position: int) -> Any: ...

    def below(self, u: Any, a: Num) -> bool: ...

    def pick(self, u: Any, row: Weights, closed: bool = False) -> int: ...


@dataclass
class Stream:
    """Positions of one random stream, handed out in order."""

    rand: Random
    position: int = 0

    def next(self) -> Any:
        self.position += 1
        return self.rand.uniform(self.position - 1)


# --- the steps a decoder can get wrong ---------------------------------------------------------


@dataclass
class Models:
    """The draft (q) and target (p) table models and the rows they are read as (`rows(model,
    context)`: Fractions for the exact law, floats for samples)."""

    draft: TableModel
    target: TableModel
    rows: Callable[[TableModel, tuple], Weights] = field(default=lambda m, ctx: m.row(ctx))
    # the decoder's dtype: each processed row is computed exactly, then held as `number(row)`
    # (identity for the exact law; float64 for samples, so top-p's boundary ties stay exact)
    number: Callable[[Weights], Weights] = field(default=lambda row: row)


class Steps:
    """The steps of the decoder, correct. A mutant overrides one (module docstring)."""

    def counts(self, generated: Sequence[int], step_tokens: Sequence[Sequence[int]], vocab: int) -> list[int]:
        """Occurrences of each token among the generated ones (for the frequency penalty);
        `step_tokens`: the tokens emitted by each completed verification step, in order."""
        c = [0] * vocab
        for t in generated:
            c[t] += 1
        return c

    def first_token(self, rand: Random, stream: Stream, p: Weights) -> int:
        """The token after prefill: a draw from the target's processed row."""
        return self.pick(rand, stream.next(), p)

    def draft_token(self, rand: Random, stream: Stream, q: Weights) -> tuple[int, Any]:
        """(x, the uniform that drew it): a draw from the draft's processed row."""
        u = stream.next()
        return self.pick(rand, u, q), u

    def draft_sampling_row(self, q: Weights) -> Weights:
        """The row the draft samples from (its processed row, in the decoder's dtype)."""
        return q

    def reported_q(self, q: Weights, q_raw: Weights, x: int) -> Weights:
        """The draft row verification uses as q for x: the row x was drawn from."""
        return q

    def target_request(self, req: Request) -> Request:
        """The sampling parameters the target's rows are processed with: the request's."""
        return req

    def verify_row(self, p: Weights) -> Weights:
        """The target row verification compares with (the processed one)."""
        return p

    def target_position(self, j: int, gamma: int) -> int:
        """Which of the γ + 1 target rows verifies draft position j (0-based): row j."""
        return j

    def tree_row(self, branch: int, j: int) -> tuple[int, int]:
        """Which target row verifies node j (0-based depth; γ: the bonus) of a tree branch: that
        branch's row j, after its own tokens x^b_1..x^b_j."""
        return branch, j

    def accept_uniform(self, rand: Random, stream: Stream) -> Any:
        return stream.next()

    def recovery_uniform(self, rand: Random, stream: Stream, accept_u: Any, draft_u: Any) -> Any:
        """The uniform of the residual draw after a rejection: a fresh position."""
        return stream.next()

    def recovery_row(self, p: Weights, p_raw: Weights) -> Weights:
        """The target row the residual and bonus draws use: the processed one."""
        return p

    def block_weight(self, w: Num) -> Num:
        """The weight of p in block verification's residual max(w·p − q, 0)."""
        return w

    def target_steps(self, j: int | None, gamma: int) -> tuple:
        """Processing steps replaced in target row j (None: the row after the prompt; γ: the bonus
        row): none (`rheo_ref.processing.process`'s `replace`)."""
        return ()

    def target_counted(self, out: Sequence[int], drafted: Sequence[int]) -> list[int]:
        """The tokens the penalties count at a target row: the emitted ones and the drafts before it."""
        return [*out, *drafted]

    def mask_state(self, j: int, gamma: int, states: Sequence[int]) -> int | None:
        """The constraint state that masks target row j (`states[i]`: after the emitted tokens and
        x_1..x_i); None: unmasked. The state along the row's own path."""
        return states[j]

    def accept(self, rand: Random, stream: Stream, p: Weights, q: Weights, x: int) -> tuple[bool, Any]:
        """Token-level acceptance of x: (a uniform below min(1, p(x)/q(x)), that uniform)."""
        u = self.accept_uniform(rand, stream)
        return rand.below(u, ratio(p[x], q[x])), u

    def residual_row(self, p: Weights, q: Weights) -> Weights:
        """The row drawn from after a rejection: max(p − q, 0) renormalised."""
        return residual(p, q)

    def pick(self, rand: Random, u: Any, row: Weights) -> int:
        """A token from a row by inverse CDF: the first t with u < Σ_{i≤t} row_i / Σ row."""
        return rand.pick(u, row)

    def reported_prob(self, p: Weights, p_raw: Weights, t: int) -> Num:
        """The probability the decoder reports for emitted token t (its logprob, exponentiated):
        the processed target row's."""
        return p[t]


CORRECT = Steps()


def decode(
    models: Models,
    context: Sequence[int],
    n: int,
    req: Request,
    rand: Random,
    steps: Steps = CORRECT,
    *,
    first_round: bool = False,
    constraint: Constraint | None = None,
    logprobs: list | None = None,
) -> tuple:
    """The first n tokens the decoder emits after `context` (module docstring); with
    `first_round`, the prefill token and the tokens of the first verification step instead.
    `constraint`: the grammar (its state starts at 0 after the prompt); `logprobs`: a list that
    receives the probability reported for each emitted token."""
    if first_round:
        n = req.gamma + 2
    V = models.draft.vocab_size
    stream = Stream(rand)
    out: list[int] = []
    reported: list = []
    done_steps: list[tuple[int, ...]] = []
    treq = steps.target_request(req)

    def target(extra: Sequence[int], j: int | None, states: Sequence[int]) -> tuple[Weights, Weights, Weights]:
        """(processed p for verification, the row residual/bonus draws use, the raw row) at row j."""
        raw = models.rows(models.target, tuple(context) + tuple(out) + tuple(extra))
        if constraint is not None:
            state = states[0] if j is None else steps.mask_state(j, req.gamma, states)
            raw = raw if state is None else constraint.mask(raw, state)
        counted = steps.target_counted(out, list(extra))
        seen = (*context, *counted)
        exact = process(raw, steps.counts(counted, done_steps, V), treq, seen, steps.target_steps(j, req.gamma))
        p = steps.verify_row(models.number(exact))
        raw_n = models.number(normalise(raw))
        return p, steps.recovery_row(p, raw_n), raw_n

    def path_states(xs: Sequence[int]) -> list[int]:
        if constraint is None:
            return [0] * (len(xs) + 1)
        s0 = constraint.state(out)
        return [constraint.state(xs[:i], s0) for i in range(len(xs) + 1)]

    p0, _, raw0 = target((), None, path_states(()))
    out.append(steps.first_token(rand, stream, p0))
    reported.append(steps.reported_prob(p0, raw0, out[0]))

    def draft_chain() -> tuple[list[int], list[Weights], list[Any]]:
        """γ draft tokens from the processed draft rows (the draft is not constrained): (x, q, u)."""
        xs: list[int] = []
        qs: list[Weights] = []
        us: list[Any] = []
        for _ in range(req.gamma):
            raw = models.rows(models.draft, tuple(context) + tuple(out) + tuple(xs))
            counted = [*out, *xs]
            q = models.number(process(raw, steps.counts(counted, done_steps, V), req, (*context, *counted)))
            x, u = steps.draft_token(rand, stream, steps.draft_sampling_row(q))
            qs.append(steps.reported_q(q, models.number(normalise(raw)), x))
            xs.append(x)
            us.append(u)
        return xs, qs, us

    while len(out) < n:
        branches = [draft_chain() for _ in range(TREE_WIDTH if req.verify == "tree" else 1)]
        # target: γ + 1 rows per branch, row j after x_1..x_j of that branch
        rows = []
        for xs, _, _ in branches:
            states = path_states(xs)
            rows.append([target(xs[:j], j, states) for j in range(req.gamma + 1)])
        if req.verify == "tree":
            emitted, b = verify_tree(branches, rows, rand, stream, steps)
            at = [rows[bb][jj] for bb, jj in (steps.tree_row(b, j) for j in range(len(emitted)))]
        else:
            xs, qs, us = branches[0]
            verify = verify_token if req.verify == "token" else verify_block
            emitted = verify(xs, qs, us, rows[0], rand, stream, steps)
            at = [
                rows[0][steps.target_position(j, req.gamma) if j < req.gamma else req.gamma]
                for j in range(len(emitted))
            ]
        for (p, _, raw_j), t in zip(at, emitted):
            reported.append(steps.reported_prob(p, raw_j, t))
        done_steps.append(tuple(emitted))
        out.extend(emitted)
        if first_round:
            break
    if logprobs is not None:
        logprobs.extend(reported[: len(out) if first_round else n])
    return tuple(out) if first_round else tuple(out[:n])


def verify_token(xs, qs, us, rows, rand: Random, stream: Stream, steps: Steps) -> list[int]:
    """Token-level verification: accept x_j w.p. min(1, p/q), else a residual draw; bonus at the end."""
    emitted: list[int] = []
    gamma = len(xs)
    for j, (x, q) in enumerate(zip(xs, qs)):
        p, p_draw, _ = rows[steps.target_position(j, gamma)]
        ok, u = steps.accept(rand, stream, p, q, x)
        if ok:
            emitted.append(x)
            continue
        v = steps.recovery_uniform(rand, stream, u, us[j])
        emitted.append(steps.pick(rand, v, steps.residual_row(p_draw, q)))
        return emitted
    emitted.append(steps.pick(rand, stream.next(), rows[gamma][1]))
    return emitted


def verify_tree(branches, rows, rand: Random, stream: Stream, steps: Steps) -> tuple[list[int], int]:
    """Tree verification (module docstring): (the emitted tokens, the branch they follow). `branches`:
    per branch (x, q, u) of its chain; `rows[b][j]`: the target row after x^b_1..x^b_j."""
    gamma = len(branches[0][0])

    def row(b: int, j: int) -> tuple:
        bb, jj = steps.tree_row(b, j)
        return rows[bb][jj]

    p, p_draw, _ = row(0, 0)
    for b, (xs, qs, us) in enumerate(branches):
        ok, u = steps.accept(rand, stream, p, qs[0], xs[0])
        if ok:
            break
        if b == len(branches) - 1:  # every first token rejected: one token from the last residual
            v = steps.recovery_uniform(rand, stream, u, us[0])
            return [steps.pick(rand, v, steps.residual_row(p_draw, qs[0]))], b
        p, p_draw = steps.residual_row(p, qs[0]), steps.residual_row(p_draw, qs[0])
    emitted = [xs[0]]
    for j in range(1, gamma):  # the accepted branch's chain, token by token against its own rows
        p, p_draw, _ = row(b, j)
        ok, u = steps.accept(rand, stream, p, qs[j], xs[j])
        if not ok:
            v = steps.recovery_uniform(rand, stream, u, us[j])
            return [*emitted, steps.pick(rand, v, steps.residual_row(p_draw, qs[j]))], b
        emitted.append(xs[j])
    return [*emitted, steps.pick(rand, stream.next(), row(b, gamma)[1])], b


def ratio(p: Num, q: Num) -> Num:
    """min(1, p/q); a q of 0 (only a mutant's reported q) accepts iff p > 0."""
    if q == 0:
        return p * 0 + (1 if p > 0 else 0)
    return min(p / q, p * 0 + 1)


def verify_block(xs, qs, us, rows, rand: Random, stream: Stream, steps: Steps) -> list[int]:
    """Block verification (module docstring): the longest prefix whose test passes, then one
    token from the block residual at its end (or the bonus)."""
    gamma = len(xs)
    w = [qs[0][xs[0]] * 0 + 1]  # w_0 = 1
    for j in range(gamma):
        p = rows[steps.target_position(j, gamma)][0]
        pj, qj = p[xs[j]], qs[j][xs[j]]
        w.append(min(w[-1] * pj / qj, w[0]) if qj else w[0] * (1 if pj > 0 else 0))
    tau = 0
    for i in range(1, gamma + 1):
        if i == gamma:
            h = w[gamma]
        else:
            p = rows[steps.target_position(i, gamma)][0]
            s = sum(max(w[i] * a - b, 0 * a) for a, b in zip(p, qs[i]))
            h = s / (s + 1 - w[i]) if s + 1 - w[i] > 0 else w[0]
        if rand.below(steps.accept_uniform(rand, stream), h):
            tau = i
    if tau == gamma:
        return [*xs, steps.pick(rand, stream.next(), rows[gamma][1])]
    _, p_draw, _ = rows[steps.target_position(tau, gamma)]
    return [*xs[:tau], steps.pick(rand, stream.next(), residual(p_draw, qs[tau], steps.block_weight(w[tau])))]
