"""Samples to convict each mutant of `rheo mutants`: the fixed gate against the sequential one.

For each algorithmic mutant on its gate case (`rheo.selfgate.matrix.mutant_case`) and each of
the gate's checks: the fixed gate draws N (planned at the check's α and δ, `samples_for`); the
sequential gate plans its last look at 0.9α and rejects, with probability ≥ 1 − β, by the first
look whose certified TV at its own level is ≤ the mutant's exact TV on that check
(`rheo.lossless.sequential.convicting_look`). The row gives the fewest over the checks. Both are
bounds from the certificates, no sample drawn. Run: `pytest -m bench tests/bench/test_sequential_convict.py -s`.
"""

from __future__ import annotations

import pytest

from rheo.lossless.sequential import convicting_look, final_alpha
from rheo.lossless.stats import samples_for


@pytest.mark.bench
def test_samples_to_convict_fixed_against_sequential():
    from rheo.selfgate.matrix import (
        BETA,
        CHECKS,
        DELTA,
        alpha_per_test,
        check_law_of,
        exact_tvs,
        gate_cases,
        mutant_case,
    )
    from rheo_ref.variants import MUTANTS

    alpha = alpha_per_test()
    rows = [
        "| mutant | case | exact TV (largest) | fixed N | sequential: convicted by | ratio |",
        "|---|---|---|---|---|---|",
    ]
    ratios = []
    for name in MUTANTS:
        try:
            gc = gate_cases()[mutant_case(name)]
        except Exception as e:  # a mutant with no gate case of its own: said, not hidden
            rows.append(f"| {name} | - | - | - | no gate case ({type(e).__name__}) | - |")
            continue
        tvs = exact_tvs(gc, name)
        fixed, seq = None, None
        for ch in CHECKS:
            if tvs[ch] < DELTA:
                continue  # the gate promises nothing below δ: neither form is counted there
            law = check_law_of(gc, ch)
            n = samples_for(law, DELTA, alpha, BETA)
            fixed = n if fixed is None else min(fixed, n)
            n_last = samples_for(law, DELTA, final_alpha(alpha), BETA)
            s = convicting_look(law, n_last, alpha, BETA, float(tvs[ch]))
            assert s is not None, (name, ch)  # the last look certifies δ ≤ the exact TV
            seq = s if seq is None else min(seq, s)
        if fixed is None:
            rows.append(f"| {name} | {gc.name} | {float(max(tvs.values())):.3g} | below δ | below δ | - |")
            continue
        ratios.append(seq / fixed)
        rows.append(
            f"| {name} | {gc.name} | {float(max(tvs.values())):.3g} | {fixed:,} | {seq:,} | {seq / fixed:.3f} |"
        )
        print(rows[-1], flush=True)
    print("\n".join(rows))
    assert ratios and max(ratios) <= 1.1  # a pass costs at most the 0.9α planning; a conviction usually far less
