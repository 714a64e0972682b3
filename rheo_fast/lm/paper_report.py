"""Summaries, intervals, the markdown report and the plots of `rheo paper-tables`.

Intervals (all 95%):
- Tables 4/5: contexts of one prompt share a continuation, so they are not independent. The mean
  over contexts gets a cluster-robust interval with the prompts as clusters: mean ± t_{G-1} · SE,
  SE² = G/(G-1) · Σ_g (Σ_{i in g} (x_i - mean))² / n² (G prompts, n contexts). Differences between
  two rates (OT - RRSw, ...) are taken per context first (paired), then the same interval.
- Figures 3/4: τ per prompt = mean round length over that prompt's rounds (realised, or its exact
  expectation given the tree: Rao–Blackwellised). Differences to the reference setting (m = 1, or
  T = 1) per prompt (same prompt, same per-round coins), then a Student t interval over prompts.
  A difference is *separated* when its interval excludes 0.
A value that cannot be computed (an interval of one prompt, a ratio of zero variances) is a NaN
carrying its reason (`rheo_ref.strict_json.undefined`): `nan` in the markdown, null with the
reason beside it in the JSON.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rheo_ref.strict_json import undefined

PAPER_TABLE4 = {"topk": 0.800, "rheo_rrsw": 0.835, "rheo_ot": 0.854}
PAPER_COVERAGE = {"128": 0.910, "256": 0.918, "512": 0.922, "1024": 0.941, "full": 1.0}
PAPER_DRAFT_MS = {"rheo": 13.1, "topk": 12.9}
KEYS = ("table4", "table5", "ablation_m", "ablation_T", "rb_variance_ratio", "drafting_ratio_rheo_topk")


def _tq(df: int) -> float:
    from scipy.stats import t

    return float(t.ppf(0.975, df))


def cluster_ci(groups: list[list[float]]) -> dict[str, Any]:
    """Mean over all values and its cluster-robust 95% interval (clusters: the groups)."""
    xs = [x for g in groups for x in g]
    n, G = len(xs), len([g for g in groups if g])
    mean = sum(xs) / n if n else undefined("no values")
    if G < 2:
        no = undefined(f"{G} prompt(s) with values: an interval needs two")
        return {"mean": mean, "ci95": [no, no], "n_contexts": n}
    ss = sum(sum(x - mean for x in g) ** 2 for g in groups if g)
    se = math.sqrt(G / (G - 1) * ss) / n
    h = _tq(G - 1) * se
    return {"mean": mean, "ci95": [mean - h, mean + h], "n_contexts": n}


def t_interval(xs: list[float], level: float = 0.95) -> tuple[float, float, float]:
    """(low, mean, high): the two-sided Student t interval of the mean of xs (per-prompt τ),
    mean ± t_{(1+level)/2, n-1} · s / √n; NaN bounds for fewer than two values."""
    from scipy.stats import t

    n = len(xs)
    mean = sum(xs) / n if n else undefined("no values")
    if n < 2:
        no = undefined(f"{n} value(s): an interval needs two")
        return no, mean, no
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    h = float(t.ppf((1 + level) / 2, n - 1)) * sd / math.sqrt(n)
    return mean - h, mean, mean + h


def t_ci(xs: list[float]) -> tuple[float, list[float]]:
    """Mean and Student t 95% interval over xs (NaN bounds below two values): `t_interval`."""
    lo, mean, hi = t_interval(xs)
    return mean, [lo, hi]


def _var(xs: list[float]) -> float:
    n = len(xs)
    if n < 2:
        return undefined(f"{n} value(s): a variance needs two")
    mu = sum(xs) / n
    return sum((x - mu) ** 2 for x in xs) / (n - 1)


def separated(ci: list[float]) -> bool:
    return bool(ci[0] > 0 or ci[1] < 0)


def summarise_tables(units: list[dict], cfg: Any) -> tuple[dict, list]:
    rows = [u["rows"] for u in units]
    t4: dict[str, Any] = {k: {**cluster_ci([r[k] for r in rows]), "paper": PAPER_TABLE4[k]} for k in PAPER_TABLE4}
    n = sum(len(r["rheo_ot"]) for r in rows)
    below = [[float(a < b - 1e-12) for a, b in zip(r["rheo_ot"], r["rheo_rrsw"])] for r in rows]
    t4["ot_below_rrsw_fraction"] = sum(map(sum, below)) / n if n else undefined("no contexts")
    t4["ot_below_rrsw_count"] = int(sum(map(sum, below)))
    for name, a, b in (("ot_minus_rrsw", "rheo_ot", "rheo_rrsw"), ("rrsw_minus_topk", "rheo_rrsw", "topk")):
        d = cluster_ci([[x - y for x, y in zip(r[a], r[b])] for r in rows])
        t4[name] = {**d, "separated": separated(d["ci95"])}
    t4["per_set"] = {
        s: {k: cluster_ci([u["rows"][k] for u in units if u["set"] == s])["mean"] for k in PAPER_TABLE4}
        for s in sorted({u["set"] for u in units})
    }
    ces = [dict(c, set=u["set"], id=u["id"]) for u in units for c in u["top"]]
    t4["counterexamples"] = {
        "largest_gap": max(ces, key=lambda c: c["rrsw"] - c["ot"], default=None),
        "smallest_gap": min(ces, key=lambda c: c["rrsw"] - c["ot"], default=None),
    }
    tokens = sum(u["context_tokens"] for u in units)
    t4["cost"] = {
        "target_forwards": sum(u["target_forwards"] for u in units),
        "context_tokens": tokens,
        "target_forwards_per_256_context_tokens": 256 * sum(u["target_forwards"] for u in units) / max(tokens, 1),
        "seconds": {k: sum(u["seconds"][k] for u in units) for k in ("sample", "forward", "exact_rates")},
        "exact_check_max_abs": max((u["exact_check_max_abs"] for u in units), default=0.0),
        "exact_checked": sum(u["exact_checked"] for u in units),
    }
    names = [str(s) for s in cfg.supports] + ["full"]
    t5 = []
    for s in names:
        cov = cluster_ci([r[f"coverage_{s}"] for r in rows])
        acc = cluster_ci([r[f"accept_{s}"] for r in rows])
        t5.append(
            {
                "S": s if s == "full" else int(s),
                "coverage": cov["mean"],
                "coverage_ci95": cov["ci95"],
                "acceptance": acc["mean"],
                "acceptance_ci95": acc["ci95"],
                "paper_coverage": PAPER_COVERAGE.get(s),
            }
        )
    return t4, t5


def _per_prompt(units: list[dict], key: str) -> dict[tuple, float]:
    return {(u["set"], u["id"]): sum(u[key]) / max(u["rounds"], 1) for u in units}


def ablation(units: list[dict], field: str, values: list, ref: Any, fixed: tuple[str, Any]) -> tuple[dict, dict]:
    """One ablation: per setting τ (realised and RB), paired differences to the reference."""
    sel = [u for u in units if u[fixed[0]] == fixed[1]]
    by = {v: [u for u in sel if u[field] == v] for v in values}
    ref_plain, ref_rb = _per_prompt(by[ref], "emitted"), _per_prompt(by[ref], "expected")
    out, var = [], {}
    for v in values:
        plain, rb = _per_prompt(by[v], "emitted"), _per_prompt(by[v], "expected")
        common = sorted(set(plain) & set(ref_plain))
        tau, tau_ci = t_ci(list(rb.values()))
        tau_p, tau_p_ci = t_ci(list(plain.values()))
        d_rb = [rb[k] - ref_rb[k] for k in common]
        d_pl = [plain[k] - ref_plain[k] for k in common]
        dm, dci = t_ci(d_rb)
        dpm, dpci = t_ci(d_pl)
        e = [x for u in by[v] for x in u["emitted"]]
        x = [x for u in by[v] for x in u["expected"]]
        var[f"{field}={v}"] = {
            "per_round": _var(x) / _var(e)
            if _var(e) > 0
            else undefined("the realised round lengths do not vary (or fewer than two rounds): no variance ratio"),
            "rounds": len(e),
            "paired_diff": (_var(d_rb) / _var(d_pl)) if v != ref and _var(d_pl) > 0 else None,
        }
        out.append(
            {
                field: v,
                "tau": tau,
                "tau_ci95": tau_ci,
                "tau_plain": tau_p,
                "tau_plain_ci95": tau_p_ci,
                "diff": dm,
                "diff_ci95": dci,
                "diff_plain": dpm,
                "diff_plain_ci95": dpci,
                "separated": v != ref and separated(dci),
                "separated_plain": v != ref and separated(dpci),
                "n_prompts": len(common),
            }
        )
    return {"reference": ref, "fixed": dict([fixed]), "settings": out}, var


def summarise(results: dict[str, list[dict]], cfg: Any, *, head_meta: dict | None = None) -> dict[str, Any]:
    """The JSON of `rheo paper-tables` (top-level keys: KEYS)."""
    t4, t5 = summarise_tables(results["table"], cfg)
    abl = results["abl"]
    am, var_m = ablation(abl, "m", list(cfg.ms), 1, ("T", 1.0))
    at, var_t = ablation(abl, "T", list(cfg.temps), 1.0, ("m", 1))
    am["K"] = cfg.K
    var = {**var_m, **var_t}
    e = sum(sum(u["emitted"]) for u in abl)
    x = sum(sum(u["expected"]) for u in abl)
    num = sum(v["per_round"] * v["rounds"] for v in var.values() if not math.isnan(v["per_round"]))
    den = sum(v["rounds"] for v in var.values() if not math.isnan(v["per_round"]))
    diffs = [
        v["paired_diff"] for v in var.values() if v["paired_diff"] is not None and not math.isnan(v["paired_diff"])
    ]
    per_round_gap = [[a - b for a, b in zip(u["expected"], u["emitted"])] for u in abl]
    rb = {
        "per_round": num / den if den else undefined("no setting has a variance ratio"),
        "paired_diff_mean": sum(diffs) / len(diffs) if diffs else undefined("no paired differences"),
        "by_setting": var,
        "mean_rb_minus_plain_per_round": cluster_ci(per_round_gap),
        "mean_plain_per_round": e / max(sum(u["rounds"] for u in abl), 1),
        "mean_rb_per_round": x / max(sum(u["rounds"] for u in abl), 1),
        "cost_ratio": sum(sum(u["expected_s"]) for u in abl) / max(sum(sum(u["round_s"]) for u in abl), 1e-12),
    }
    rheo = {(u["set"], u["id"]): u for u in abl if u["m"] == 1 and u["T"] == 1.0}
    topk = {(u["set"], u["id"]): u for u in abl if u["m"] == cfg.K and u["T"] == 1.0}
    common = sorted(set(rheo) & set(topk))
    ms = lambda u: 1000 * sum(u["draft_s"]) / max(u["rounds"], 1)
    r_ms = sum(sum(rheo[k]["draft_s"]) for k in common) / max(sum(rheo[k]["rounds"] for k in common), 1) * 1000
    k_ms = sum(sum(topk[k]["draft_s"]) for k in common) / max(sum(topk[k]["rounds"] for k in common), 1) * 1000
    logs = [math.log(ms(rheo[k]) / ms(topk[k])) for k in common if ms(topk[k]) > 0 and ms(rheo[k]) > 0]
    lm, lci = t_ci(logs)
    drafting = {
        "ratio": r_ms / k_ms if k_ms else undefined("no top-K drafting time on common prompts"),
        "ci95": [math.exp(c) if not math.isnan(c) else c for c in lci],
        "rheo_ms_per_round": r_ms,
        "topk_ms_per_round": k_ms,
        "paper": PAPER_DRAFT_MS["rheo"] / PAPER_DRAFT_MS["topk"],
        "paper_ms": PAPER_DRAFT_MS,
        "n_prompts": len(common),
    }
    if head_meta:
        t4["draft_head"] = {k: head_meta.get(k) for k in ("overlap", "train_seconds", "config") if k in head_meta}
    return {
        "table4": t4,
        "table5": t5,
        "ablation_m": am,
        "ablation_T": at,
        "rb_variance_ratio": rb,
        "drafting_ratio_rheo_topk": drafting,
    }


def _ci(c: list[float]) -> str:
    return f"[{c[0]:.3f}, {c[1]:.3f}]"


def markdown(res: dict[str, Any]) -> str:
    t4, t5 = res["table4"], res["table5"]
    out = ["# The seeds' tables on SmolLM2-135M + the draft head (`rheo paper-tables`)", ""]
    out += ["## Table 4: exact depth-1 acceptance (K = 3: top-1, sampled-1, top-1 of the rest), T = 1", ""]
    out += ["| method | mean | 95% interval (prompts as clusters) | contexts | paper |", "|---|---|---|---|---|"]
    for k, name in (("topk", "Top-K (vanilla)"), ("rheo_rrsw", "Rheo + RRSw"), ("rheo_ot", "Rheo + OT")):
        r = t4[k]
        out.append(f"| {name} | {r['mean']:.4f} | {_ci(r['ci95'])} | {r['n_contexts']} | {r['paper']:.3f} |")
    out.append("")
    for k in ("ot_minus_rrsw", "rrsw_minus_topk"):
        r = t4[k]
        sep = "separated" if r["separated"] else "not separated"
        out.append(f"- {k}: {r['mean']:+.4f} {_ci(r['ci95'])} ({sep})")
    out.append(
        f"- OT < RRSw at {t4['ot_below_rrsw_count']} of {t4['topk']['n_contexts']} contexts "
        f"({100 * t4['ot_below_rrsw_fraction']:.2f}%)"
    )
    c = t4["cost"]
    out.append(
        f"- cost: {c['target_forwards']} teacher-forced target forwards over {c['context_tokens']} context tokens "
        f"= {c['target_forwards_per_256_context_tokens']:.3f} per 256; float64 vs rheo_ref exact on "
        f"{c['exact_checked']} contexts: max |Δ| = {c['exact_check_max_abs']:.1e}"
    )
    out += ["", "## Table 5: coverage of q by its top-S ids and exact one-level acceptance (Rheo + OT)", ""]
    out += ["| S | coverage | 95% | acceptance | 95% | paper coverage |", "|---|---|---|---|---|---|"]
    for r in t5:
        pc = "" if r["paper_coverage"] is None else f"{r['paper_coverage']:.3f}"
        out.append(
            f"| {r['S']} | {r['coverage']:.4f} | {_ci(r['coverage_ci95'])} | {r['acceptance']:.4f} | "
            f"{_ci(r['acceptance_ci95'])} | {pc} |"
        )
    for key, field, ref in (("ablation_m", "m", "m = 1"), ("ablation_T", "T", "T = 1")):
        a = res[key]
        out += ["", f"## {'Figure 3: τ against m (T = 1)' if field == 'm' else 'Figure 4: τ against T (m = 1)'}", ""]
        out += [
            f"| {field} | τ (RB) | 95% | τ (plain) | Δ to {ref} (RB) | paired 95% | Δ (plain) | paired 95% | separated |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in a["settings"]:
            out.append(
                f"| {r[field]} | {r['tau']:.3f} | {_ci(r['tau_ci95'])} | {r['tau_plain']:.3f} | {r['diff']:+.3f} | "
                f"{_ci(r['diff_ci95'])} | {r['diff_plain']:+.3f} | {_ci(r['diff_plain_ci95'])} | "
                f"{'yes' if r['separated'] else 'no'} |"
            )
    rb, d = res["rb_variance_ratio"], res["drafting_ratio_rheo_topk"]
    g = rb["mean_rb_minus_plain_per_round"]
    out += [
        "",
        "## Variance and cost",
        "",
        f"- Rao–Blackwellised / plain per-round variance: {rb['per_round']:.3f}; of the paired per-prompt "
        f"differences: {rb['paired_diff_mean']:.3f}",
        f"- same mean: RB - realised per round {g['mean']:+.4f} {_ci(g['ci95'])} over {g['n_contexts']} rounds",
        f"- the exact expectation costs {100 * rb['cost_ratio']:.2f}% of a round",
        f"- drafting per round, Rheo (m = 1) / Top-K: {d['ratio']:.3f} {_ci(d['ci95'])} "
        f"({d['rheo_ms_per_round']:.1f} vs {d['topk_ms_per_round']:.1f} ms; paper {d['paper']:.3f})",
    ]
    return "\n".join(out) + "\n"


def plot(res: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rheo_ref.atomic import savefig_atomic

    fig, ax = plt.subplots(2, 2, figsize=(11, 8))
    t4 = res["table4"]
    names = ["topk", "rheo_rrsw", "rheo_ot"]
    means = [t4[k]["mean"] for k in names]
    err = [[t4[k]["mean"] - t4[k]["ci95"][0] for k in names], [t4[k]["ci95"][1] - t4[k]["mean"] for k in names]]
    a = ax[0, 0]
    a.bar(range(3), means, yerr=err, capsize=4, label="SmolLM2 (exact per context)")
    a.plot(range(3), [t4[k]["paper"] for k in names], "k_", markersize=30, label="paper")
    a.set_xticks(range(3), ["Top-K", "Rheo+RRSw", "Rheo+OT"])
    a.set_ylabel("depth-1 acceptance")
    a.set_title("Table 4")
    a.legend(fontsize=8)
    t5 = res["table5"]
    a = ax[0, 1]
    xs = range(len(t5))
    a.plot(xs, [r["coverage"] for r in t5], "o-", label="coverage of q")
    a.plot(xs, [r["acceptance"] for r in t5], "s-", label="acceptance (Rheo+OT)")
    a.set_xticks(list(xs), [str(r["S"]) for r in t5])
    a.set_xlabel("support S")
    a.set_title("Table 5")
    a.legend(fontsize=8)
    for a, key, field in ((ax[1, 0], "ablation_m", "m"), (ax[1, 1], "ablation_T", "T")):
        rows = res[key]["settings"]
        x = [r[field] for r in rows]
        a.errorbar(
            x, [r["tau"] for r in rows], yerr=_yerr(rows, "tau", "tau_ci95"), fmt="o-", capsize=3, label="τ (RB)"
        )
        a.plot(x, [r["tau_plain"] for r in rows], "x--", label="τ (plain)")
        b = a.twinx()
        b.errorbar(x, [r["diff"] for r in rows], yerr=_yerr(rows, "diff", "diff_ci95"), fmt="s:", color="C3", capsize=3)
        b.axhline(0, color="C3", lw=0.5)
        b.set_ylabel(f"paired Δτ to {field} = 1 (RB)", color="C3")
        a.set_xlabel(field)
        a.set_ylabel("τ")
        a.set_title("Figure 3 (m)" if field == "m" else "Figure 4 (T)")
        a.legend(fontsize=8)
    fig.tight_layout()
    savefig_atomic(fig, path, dpi=100)
    plt.close(fig)


def _yerr(rows: list[dict], m: str, ci: str) -> list[list[float]]:
    lo = [0.0 if math.isnan(r[ci][0]) else r[m] - r[ci][0] for r in rows]
    hi = [0.0 if math.isnan(r[ci][1]) else r[ci][1] - r[m] for r in rows]
    return [lo, hi]
