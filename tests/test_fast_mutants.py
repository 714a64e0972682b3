"""The mutants (rheo_ref.variants.MUTANTS) on the fast path: each must change what the fast path emits (coupled, same
coins) on a case of its family built to exercise its step, the spec must not (it is the reference coin for
coin, tests/test_replay.py and tests/test_static_fast.py), and unknown names are refused. Each family
declares its settings type and its mutants (rheo_ref.family.Family); a mutant changes exactly one
setting of its own family's."""

from __future__ import annotations

import dataclasses
import random

import pytest
import torch

from rheo_fast.decode import decode
from rheo_fast.families.rheo.round import run_round
from rheo_fast.family import layout_for
from rheo_fast.models import TableTreeModel
from rheo_ref.errors import CaseError
from rheo_ref.families.rheo.layout import RheoLayout
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.static.scheme import VERIFIERS, StaticScheme
from rheo_ref.families.tsubame.scheme import TsubameScheme
from rheo_ref.family import families, register
from rheo_ref.models import Case, TableModel
from rheo_ref.strategies import distinct_weights
from rheo_ref.variants import MUTANTS, SPEC, Variant, variant_named
from rheo_ref.verifier_laws import READ_BY, VerifierSteps

pytestmark = pytest.mark.usefixtures("one_thread")


def mutant_case(V: int = 6, seed: int = 3) -> Case:
    """Zeros in every row, a separate q_samp (so temperature matters), W < K and R < N (so
    ranking matters), m = 1 (so q̃ != q_samp and there are fills)."""
    rng = random.Random(seed)
    keys = [()] + [(c,) for c in range(V)]

    def table(name: str, shift: int) -> TableModel:
        return TableModel.from_weights(
            {k: distinct_weights(rng, V, zero=(i + shift) % V) for i, k in enumerate(keys)}, name=name
        )

    return Case(table("draft", 0), table("target", 2), Scheme(3, 1, 2, 3, 6), (0,), 4, table("draft_sample", 0))


def static_mutant_case(sampling: str, verify: str, V: int = 6, seed: int = 3) -> Case:
    """The static family's: zeros in every row, a separate q_samp, and the shape root -> 1, 2;
    1 -> 3, 5; 2 -> 4, so nodes have two children and leaves are created out of post-order."""
    base = mutant_case(V, seed)
    return Case(
        base.draft, base.target, StaticScheme("parents", (0, 0, 1, 2, 1), sampling, verify), (0,), 4, base.draft_sample
    )


def tsubame_mutant_case(sampling: str = "wor", verify: str = "traversal") -> Case:
    """The tsubame family's: the tables of `mutant_case`, a plan of K = 2, W = 1, D = 2, R = 3 (the
    frontier and the rerank each cut nodes, so planning on drawn tokens changes which are kept)."""
    base = mutant_case()
    return Case(base.draft, base.target, TsubameScheme(2, 1, 2, 3, sampling, verify), (0,), 4, base.draft_sample)


def case_for(variant: Variant) -> Case:
    """A case of the variant's family on which its step runs: for a static setting, wor siblings
    and the last verifier that reads it (traversal, or rrsw for the proposal update)."""
    if variant.family == "tsubame":
        return tsubame_mutant_case()
    if variant.family == "treespark":  # its gate case: traversal at a binding θ (sigmoid calibration)
        from rheo.selfgate.matrix import gate_cases

        return gate_cases()["treespark-traversal-theta/T1"].case
    if variant.family != "static":
        return mutant_case()
    (setting,) = variant.changed()
    return static_mutant_case("wor", READ_BY[setting][-1])


def coupled_outputs(case: Case, variant: Variant, B: int, seed: int, zeros: float) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    n_coins = layout_for(case.scheme).n_coins
    blocks: list[torch.Tensor] = []

    def coins(i: int) -> torch.Tensor:
        while len(blocks) <= i:
            c = torch.rand((B, n_coins), generator=g, dtype=torch.float64)  # [B, C]
            blocks.append(torch.where(torch.rand(c.shape, generator=g, dtype=torch.float64) < zeros, 0.0, c))
        return blocks[i]

    return decode(
        TableTreeModel(case), [case.context] * B, case.scheme, case.tokens, coins=coins, variant=variant
    ).tokens


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_mutant_changes_outputs_under_the_same_coins(mutant):
    case = case_for(MUTANTS[mutant])
    B = 3000 if mutant == "float16" else 600
    spec = coupled_outputs(case, SPEC, B, 11, 0.2)
    bad = coupled_outputs(case, MUTANTS[mutant], B, 11, 0.2)
    differ = (spec != bad).any(-1).float().mean().item()
    assert differ > 0, f"mutant {mutant!r} emitted exactly what the spec emits on {B} coupled trials"


@pytest.mark.parametrize("mutant", sorted(n for n, v in MUTANTS.items() if v.family == "static"))
def test_a_static_setting_changes_only_the_verifiers_that_read_it(mutant):
    """On the verifiers that do not read its setting (READ_BY), a static mutant emits exactly
    what the spec emits under the same coins: READ_BY, which chooses the gate cases of its
    negative control (rheo.selfgate.matrix.mutant_cases), is what the fast path does."""
    (setting,) = MUTANTS[mutant].changed()
    for verify in VERIFIERS:
        case = static_mutant_case("wor", verify)
        spec, bad = (coupled_outputs(case, v, 400, 7, 0.1) for v in (SPEC, MUTANTS[mutant]))
        same = torch.equal(spec, bad)
        assert same == (verify not in READ_BY[setting]), (mutant, verify)


def test_spec_is_deterministic_under_the_same_coins():
    case = mutant_case()
    assert torch.equal(coupled_outputs(case, SPEC, 500, 5, 0.2), coupled_outputs(case, SPEC, 500, 5, 0.2))


def test_required_mutants_are_registered_with_descriptions():
    required = {
        "proxy-true",
        "proxy-const",
        "verify-q-not-qtilde",
        "sample-whole-q",
        "residual-unnormalised",
        "stale-bonus",
        "one-hot-sampled",
        "bonus-full-p",
        "leq-coin",
        "float16",
        "temp-sample-only",
        "fills-first",
    }
    static = {
        "traversal-bad-rate",
        "traversal-min-index-leaf",
        "traversal-stale-bonus",
        "specinfer-on-wor",
        "traversal-wrong-update",
        "sorted-siblings",
    }  # docs/SCHEMES.md §8
    assert required <= {n for n, v in MUTANTS.items() if v.family == "rheo"}
    assert static == {n for n, v in MUTANTS.items() if v.family == "static"}
    assert {n for n, v in MUTANTS.items() if v.family == "tsubame"} == {"tsubame-plan-after-sampling"}  # §12
    assert all(v.name == k and v.description and "\n" not in v.description for k, v in MUTANTS.items())


def test_every_mutant_changes_exactly_one_setting_of_its_own_family_and_the_spec_none():
    assert SPEC.changed() == {} and SPEC.family is None and SPEC.steps is None
    fams = families()
    for name, v in MUTANTS.items():
        assert v.family in fams and v in fams[v.family].mutants and type(v.steps) is fams[v.family].steps, name
        assert len(v.changed()) == 1, (name, v.changed())
    for fam in fams.values():  # every setting of a family is exercised by one of its mutants
        names = {f.name for f in dataclasses.fields(fam.steps)} if fam.steps else set()
        assert {s for v in fam.mutants for s in v.changed()} == names, fam.name
        assert SPEC.steps_of(fam.name) == (fam.steps() if fam.steps else None)  # the spec: the defaults
    assert len({(v.family, tuple(v.changed().items())) for v in MUTANTS.values()}) == len(MUTANTS)  # no two alike
    # the verifiers' settings name the verifiers that read them
    assert set(READ_BY) == {f.name for f in dataclasses.fields(VerifierSteps)}
    assert all(set(vs) <= set(VERIFIERS) for vs in READ_BY.values())
    # a round reads its own family's settings; a mutant of another family is refused by name
    leq = MUTANTS["leq-coin"]
    assert leq.steps_of("rheo") is leq.steps
    with pytest.raises(CaseError, match=r"belongs to the rheo family.*sorted-siblings"):
        leq.steps_of("static")
    # a family's mutants carry its own settings type and names new to the registry
    static = fams["static"]
    for mutant, match in [
        (dataclasses.replace(leq, family="static2"), "settings type"),
        (MUTANTS["sorted-siblings"], "already a name"),
    ]:
        with pytest.raises(CaseError, match=match):
            register(
                dataclasses.replace(static, name="static2", mutants=(dataclasses.replace(mutant, family="static2"),))
            )
    assert "static2" not in families()


def test_unknown_mutant_is_refused_by_name():
    with pytest.raises(CaseError, match="proxy-flase"):
        variant_named("proxy-flase")
    assert variant_named(None) is SPEC and variant_named("fills-first") is MUTANTS["fills-first"]
    case = mutant_case()
    with pytest.raises(CaseError, match="Variant"):  # a name where a Variant goes is refused, not ignored
        decode(TableTreeModel(case), [case.context], case.scheme, 2, generator=torch.Generator(), variant="fills-first")


def test_leq_coin_accepts_a_zero_probability_token_with_a_zero_coin():
    """All coins 0: the spec never accepts a child whose target probability is 0, leq-coin does."""
    V = 3
    draft = TableModel.from_rows({(): ["1/2", "1/2", "0"]}, context_length=0, name="draft")
    target = TableModel.from_rows({(): ["0", "0", "1"]}, context_length=0, name="target")
    case = Case(draft, target, Scheme(2, 2, 1, 1, 2), (), 1)
    layout = RheoLayout(2, 1, 1)
    zeros = torch.zeros((1, layout.n_coins), dtype=torch.float64)
    model = TableTreeModel(case)
    spec = run_round(model, model.start([()]), case.scheme, zeros).verdict
    leq = run_round(model, model.start([()]), case.scheme, zeros, variant=MUTANTS["leq-coin"]).verdict
    assert spec.emitted[0, 0].item() == 2 and spec.n_emitted.item() == 1  # both children rejected, bonus 2
    assert leq.emitted[0, 0].item() in (0, 1)  # a token of probability 0 accepted
    del V


def test_a_massless_bonus_ends_the_trial_with_minus_one():
    """residual-unnormalised can reach a residual of mass 0; its bonus is -1 (no token) and the
    trial stops there (tokens stay -1) instead of looking up a context that holds no token.
    rrsw, K = 2, m = 1, q = p = (1/2, 1/2): det 0 rejected leaves r = (0, 1/2) unnormalised, the
    sampled 1 (q̃ = δ_1) is then rejected by a coin of 0.9 (the spec accepts it: r = (0, 1))."""
    half = {(): ["1/2", "1/2"], (0,): ["1/2", "1/2"], (1,): ["1/2", "1/2"]}
    case = Case(
        TableModel.from_rows(half, name="draft"),
        TableModel.from_rows(half, name="target"),
        Scheme(2, 1, 1, 1, 2, verify="rrsw"),
        (0,),
        3,
    )
    coins = torch.tensor([[0.5, 0.0, 0.0, 0.0, 0.9, 0.9, 0.5]], dtype=torch.float64)  # sample 0..2, accept 3..5, bonus
    assert coins.shape[1] == RheoLayout(2, 1, 1).n_coins
    spec = decode(TableTreeModel(case), [case.context], case.scheme, 3, coins=lambda i: coins)
    assert spec.tokens.tolist() == [[1, 1, 1]]  # sampled 1 accepted, bonus 1 from p(.|1), twice
    bad = decode(
        TableTreeModel(case),
        [case.context],
        case.scheme,
        3,
        coins=lambda i: coins,
        variant=MUTANTS["residual-unnormalised"],
    )
    assert bad.tokens.tolist() == [[-1, -1, -1]] and bad.rounds.tolist() == [1]


def test_the_tsubame_mutant_sampler_refuses_what_it_cannot_run():
    """Its sampler is the reference replay (rheo_fast.families.tsubame.mutant): it needs the exact tables at
    T = 1 and a coin block that holds every draw of the build; anything else is refused by name."""
    from rheo_fast.families.tsubame.mutant import coins_needed

    bad = MUTANTS["tsubame-plan-after-sampling"]
    case = tsubame_mutant_case()
    assert coins_needed(case.scheme_as(TsubameScheme)) == 2 * (1 + 1) + 1 <= layout_for(case.scheme).n_coins
    g = torch.Generator().manual_seed(0)
    with pytest.raises(CaseError, match=r"at T = 0\.5"):
        decode(TableTreeModel(case, T=0.5), [case.context], case.scheme, 2, generator=g, variant=bad)
    wide = Case(case.draft, case.target, TsubameScheme(3, 3, 3, 2, "iid", "rrsw"), (0,), 2, case.draft_sample)
    with pytest.raises(CaseError, match="coins per round"):
        decode(TableTreeModel(wide), [wide.context], wide.scheme, 2, generator=g, variant=bad)
