# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # The seeds' tables on a real model: SmolLM2-135M + the EAGLE-style draft head
#
# **Question.** The Rheo paper reports, on 8B targets, a depth-1 acceptance of 80.0% (Top-K),
# 83.5% (Rheo + RRSw) and 85.4% (Rheo + OT) (Table 4), a support coverage of 91-94% at
# S = 128-1024 (Table 5), and τ curves against the rheostat m (Figure 3) and the temperature T
# (Figure 4). What do the same quantities look like on SmolLM2-135M with the head trainable on
# this CPU, and which differences can be told apart from noise? This notebook reads the JSON that
# `rheo paper-tables` wrote (`$RHEO_PAPER_JSON`, default `reports/paper_tables.json`) and plots it.

# %%
import json
import os
from pathlib import Path

import matplotlib

matplotlib.use(os.environ.get("MPLBACKEND", "Agg"))
import matplotlib.pyplot as plt

from rheo_ref.atomic import savefig_atomic

REPORTS = Path(os.environ.get("RHEO_REPORTS", "reports"))
SRC = Path(os.environ.get("RHEO_PAPER_JSON", "reports/paper_tables.json"))
res = json.loads(SRC.read_text())
t4, t5 = res["table4"], res["table5"]
REPORTS.mkdir(parents=True, exist_ok=True)

# %% [markdown]
# ## Table 4: exact acceptance per context, against the paper

# %%
names = {"topk": "Top-K", "rheo_rrsw": "Rheo + RRSw", "rheo_ot": "Rheo + OT"}
for k, name in names.items():
    r = t4[k]
    lo, hi = r["ci95"]
    print(f"{name:12s} {r['mean']:.4f} [{lo:.4f}, {hi:.4f}] over {r['n_contexts']} contexts (paper {r['paper']:.3f})")
d = t4["ot_minus_rrsw"]
print(f"OT - RRSw {d['mean']:+.4f} [{d['ci95'][0]:+.4f}, {d['ci95'][1]:+.4f}], separated: {d['separated']}")
print(f"OT < RRSw at {100 * t4['ot_below_rrsw_fraction']:.2f}% of the contexts")
fig, ax = plt.subplots(figsize=(6, 4))
xs = range(len(names))
ax.bar(xs, [t4[k]["mean"] for k in names], yerr=[[t4[k]["mean"] - t4[k]["ci95"][0] for k in names],
       [t4[k]["ci95"][1] - t4[k]["mean"] for k in names]], capsize=4, label="SmolLM2, exact per context")  # fmt: skip
ax.plot(xs, [t4[k]["paper"] for k in names], "k_", markersize=30, label="paper (Llama 8B, EAGLE-3)")
ax.set_xticks(list(xs), list(names.values()))
ax.set_ylabel("depth-1 acceptance")
ax.legend()
savefig_atomic(fig, REPORTS / "real_model_table4.png", dpi=100)

# %% [markdown]
# ## Table 5 and Figures 3/4

# %%
fig, ax = plt.subplots(1, 3, figsize=(14, 4))
ax[0].plot([str(r["S"]) for r in t5], [r["coverage"] for r in t5], "o-", label="coverage of q")
ax[0].plot([str(r["S"]) for r in t5], [r["acceptance"] for r in t5], "s-", label="acceptance (Rheo + OT)")
ax[0].set_xlabel("S")
ax[0].legend()
for a, key, field in ((ax[1], "ablation_m", "m"), (ax[2], "ablation_T", "T")):
    rows = res[key]["settings"]
    x = [r[field] for r in rows]
    a.errorbar(x, [r["diff"] for r in rows], yerr=[[r["diff"] - r["diff_ci95"][0] if r["diff_ci95"][0] == r["diff_ci95"][0] else 0 for r in rows],
               [r["diff_ci95"][1] - r["diff"] if r["diff_ci95"][1] == r["diff_ci95"][1] else 0 for r in rows]],
               fmt="o-", capsize=3, label="Δτ (Rao-Blackwellised, paired)")  # fmt: skip
    a.plot(x, [r["diff_plain"] for r in rows], "x--", label="Δτ (realised)")
    a.axhline(0, color="k", lw=0.5)
    a.set_xlabel(field)
    a.set_ylabel(f"τ - τ({field} = 1)")
    a.legend(fontsize=8)
    for r in rows:
        print(
            f"{field} = {r[field]}: τ {r['tau']:.3f}, Δ {r['diff']:+.3f} {r['diff_ci95']}, separated: {r['separated']}"
        )
fig.tight_layout()
savefig_atomic(fig, REPORTS / "real_model_ablations.png", dpi=100)

# %% [markdown]
# ## Answer

# %%
rb = res["rb_variance_ratio"]
dr = res["drafting_ratio_rheo_topk"]
summary = {
    "table4": {k: t4[k]["mean"] for k in names},
    "ot_below_rrsw_fraction": t4["ot_below_rrsw_fraction"],
    "rb_variance_ratio": rb["per_round"],
    "drafting_ratio": dr["ratio"],
    "separated_m": [r["m"] for r in res["ablation_m"]["settings"] if r["separated"]],
    "separated_T": [r["T"] for r in res["ablation_T"]["settings"] if r["separated"]],
}
(REPORTS / "real_model.json").write_text(json.dumps(summary, indent=1))
print(f"Rao-Blackwellised / realised per-round variance: {rb['per_round']:.3f}")
print(f"drafting per round, Rheo / Top-K: {dr['ratio']:.3f} (paper {dr['paper']:.3f})")
print("separated from the reference: m", summary["separated_m"], "T", summary["separated_T"])
