"""flashspec 0.3.1's `SpeculativeEngine` (rejection and typical variants) on TableLMs, unmodified
(docs/THIRD_PARTY.md, "flashspec"). `driver` runs in .venv-flashspec; `law` is the exact law as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from rheo_ref.models import Case
from rheo_ref.processing import check_ties

from ..rows import Row, Table
from ..served import Served
from .law import FlashSpecLaw, Setting, claimed_target_law

SUPPORTED = "==0.3.1"  # the releases this driver is known to drive (one: the pinned)
VERSION = "0.3.1"


def setting(gen: Mapping[str, Any]) -> Setting:
    return Setting(
        gamma=int(gen.get("gamma", 3)),
        temperature=Fraction(str(gen.get("temperature", 1))),
        top_p=Fraction(str(gen.get("top_p", 1))),
        variant=str(gen.get("variant", "rejection")),
    )


def exact_law(case: Case, gen: Mapping[str, Any], n: int) -> dict:
    return FlashSpecLaw(case.target, case.draft, setting(gen)).token_law(case.context, n)


def target_law(case: Case, gen: Mapping[str, Any], n: int) -> dict:
    """p at T, cut to top_k's k largest entries and top_p's nucleus (rejection variant), as a user asks."""
    k = gen.get("top_k")
    return claimed_target_law(
        case.target, setting(gen), case.context, n, top_k=None if k is None else int(k), ties=gen.get("ties")
    )


TOP_P_CAUSE = (
    "engine/speculative.py: SamplingConfig.top_p is read only at line 804 (typical_sample's typical_p); "
    "rejection_step (lines 1086-1090) and rejection_sample (line 790) get the untruncated target"
)


def check(gen: Mapping[str, Any]) -> None:
    """Every setting parses (a bad value raises before the driver starts)."""
    setting(gen)
    int(gen.get("batch", 1))
    if gen.get("top_k") is not None:
        int(gen["top_k"])
    check_ties(gen.get("ties"))


DECODER = Served("flashspec", "rheo.decoders.flashspec.driver", check=check, pin=VERSION, supported=SUPPORTED).decoder(
    name="flashspec",
    summary="flashspec 0.3.1 SpeculativeEngine.generate on TableLMs, unmodified, in .venv-flashspec",
    package="flashspec",
    path="flashspec/sampling/rejection.py",
    gen_keys=("gamma", "temperature", "top_p", "top_k", "variant", "batch", "ties"),
    gen_help="gamma (drafts a round, default 3), temperature (1/k), top_p, top_k (SamplingConfig), variant\n"
    "(rejection | typical: documented lossy), batch (1: rejection_step; more: the context loop),\n"
    "ties (all | low | high: who the claimed law keeps of entries tied at a top-k/top-p cut)",
    exact_law=exact_law,
    target_law=target_law,
    order=100,
    table=Table(
        case="tests/cases/served.json",
        tokens=3,
        tv=0.1,
        rows=(
            Row("rejection T=1, batch 1", {"gamma": 3}, "batch-1 fast path: rejection_step"),
            Row("rejection T=1/2, batch 1", {"gamma": 3, "temperature": 0.5}, "rejection_step, T = 1/2"),
            Row("rejection T=1, batch 64", {"gamma": 3, "batch": 64}, "context loop: rejection_sample"),
            Row(
                "rejection T=1, batch 1, q with zeros",
                {"gamma": 3},
                "a draft model whose rows put q > 0 on 1 or 2 tokens (TableLM logits -1e4 elsewhere: q underflows to "
                "0 in float32), where p > 0: the residual must carry those tokens",
                case="tests/cases/served-sparse-draft.json",
            ),
            Row(
                "rejection top_p=0.9, batch 64",
                {"gamma": 3, "top_p": 0.9, "batch": 64, "ties": "low"},  # the claim's nucleus: lower ids first
                "SamplingConfig(top_p=0.9), documented as the nucleus threshold",
                cause=TOP_P_CAUSE,
            ),
            Row(
                "rejection top_k=2, batch 64",
                {"gamma": 3, "top_k": 2, "batch": 64, "ties": "all"},  # the claim keeps every tied entry
                "SamplingConfig(top_k=2) is accepted without an error",
                cause="utils/config.py line 64, class SamplingConfig: no top_k field, and pydantic's default extra='ignore' "
                "drops the key silently; the engine samples the untruncated target",
            ),
            Row(
                "control: typical top_p=0.9",
                {"gamma": 3, "variant": "typical", "top_p": 0.9, "batch": 64},
                "negative control: variant='typical' (documented lossy), context loop",
                cause="sampling/typical.py: line 135 accepts any draft in the typical set (no coin), and the rejected "
                "position is drawn from p, not the residual (line 159)",
                control=True,
            ),
        ),
    ),
)
