"""eagle-harness 0.1.3's sampled tree under the gate (docs/THIRD_PARTY.md, "eagle-harness").

Exact-law tests run everywhere; rows marked `served` run the package's `draw_children` / `reject_children`
in .venv-eagle-harness (skipped, with the make command, where it is not built); the verdict table is `slow`.
"""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from helpers import SERVED_CASE, decode_fails, gate_decoder, needs_env, row_gen, verdict_row

from rheo.decoders import decoders
from rheo.decoders.eagle_harness import exact_law, target_law
from rheo.decoders.eagle_harness.law import SampledTreeLaw, ordered_draws
from rheo.lossless.stats import seed_for
from rheo_ref.exact import tv
from rheo_ref.models import load_case

CASE = load_case(str(SERVED_CASE))
N_TOKENS = 3
NAME = "eagle-harness"
CONTROL = "control: residual reuses a coin"
served = needs_env(NAME)


def test_ordered_draws_are_plackett_luce():
    q = (F(1, 2), F(1, 4), F(1, 4), F(0))
    draws = dict(ordered_draws(q, 2))
    assert len(draws) == 6 and sum(draws.values()) == 1  # the zero entry is never drawn
    assert draws[(0, 1)] == F(1, 2) * F(1, 2) and draws[(1, 0)] == F(1, 4) * F(2, 3)


@pytest.mark.parametrize(
    ("children", "depth", "temperature"), [(1, 2, F(1)), (2, 2, F(1)), (3, 2, F(1)), (2, 3, F(1, 2))]
)
def test_sampled_tree_law_is_the_target_law(children, depth, temperature):
    """Recursive rejection without replacement, as written, is lossless at every position of 3 tokens."""
    law = SampledTreeLaw(CASE.target, CASE.draft, temperature=temperature, children=children, depth=depth)
    got = law.token_law(CASE.context, N_TOKENS)
    assert sum(got.values()) == 1
    assert tv(got, target_law(CASE, {"temperature": temperature}, N_TOKENS)) == 0


def enumerated_token_law(law: SampledTreeLaw, context: list[int], n: int) -> dict:
    """The law as it was first written: every ordered draw of a node's children (Plackett-Luce), each with
    its own merge of the accepted child's subtree law, uncut; composed over rounds like the walk's."""
    from rheo.decoders.eagle_harness.law import _above, _residual_draw
    from rheo.decoders.rounds import token_law, visible

    memo: dict = {}

    def node(ctx: tuple, level: int) -> dict:
        key = (law.visible(ctx), level)
        if key in memo:
            return memo[key]
        p, out = law.p_row(ctx), {}

        def add(sub: dict, head: tuple, w: F) -> None:
            for t, v in sub.items():
                out[head + t] = out.get(head + t, F(0)) + w * v

        if level == law.depth:
            add({(v,): x for v, x in enumerate(p) if x}, (), F(1))
        else:
            q0 = law.q_row(ctx)
            for ys, w in ordered_draws(q0, law.k):
                r, q, acc = list(p), list(q0), []
                for y in ys:
                    m, qm = sum(r, F(0)), sum(q, F(0))
                    cond = [x / qm for x in q] if qm else [F(0)] * len(q)
                    qy = cond[y]
                    a = F(0) if qy == 0 else (F(1) if r[y] > 0 else F(0)) if m * qy == 0 else min(F(1), r[y] / (m * qy))
                    acc.append(a)
                    r = [max(x - m * c, F(0)) for x, c in zip(r, cond)]
                    q[y] = F(0)
                none = F(1)
                for y, a in zip(ys, acc):
                    if none * a:
                        add(node(ctx + (y,), level + 1), (y,), w * none * a)
                    none *= 1 - a
                if none:
                    add(_above(r, acc[0]) if law.reuse and acc[0] < 1 else _residual_draw(r), (), w * none)
        memo[key] = out
        return out

    return token_law(lambda ctx, m: node(ctx, 0), context, n, label="enumerated", key=visible(law.p.context_length))


@pytest.mark.parametrize(
    ("children", "depth", "temperature", "reuse"),
    [
        (1, 2, F(1), False),
        (2, 2, F(1), False),
        (3, 2, F(1), False),
        (2, 3, F(1, 2), False),
        (1, 2, F(1), True),
        (2, 2, F(1), True),
        (4, 1, F(1), False),
    ],
)
def test_the_prefix_walk_is_the_enumerated_law(children, depth, temperature, reuse):
    """The lazy prefix walk equals the enumeration of every ordered draw, exactly, at every token count."""
    kw = {"temperature": temperature, "children": children, "depth": depth, "reuse_coin": reuse}
    for n in (1, 2, 4):
        walk = SampledTreeLaw(CASE.target, CASE.draft, **kw).token_law(CASE.context, n)
        assert walk == enumerated_token_law(SampledTreeLaw(CASE.target, CASE.draft, **kw), CASE.context, n)


def test_reused_coin_is_lossy():
    gen = row_gen(NAME, CONTROL)
    assert tv(exact_law(CASE, gen, N_TOKENS), target_law(CASE, gen, N_TOKENS)) == F(67, 2000)


@served
@pytest.mark.parametrize("setting", ["k=2 d=2 T=1", "k=2 d=3 T=1/2"])
def test_sampled_tree_passes(setting, request):
    """α = 1e-3, δ = 0.1 (power 0.99)."""
    r = gate_decoder(NAME, row_gen(NAME, setting), seed_for(request.node.nodeid), tv=0.1)
    assert r["exact_tv"] == "0" and r["verdict"] == "pass", r


@served
def test_negative_control_is_rejected(request):
    """α = 1e-3, δ = 0.03 (power 0.99, N ≈ 26,000: about 3 s); the control's exact TV is 0.0335."""
    r = gate_decoder(NAME, row_gen(NAME, CONTROL), seed_for(request.node.nodeid), tv=0.03)
    assert r["verdict"] == "REJECT", r


@served
def test_triton_walk_fails_in_the_interpreter():
    assert "mask has unsupported dtype" in decode_fails(NAME, {"walk": "triton"})


@pytest.mark.slow
@served
@pytest.mark.parametrize("setting", [r.setting for r in decoders()[NAME].table.rows])
def test_verdict_table(setting, request):
    """Each row on two seeds, δ = 0.1 (the control at 0.03), α = 1e-3 for the whole table (helpers.verdict_row)."""
    verdict_row(NAME, setting, request.node.nodeid, error="mask has unsupported dtype")


SPARSE = load_case(str(SERVED_CASE.parent / "served-sparse-draft.json"))


@pytest.mark.parametrize(
    "gen", [{"children": 3, "depth": 2}, {"children": 4, "depth": 2}, {"children": 2, "depth": 3, "temperature": 0.5}]
)
def test_a_draft_with_zeros_is_lossless_exactly(gen):
    """A drafter with zeros (each row's q > 0 on 1 or 2 tokens; p > 0 everywhere), more children than its support: the
    slots past the support are never accepted and the residual carries the tokens q never proposes; lossless in exact
    arithmetic, while the reused-coin control stays lossy on the same case."""
    assert tv(exact_law(SPARSE, gen, 3), target_law(SPARSE, gen, 3)) == 0
    assert tv(exact_law(SPARSE, {"children": 3, "depth": 2, "reuse_coin": True}, 3), target_law(SPARSE, {}, 3)) > 0


@pytest.mark.slow
@served
def test_slow_the_documented_zeros_row_command_runs_end_to_end(tmp_path, monkeypatch):
    """`rheo gate --decoder eagle-harness --rows 'k=3 d=2, q with zeros' --seeds 1,2`, as docs/THIRD_PARTY.md quotes it:
    pass on both seeds, exact TV 0."""
    import json

    from rheo.cli.main import main
    from rheo.decoders.served import REPO

    monkeypatch.chdir(REPO)
    out = tmp_path / "rows.json"
    assert (
        main(["gate", "--decoder", NAME, "--rows", "k=3 d=2, q with zeros", "--seeds", "1,2", "--json", str(out)]) == 0
    )
    (r,) = json.loads(out.read_text())
    assert (r["exact_tv"], r["verdicts"]) == ("0", ["pass", "pass"]), r
