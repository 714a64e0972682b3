# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Proxy choices: what the sampled slot's ranking factor does to exactness and to τ
#
# **Question.** The sampled child of an expansion needs a ranking factor (its *proxy*) before its
# token is known to the ranking. RheoSampling uses `min(q(x_m), z)` (`rheo`). What happens with
# the ad-hoc alternatives, the token's own probability (`true`), a constant (`const:a`) or a
# rescaled rheo proxy (`scaled:s`)? We measure, exactly on small table models: the total-variation
# distance between the decoded law of the first two tokens and the target law (0 means
# lossless), the expected tokens per round τ, and the survival bias of the root's sampled token
# (TV between its law given that it survives the rerank and q̃).

# %%
import json
import os
import random
from fractions import Fraction
from pathlib import Path

import matplotlib

matplotlib.use(os.environ.get("MPLBACKEND", "Agg"))
import matplotlib.pyplot as plt

from proofs.gen import random_pair
from proofs.survival import CE_RRSW_LARGE_PROXY, sampled_law_given_kept
from rheo.sweep import run
from rheo_ref.atomic import savefig_atomic, write_text_atomic
from rheo_ref.errors import CaseError
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.slots import expand
from rheo_ref.grid import GridCell
from rheo_ref.models import Case, Proxy

REPORTS = Path(os.environ.get("RHEO_REPORTS", "reports"))
REPORTS.mkdir(parents=True, exist_ok=True)
N_TOKENS = 2

rng = random.Random(2026)
TABLES = [random_pair(rng, 4, 1, style=s) for s in ("close", "zipf", "uniform")]
BASE = dict(K=3, m=1, W=2, D=2, R=4)


def case_for(i, proxy="rheo", verify="rheo", **changes):
    q, p = TABLES[i]
    s = dict(BASE, **changes)
    return Case(q, p, Scheme(s["K"], s["m"], s["W"], s["D"], s["R"], Proxy.parse(proxy), verify), (0,), N_TOKENS)


def sweep_tv_tau(cases):
    """(exact TV of the case's token law to the target, exact τ) per case, by `rheo sweep`'s runner
    on local processes; (None, None) where the case is refused (scaled:s with s × rheo > 1)."""
    rows = run([GridCell(case) for case in cases])
    return [(None, None) if r["error"] else (Fraction(r["tv"]), Fraction(r["tau"])) for r in rows]


def survival_bias(case):
    """TV between the law of the root's sampled token given that it is kept, and q̃ (None if never kept)."""
    law, kept = sampled_law_given_kept(case)
    if kept == 0:
        return None, kept
    ctx = case.context
    plan = expand(case.draft.row(ctx), case.q_samp_model.row(ctx), case.scheme.K, case.scheme.m, case.scheme.proxy)
    qt = plan.qtilde
    return sum(abs(law.get(t, Fraction(0)) - qt[t]) for t in range(len(qt))) / 2, kept


# %% [markdown]
# ## TV and τ across proxy rules, K = 3, m = 1, W = 2, D = 2, R = 4, both verification orders

# %%
CONSTS = [Fraction(1, 16), Fraction(1, 8), Fraction(1, 4), Fraction(3, 8), Fraction(1, 2), Fraction(3, 4), Fraction(1)]
SCALES = [
    Fraction(1, 8),
    Fraction(1, 4),
    Fraction(1, 2),
    Fraction(3, 4),
    Fraction(1),
    Fraction(5, 4),
    Fraction(3, 2),
    Fraction(2),
]
ORDERS = ("rheo", "rrsw")

PROXIES = ["rheo", "true"] + [f"const:{a}" for a in CONSTS] + [f"scaled:{s}" for s in SCALES]
GRID = [(i, order, proxy) for i in range(len(TABLES)) for order in ORDERS for proxy in PROXIES]
rows = []
for (i, order, proxy), (d, t) in zip(GRID, sweep_tv_tau([case_for(i, proxy, order) for i, order, proxy in GRID])):
    rows.append({"table": i, "order": order, "proxy": proxy, "tv": d, "tau": t})
    if d is not None:  # None: scaled:s with s * rheo > 1 is not a valid factor
        print(f"table {i} {order:4}  {proxy:12}  TV {d!s:>18} = {float(d):.4f}   tau {float(t):.4f}")


# Claim 3.rrsw's case (proofs.survival): where a proxy above q(x_m) breaks RRSw.
CE = Case.from_json(CE_RRSW_LARGE_PROXY)  # one token
CE_GRID = [(order, a) for order in ORDERS for a in CONSTS]
CE_ROWS = {
    k: d for k, (d, _) in zip(CE_GRID, sweep_tv_tau([CE.with_scheme(proxy=f"const:{a}", verify=o) for o, a in CE_GRID]))
}
for order in ORDERS:
    print(
        f"claim 3.rrsw case, {order:4}: TV by const:a", {str(a): str(d) for (o, a), d in CE_ROWS.items() if o == order}
    )


def value(i, order, proxy, key):
    return next(r[key] for r in rows if r["table"] == i and r["order"] == order and r["proxy"] == proxy)


# %%
fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
for i in range(len(TABLES)):
    for order, style in zip(ORDERS, ("o-", "x--")):
        pts = [(float(s), value(i, order, f"scaled:{s}", "tv"), value(i, order, f"scaled:{s}", "tau")) for s in SCALES]
        pts = [pt for pt in pts if pt[1] is not None]
        axes[0].plot(
            [x for x, _, _ in pts], [float(d) for _, d, _ in pts], style, color=f"C{i}", label=f"table {i}, {order}"
        )
        axes[2].plot(
            [x for x, _, _ in pts], [float(t) for _, _, t in pts], style, color=f"C{i}", label=f"table {i}, {order}"
        )
        axes[1].plot(
            [float(a) for a in CONSTS],
            [float(value(i, order, f"const:{a}", "tv")) for a in CONSTS],
            style,
            color=f"C{i}",
            label=f"table {i}, {order}",
        )
for order, style in zip(ORDERS, ("o-", "x--")):
    axes[1].plot(
        [float(a) for a in CONSTS],
        [float(CE_ROWS[(order, a)]) for a in CONSTS],
        style,
        color="k",
        label=f"claim 3.rrsw case, {order}",
    )
for ax in (axes[0], axes[2]):
    ax.axvline(1, color="grey", ls=":", lw=0.8)
axes[0].set(xlabel="s in scaled:s (s = 1 is rheo)", ylabel="exact TV to target (2 tokens)", title="TV vs proxy scale")
axes[1].set(xlabel="a in const:a", ylabel="exact TV to target (2 tokens)", title="TV vs constant proxy")
axes[2].set(xlabel="s in scaled:s", ylabel="exact τ", title="τ vs proxy scale")
axes[0].legend(fontsize=7)
axes[1].legend(fontsize=7)
fig.tight_layout()
savefig_atomic(fig, REPORTS / "proxy_tv_vs_scale.png", dpi=110)

# %% [markdown]
# ## τ vs m (rheo proxy, the same trees), and the survival bias per proxy

# %%
M_VALUES = range(BASE["K"] + 1)
by_m = iter(sweep_tv_tau([case_for(i, "rheo", m=m) for i in range(len(TABLES)) for m in M_VALUES]))
TAU_M = {i: [next(by_m) for _ in M_VALUES] for i in range(len(TABLES))}
for i in range(len(TABLES)):
    print(f"table {i}: tau vs m =", [f"{float(t):.4f}" for _, t in TAU_M[i]], " TV:", [str(d) for d, _ in TAU_M[i]])

fig, ax = plt.subplots(figsize=(5, 3.6))
for i in range(len(TABLES)):
    ax.plot(range(BASE["K"] + 1), [float(t) for _, t in TAU_M[i]], "o-", label=f"table {i}")
ax.set(xlabel="m (m = K: plain Top-K)", ylabel="exact τ (tokens per round)", title="τ vs m, K=3, W=2, D=2, R=4")
ax.legend()
fig.tight_layout()
savefig_atomic(fig, REPORTS / "proxy_tau_vs_m.png", dpi=110)

# %%
BIAS_PROXIES = ["rheo", "true", "const:1/8", "const:1/4", "scaled:1/4", "scaled:1/2", "scaled:3/2"]
BIAS = {}
for proxy in BIAS_PROXIES:
    vals = []
    for i in range(len(TABLES)):
        try:
            vals.append(survival_bias(case_for(i, proxy, D=1, R=2)))
        except CaseError:
            vals.append((None, None))
    BIAS[proxy] = vals
    print(f"{proxy:12}", [(None if b is None else str(b), None if k is None else str(k)) for b, k in vals])

fig, ax = plt.subplots(figsize=(7, 3.6))
width = 0.8 / len(TABLES)
for i in range(len(TABLES)):
    xs = [j + i * width for j in range(len(BIAS_PROXIES))]
    ax.bar(xs, [float(BIAS[p][i][0] or 0) for p in BIAS_PROXIES], width, label=f"table {i}")
    for x, p in zip(xs, BIAS_PROXIES):
        if BIAS[p][i][0] is None:  # the sampled child never survives: no conditional law
            ax.text(x, 0.01, "never kept", rotation=90, ha="center", va="bottom", fontsize=7)
ax.set_xticks([j + width for j in range(len(BIAS_PROXIES))], BIAS_PROXIES, rotation=20)
ax.set(ylabel="TV(law of Y | Y kept, q̃)", title="survival bias of the sampled token, K=3, m=1, R=2, depth 1")
ax.legend()
fig.tight_layout()
savefig_atomic(fig, REPORTS / "proxy_survival_bias.png", dpi=110)

# %%
key = lambda r: f"{r['table']}|{r['order']}|{r['proxy']}"
summary = {
    "tv": {key(r): (None if r["tv"] is None else str(r["tv"])) for r in rows},
    "tau": {key(r): (None if r["tau"] is None else str(r["tau"])) for r in rows},
    "tau_vs_m": {str(i): [str(t) for _, t in TAU_M[i]] for i in TAU_M},
    "tv_vs_m": {str(i): [str(d) for d, _ in TAU_M[i]] for i in TAU_M},
    "bias": {p: [None if b is None else str(b) for b, _ in v] for p, v in BIAS.items()},
}
write_text_atomic(REPORTS / "proxy_choices.json", json.dumps(summary, indent=1))


def lossy(pred):
    sel = [r for r in rows if pred(r) and r["tv"] is not None]
    return sum(1 for r in sel if r["tv"]), len(sel)


big = lambda r: (
    r["proxy"] in ("const:1/2", "const:3/4", "const:1") or r["proxy"] in ("scaled:5/4", "scaled:3/2", "scaled:2")
)
small = lambda r: (
    r["proxy"] in ("const:1/16", "const:1/8", "const:1/4", "scaled:1/8", "scaled:1/4", "scaled:1/2", "scaled:3/4")
)
FACTS = {
    "rheo lossless (both orders)": lossy(lambda r: r["proxy"] in ("rheo", "scaled:1")),
    "true": lossy(lambda r: r["proxy"] == "true"),
    "large proxies (>= 1/2 or s > 1), OT order": lossy(lambda r: big(r) and r["order"] == "rheo"),
    "large proxies (>= 1/2 or s > 1), RRSw order": lossy(lambda r: big(r) and r["order"] == "rrsw"),
    "const:a >= 1/2 on claim 3.rrsw's case, OT": (
        sum(1 for (o, a), d in CE_ROWS.items() if o == "rheo" and a >= Fraction(1, 2) and d),
        sum(1 for (o, a) in CE_ROWS if o == "rheo" and a >= Fraction(1, 2)),
    ),
    "const:a >= 1/2 on claim 3.rrsw's case, RRSw": (
        sum(1 for (o, a), d in CE_ROWS.items() if o == "rrsw" and a >= Fraction(1, 2) and d),
        sum(1 for (o, a) in CE_ROWS if o == "rrsw" and a >= Fraction(1, 2)),
    ),
    "small proxies, either order": lossy(small),
}
for k, (bad, n) in FACTS.items():
    print(f"{k:45} lossy in {bad}/{n} settings")
best = {i: max(range(len(TAU_M[i])), key=lambda m: TAU_M[i][m][1]) for i in TAU_M}
print("tau-best m per table:", best)

# The answer below quotes these facts; the notebook fails if they stop holding.
assert FACTS["rheo lossless (both orders)"][0] == 0
assert all(d == 0 for i in TAU_M for d, _ in TAU_M[i])
assert FACTS["true"][0] > 0
assert FACTS["large proxies (>= 1/2 or s > 1), OT order"][0] == 0
assert FACTS["const:a >= 1/2 on claim 3.rrsw's case, OT"][0] == 0
assert FACTS["const:a >= 1/2 on claim 3.rrsw's case, RRSw"][0] > 0
assert all(b == 0 for b, _ in BIAS["rheo"]) and any(b for b, _ in BIAS["true"])

# %% [markdown]
# ## Answer
#
# The rheo proxy is lossless in every setting here, in both verification orders (TV exactly 0,
# every table, every m), and the root's sampled token, given that it survives, has exactly the
# law q̃. The `true` proxy is off the target on some tables: a token's survival then depends on its
# own probability, as in the seeds' Table 1. What the other rules show is which half of the
# ranking lemma does the work. A proxy that can fall below q(x_{m+1}) (small constants, scales
# below 1) lets a fill, whose identity depends on y, outrank the sampled child exactly when y did
# not take its place, so survival selects y; such settings are lossy when the budget cuts between
# them (and exact again when the proxy is so small that the sampled child never survives). A
# proxy above q(x_m) (large constants, scales above 1) keeps the sampled child ahead of its fills
# and stays exact in the OT order, where nothing at its level is verified before it, but can be
# lossy with RRSw: the sampled child's own subtree can then outrank, and evict, the top-m siblings
# that RRSw verifies before it, so which point masses precede y depends on y (the hypothesis of
# claim 2 fails). The three random tables happen not to show it (the printout counts), claim
# 3.rrsw's case does (black lines). The upper bound q(x_m) is what RRSw needs; the lower bound is what both need. Larger
# lossless proxies also raise τ here (right panel): ranking the sampled child higher keeps more of
# its subtree. On these small random tables τ decreases with m (m = 0 is best), unlike the paper's
# LLM measurements where m = 1 wins.
