"""eagle-harness 0.1.3's sampled tree (ordered draws without replacement, recursive rejection), its own
`draw_children` / `reject_children` run unmodified on tables (docs/THIRD_PARTY.md, "eagle-harness").
`driver` runs in .venv-eagle-harness; `law` is the exact law as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from rheo_ref.models import Case

from ..rows import Row, Table
from ..served import Served
from .law import SampledTreeLaw
from .law import target_law as _target

SUPPORTED = "==0.1.3"  # the releases this driver is known to drive (one: the pinned)
VERSION = "0.1.3"
WALK_ON_CPU = (
    "kernels/sampled_tree.py line 54 (`tl.load(QIDS + ..., mask=(c < C) & valid, other=0)`, in _walk): "
    "triton 3.9.0's interpreter raises InterpreterError(ValueError('mask has unsupported dtype')) at "
    "the first launch, whatever the inputs; compiled Triton on a GPU runs it"
)


def _temperature(gen: Mapping[str, Any]) -> Fraction:
    return Fraction(str(gen.get("temperature", 1)))


def exact_law(case: Case, gen: Mapping[str, Any], n: int) -> dict:
    law = SampledTreeLaw(
        case.target,
        case.draft,
        temperature=_temperature(gen),
        children=int(gen.get("children", 2)),
        depth=int(gen.get("depth", 2)),
        reuse_coin=bool(gen.get("reuse_coin", False)),
    )
    return law.token_law(case.context, n)


def target_law(case: Case, gen: Mapping[str, Any], n: int) -> dict:
    return _target(case.target, _temperature(gen), case.context, n)


def check(gen: Mapping[str, Any]) -> None:
    """Every setting parses (a bad value raises before the driver starts)."""
    _temperature(gen)
    int(gen.get("children", 2))
    int(gen.get("depth", 2))


DECODER = Served(
    "eagle-harness", "rheo.decoders.eagle_harness.driver", check=check, pin=VERSION, supported=SUPPORTED
).decoder(
    name="eagle-harness",
    summary="eagle-harness 0.1.3 sampled tree: draw_children + reject_children (core/sampled_tree.py),\n"
    "unmodified, in .venv-eagle-harness",
    package="eagle-harness",
    path="eagle_harness/core/sampled_tree.py",
    gen_keys=("temperature", "children", "depth", "reuse_coin", "walk"),
    gen_help="temperature (1/k), children (per node, default 2), depth (levels, default 2), walk=triton\n"
    "(the Triton tree walk), reuse_coin (the negative control: the residual reuses a child's coin)",
    exact_law=exact_law,
    target_law=target_law,
    order=90,
    table=Table(
        case="tests/cases/served.json",
        tokens=3,
        tv=0.1,
        rows=(
            Row("k=2 d=2 T=1", {"children": 2, "depth": 2}, "2 ordered children per node, 2 levels"),
            Row("k=3 d=2 T=1", {"children": 3, "depth": 2}, "3 children per node, 2 levels"),
            Row("k=2 d=3 T=1/2", {"children": 2, "depth": 3, "temperature": 0.5}, "2 children, 3 levels, T = 1/2"),
            Row(
                "k=3 d=2, q with zeros",
                {"children": 3, "depth": 2},
                "a drafter whose rows put q > 0 on 1 or 2 tokens (logits -inf elsewhere), 3 children a node: the "
                "slots past the support are drawn with q = 0 and never accepted (sampled_tree.py line 91: q_y > 0)",
                case="tests/cases/served-sparse-draft.json",
            ),
            Row(
                "Triton tree walk",
                {"children": 2, "depth": 2, "walk": "triton"},
                "kernels/sampled_tree.sample_tree",
                runs_here=WALK_ON_CPU,
            ),
            Row(
                "control: residual reuses a coin",
                {"children": 1, "depth": 2, "reuse_coin": True},
                "negative control: the residual draw reuses the first child's accept coin (reject_children "
                "documents its uniforms as independent of each other)",
                cause="core/sampled_tree.py lines 99-101: the residual's inverse CDF at a coin that is >= the "
                "first child's acceptance probability whenever it is used",
                control=True,
                tv=0.03,
            ),
        ),
    ),
)
