"""The static family's fast path (docs/SCHEMES.md §7): `rheo_fast.families.static.round` against the reference
replay `rheo_ref.families.static.replay`, coin for coin; the replay against the exact round law (χ²);
`rheo sample` on static cases; bad input.

Coupling: both sides read the same coin blocks (a hypothesis-chosen share of exact zeros, so that
a coin of 0 meets probabilities 0); a round is compared while the reference's closest decision
is farther than 1e-9 from flipping (`StaticReplayRound.comparable`), the first round must be.
Negative controls: the same comparison fails when the fast path runs a wrong step.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from fractions import Fraction

import pytest
import torch
from helpers import CASES, Stream, exact_case, load_json, write_case
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from rheo.cli import main
from rheo.lossless.stats import assert_law, check_law, samples_for, seed_for
from rheo.selfgate.matrix import fast_verdict
from rheo_fast.decode import decode
from rheo_fast.families.static.round import Walk, draw_tree, emit, static_layout, verify_topdown, verify_traversal
from rheo_fast.models import TableTreeModel, as_rows
from rheo_ref.errors import CaseError
from rheo_ref.exact import Exact, target_law, tv
from rheo_ref.families.static.exact import draws_of_tree
from rheo_ref.families.static.replay import CoinReader, replay_static_decode, replay_static_round
from rheo_ref.families.static.replay import draw_tree as ref_draw_tree
from rheo_ref.families.static.replay import verify_traversal as ref_traversal
from rheo_ref.families.static.scheme import SAMPLINGS, SHAPE_KINDS, VERIFIERS, StaticScheme
from rheo_ref.families.static.strategies import static_cases
from rheo_ref.generate import greedy_case
from rheo_ref.models import Case, TableModel, load_case
from rheo_ref.verifier_laws import traversal_law

pytestmark = pytest.mark.usefixtures("one_thread")

PAIRINGS = [(s, v) for s in SAMPLINGS for v in VERIFIERS]
TEMPERATURES = [1.0, 0.5, 0.0]


# --- helpers ------------------------------------------------------------------------------------


def run_fast(case: Case, stream: Stream, T: float):
    return decode(
        TableTreeModel(case, T=T),
        [case.context] * stream.trials,
        case.scheme,
        case.tokens,
        coins=stream,
        keep_rounds=True,
    )


def compare(ref_case: Case, stream: Stream, per_round: list, b: int) -> int:
    """Round-by-round equality of trial b while the reference's rounds are comparable; rounds compared."""
    compared = 0
    for i, rd in enumerate(replay_static_decode(ref_case, stream.trial(b))):
        if not rd.comparable():
            break
        got = tuple(t for t in per_round[i][b].tolist() if t >= 0)
        assert got == rd.emitted, f"trial {b} round {i}: fast {got} != reference {rd.emitted}"
        compared += 1
    return compared


def fixed_case(kind: str, sampling: str, verify: str, *, V: int = 5, seed: int = 3, tokens: int = 3) -> Case:
    """Random first-order tables over V = 5 with a zero in every row (rows of different contexts
    put it elsewhere), a separate q_samp table."""
    rng = random.Random(seed)
    keys = [()] + [(i,) for i in range(V)]
    weights = lambda shift: {
        k: [0 if t == (i + shift) % V else rng.randint(1, 20) for t in range(V)] for i, k in enumerate(keys)
    }
    draft, sample, target = (
        TableModel.from_weights(weights(s), context_length=1, name=n)
        for s, n in ((0, "draft"), (1, "draft_sample"), (3, "target"))
    )
    sizes = {"branching": (2, 2), "delayed": (3, 1, 2), "parents": (0, 0, 1, 2, 1)}[kind]
    return Case(draft, target, StaticScheme(kind, sizes, sampling, verify), (0,), tokens, sample)


# --- coupled: fast path == reference replay, coin for coin ---------------------------------------

RELAXED = settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow], deadline=None)


@settings(RELAXED, max_examples=max(4, settings.default.max_examples // 5))
@given(data=st.data(), seed=st.integers(0, 2**31), zeros=st.sampled_from([0.0, 0.1, 0.4]))
@pytest.mark.parametrize("T", TEMPERATURES)
@pytest.mark.parametrize("sampling,verify", PAIRINGS)
def test_fast_replays_the_reference_coin_for_coin(sampling, verify, T, data, seed, zeros):
    """Generated cases (every shape kind, context lengths 0-2, zeros in rows, separate q_samp
    tables or not), 6 trials in one batch, each against its own reference run."""
    L = data.draw(st.integers(0, 2), label="context_length")
    case = data.draw(
        static_cases(
            sampling=sampling, verify=verify, context_length=L, max_tokens=3, max_trees=10**12, method="classes"
        ),
        label="case",
    )
    ref_case = exact_case(case, T)
    stream = Stream(case.scheme, seed, zeros, trials=6)
    assume(replay_static_round(ref_case, case.context, stream.trial(0)(0)).comparable())
    fast = run_fast(case, stream, T)
    n = [compare(ref_case, stream, fast.per_round, b) for b in range(6)]
    event(f"rounds compared: {sum(n)}")
    assert n[0] >= 1


@pytest.mark.parametrize("T", TEMPERATURES)
@pytest.mark.parametrize("kind", SHAPE_KINDS)
@pytest.mark.parametrize("sampling,verify", PAIRINGS)
def test_every_round_of_a_fixed_case_is_compared_and_equal(sampling, verify, kind, T):
    """V = 5, 40 trials in one batch, 3 tokens: every round of every trial is comparable here
    and must be equal (60-120 rounds per setting, ~800 per pairing over its 9 settings)."""
    case = fixed_case(kind, sampling, verify)
    ref_case = exact_case(case, T)
    stream = Stream(case.scheme, seed_for(f"static-fixed|{sampling}|{verify}|{kind}|{T}"), 0.05, trials=40)
    fast = run_fast(case, stream, T)
    compared = sum(compare(ref_case, stream, fast.per_round, b) for b in range(40))
    rounds = sum(len(replay_static_decode(ref_case, stream.trial(b))) for b in range(40))
    assert compared == rounds >= 40


# The case of docs/SCHEMES.md §3 (V = 4, one context) with three root children: wor's second and
# third draws come from q without the earlier tokens.
TWO_OVER_D = TableModel.from_rows({"": ["3/8", "3/8", "1/8", "1/8"]}, context_length=0, name="draft")
TWO_OVER_T = TableModel.from_rows({"": ["1/8", "1/8", "1/2", "1/4"]}, context_length=0, name="target")


def two_over(kind: str, sizes: tuple[int, ...], sampling: str, verify: str, tokens: int = 1) -> Case:
    return Case(TWO_OVER_D, TWO_OVER_T, StaticScheme(kind, sizes, sampling, verify), (), tokens)


def one_fast_round(case: Case, coins: torch.Tensor, verify: str, sampling: str) -> list[tuple[int, ...]]:
    """One round of the fast path composed from its steps, the verifier and the traversal's Ms
    update given explicitly (the scheme's own: the spec; anything else: a wrong step)."""
    layout = static_layout(case.scheme_as(StaticScheme))
    model = TableTreeModel(case)
    state = model.start([case.context] * coins.shape[0])
    draw_c, accept_c, bonus_c = layout.split(coins)
    tree, q_rows, _ = draw_tree(model, state, layout, draw_c)
    walk = Walk(as_rows(model.target(state, tree)), coins.shape[0], layout.N, coins.device)
    if verify == "traversal":
        end, row = verify_traversal(tree, walk, q_rows, layout, accept_c, sampling)
    else:
        end, row = verify_topdown(tree, walk, q_rows, layout, accept_c, verify)
    return [tuple(t for t in r if t >= 0) for r in emit(tree, layout, end, row, bonus_c).tolist()]


@pytest.mark.parametrize(
    "scheme,wrong",
    [
        (
            ("branching", (3,), "wor", "traversal"),
            ("traversal", "iid"),
        ),  # Ms not updated (the iid update, wor siblings)
        (("branching", (2, 1), "wor", "rrsw"), ("specinfer", "wor")),  # s not updated (specinfer's rule, wor siblings)
    ],
    ids=["traversal-iid-update", "rrsw-as-specinfer"],
)
def test_the_coupled_comparison_catches_a_wrong_step(scheme, wrong):
    """The comparison has teeth: the steps composed with the right rule agree with the reference
    on every one of 300 trials; with one rule wrong, some trials disagree (traversal: 6, rrsw: 6)."""
    case = two_over(*scheme)
    coins = Stream(case.scheme, 7, 0.0, trials=300)(0)
    refs = [replay_static_round(case, (), coins[b].tolist()) for b in range(300)]
    assert all(rd.comparable() for rd in refs)
    right = one_fast_round(case, coins, case.scheme.verify, case.scheme.sampling)
    assert right == [rd.emitted for rd in refs]
    bad = one_fast_round(case, coins, *wrong)
    assert sum(a != rd.emitted for a, rd in zip(bad, refs)) >= 1


# --- the replay's output law is the exact round law ----------------------------------------------

REPLAY_N = 20_000  # rounds, where a test does not plan its own N
ALPHA, DELTA = 1e-4, 0.05  # false alarm, and the TV each test detects with power 0.99 (asserted)
STATIC = load_case(str(CASES / "static.json"))


def replay_law_samples(case: Case, seed: int, verify_round=None, n: int = REPLAY_N) -> list[tuple[int, ...]]:
    rng = random.Random(seed)
    coins = static_layout(case.scheme_as(StaticScheme)).n_coins
    play = verify_round or (lambda c, u: replay_static_round(c, c.context, u).emitted)
    return [play(case, [rng.random() for _ in range(coins)]) for _ in range(n)]


@pytest.mark.parametrize(
    "case",
    [
        two_over("branching", (3,), "wor", "traversal"),
        Case(STATIC.draft, STATIC.target, StaticScheme("parents", (0, 0, 1), "iid", "rrsw"), STATIC.context, 1),
        two_over("branching", (2, 1), "wor", "specinfer"),  # lossy: the replay follows its own exact law
    ],
    ids=["wor-traversal", "iid-rrsw", "wor-specinfer-lossy"],
)
def test_the_replay_samples_the_exact_round_law(case):
    """Replayed rounds with random coins against `Exact(case).round_law()`, one case per verifier:
    the gate's test at α = 1e-4, N planned to detect TV >= 0.05 of the round law with power 0.99."""
    law = Exact(case).round_law()
    n = samples_for(law, DELTA, ALPHA, 0.01)
    res = check_law(
        replay_law_samples(case, seed_for(f"replay-law|{case.scheme}"), n=n),
        law,
        alpha=ALPHA,
        tv=DELTA,
        label=str(case.scheme.to_json()),
    )
    assert res.detectable_tv <= DELTA and not res.rejected, res.summary()


def test_the_replay_law_test_rejects_a_wrong_ms_update():
    """Negative control: wor siblings verified with the iid update (Ms unchanged), exact TV 1/8
    from the right round law here, is rejected by the same test (N planned to detect TV >= 0.1
    with power 0.99, asserted)."""
    case = two_over("branching", (3,), "wor", "traversal")
    law = Exact(case).round_law()
    wrong: dict = defaultdict(Fraction)
    for pr, tree in draws_of_tree(case, ()):
        for s, q in traversal_law(tree, case.target, case.q_samp_model, (), "iid").items():
            wrong[s] += pr * q
    assert tv(law, wrong) == Fraction(1, 8)

    def wrong_round(c: Case, coins: list[float]) -> tuple[int, ...]:
        reader = CoinReader(coins, static_layout(c.scheme_as(StaticScheme)))
        return ref_traversal(ref_draw_tree(c, c.context, reader), c, c.context, reader, "iid")

    res = check_law(
        replay_law_samples(case, seed_for("replay-law|wrong"), wrong_round, n=samples_for(law, 0.1, ALPHA, 0.01)),
        law,
        alpha=ALPHA,
        tv=0.1,
    )
    assert res.detectable_tv <= 0.1 and res.rejected, res.summary()


# --- rheo sample, the gate's sampler, bad input ---------------------------------------------------


class Result:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def sample(tmp_path, capsys):
    """`rheo sample CASE ARGS...` in this process."""

    def run(obj, *args: str) -> Result:
        path = obj if isinstance(obj, str) else write_case(tmp_path, obj)
        try:
            rc = main(["sample", path, *args])
        except SystemExit as e:  # argparse
            rc = e.code
        out, err = capsys.readouterr()
        return Result(rc, out, err)

    return run


def _tuples(counts: dict[str, int]) -> dict[tuple[int, ...], int]:
    return {tuple(map(int, k.split(","))): v for k, v in counts.items()}


@pytest.mark.parametrize("T", ["1", "0"])
def test_rheo_sample_on_the_static_case_file_matches_the_exact_law(sample, T):
    """tests/cases/static.json (wor + traversal, branching [2, 2], 3 tokens), 20k continuations:
    χ² at α = 1e-4 of the tokens and of the first round's length, each detecting TV >= 0.06 with
    power 0.99 (asserted by assert_law); T = 0 against the greedy tables."""
    res = sample(str(CASES / "static.json"), "--samples", "20000", "--seed", "1", "--temperature", T)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert set(out) == {"counts", "first_round", "rounds_per_second"}
    assert sum(out["counts"].values()) == 20000 and out["rounds_per_second"] > 0
    case = STATIC if T == "1" else greedy_case(STATIC)
    ex = Exact(case)
    assert_law(_tuples(out["counts"]), ex.token_law(), alpha=1e-4, tv=0.06, label="static counts")
    lengths = out["first_round"]["emitted_length_counts"]
    assert_law(
        {(int(k),): v for k, v in lengths.items()},
        {(k,): p for k, p in ex.round_lengths().items()},
        alpha=1e-4,
        tv=0.06,
        label="first-round lengths",
    )
    assert out["first_round"]["tau"] == sum(int(k) * v for k, v in lengths.items()) / 20000


def test_fast_verdict_drives_the_static_fast_path():
    """The `rheo audit` column on static cases: α = 1e-3, detects TV >= 0.05 with power 0.99. The
    lossless wor + traversal case passes; wor + specinfer on the same tables (exact TV 1/8 from
    the target, docs/SCHEMES.md §3) fails."""
    ok = fast_verdict(two_over("branching", (3,), "wor", "traversal"), alpha=1e-3, tv=0.05, seed=seed_for("static|ok"))
    lossy = two_over("branching", (3,), "wor", "specinfer")
    assert tv(Exact(lossy).token_law(), target_law(lossy)) == Fraction(1, 8)
    bad = fast_verdict(lossy, alpha=1e-3, tv=0.05, seed=seed_for("static|lossy"))
    assert ok["verdict"] == "pass" and ok["detectable_tv"] <= 0.05
    assert bad["verdict"] == "REJECT" and bad["N"] == ok["N"]


def test_decode_refuses_a_mutant_of_the_rheo_family():
    from rheo_ref.variants import MUTANTS

    with pytest.raises(CaseError, match="'fills-first' belongs to the rheo family; a case of family 'static'"):
        decode(
            TableTreeModel(STATIC),
            [STATIC.context],
            STATIC.scheme,
            2,
            generator=torch.Generator(),
            variant=MUTANTS["fills-first"],
        )


def _without_target_row(key: str) -> dict:
    obj = load_json("static.json")
    del obj["target"]["probs"][key]
    return obj


@pytest.mark.parametrize(
    "obj,args,needle",
    [
        (load_json("static.json"), ("--mutant", "fills-first"), "mutant 'fills-first' belongs to the rheo family"),
        (_without_target_row("2"), (), "has no row"),
        (
            {
                **load_json("static.json"),
                "scheme": {"family": "static", "delayed": [2, 1], "sampling": "wor", "verify": "rrsw"},
            },
            (),
            "must be [K, L1, L2]",
        ),
        (
            {
                **load_json("static.json"),
                "scheme": {"family": "static", "branching": [2], "sampling": "wor", "verify": "rheo"},
            },
            (),
            "unknown static verifier 'rheo'",
        ),
    ],
    ids=["mutant", "missing-row", "bad-shape", "bad-verifier"],
)
def test_bad_input_exits_2_with_one_line(sample, obj, args, needle):
    res = sample(obj, "--samples", "2000", "--seed", "1", *args)
    assert res.returncode == 2 and res.stdout == "", (res.returncode, res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr and needle in lines[0], res.stderr


def test_the_audit_shows_the_static_family():
    """`rheo audit`'s static rows: both shape kinds, the four lossless pairings and the lossy
    wor + specinfer, labelled lossy exactly where the exact TV (classes) is > 0."""
    from rheo.selfgate.audit import audit_cases

    static = [(label, case) for label, case in audit_cases() if case.scheme.family == "static"]
    assert {c.scheme.kind for _, c in static} == {"delayed", "branching"}
    assert {(c.scheme.sampling, c.scheme.verify) for _, c in static} == {
        ("iid", "specinfer"),
        ("wor", "rrsw"),
        ("iid", "traversal"),
        ("wor", "traversal"),
        ("wor", "specinfer"),
    }
    for label, case in static:
        assert ("lossy" in label) == (tv(Exact(case).token_law(), target_law(case)) > 0), label
