"""`rheo mutants --fewest`: every mutant's samples_to_convict before and after the hunt, from exact
laws alone (no sampling), at the level given (the gate's derived α by default): the before/after
table of docs/GATE_REFERENCE.md ("The fewest samples"), so its numbers are regenerated, never typed in.

- the twenty algorithmic mutants: before = on the gate case `rheo mutants` runs them on
  (`rheo.selfgate.matrix.mutant_case`); after = the better of that and their best hunted case
  (`rheo.mutants.best_cases.BEST_HUNTED`, `rheo.mutants.hunt.variant_case`);
- the batch classes: before = on the report batch (`rheo_ref.bugclasses.report_cases.report_batch`),
  after = on their best hunted batch (`rheo.mutants.best_cases.BEST_BATCHES`);
- the bug classes: before = on their library case (rheo.selfgate.case_library; the served-decoder
  classes 15–27: their report case, `rheo_ref.bugclasses.report_cases`); after = on their best case
  (`rheo.mutants.best_cases.BEST_CASES`: hunted, then refined); the float-level class shows its proved
  bound instead (the fewest samples any hunted case could need).
"""

from __future__ import annotations

import statistics

FLOAT_LEVEL_TWENTY = ("leq-coin", "float16")
DRAW_LABEL = {"random": "hunt", "block": "block draw", "served": "served draw"}


def twenty_row(name: str, *, alpha: float, beta: float) -> dict:
    from rheo.mutants.best_cases import BEST_HUNTED
    from rheo.mutants.hunt import variant_case
    from rheo.selfgate.bugclasses import CLASS_OF
    from rheo.selfgate.matrix import gate_cases, gate_samples_to_convict, mutant_case

    def on(gc) -> tuple[int | None, str | None]:
        return gate_samples_to_convict(gc, name, alpha, beta)

    gc = gate_cases()[mutant_case(name)]
    before, check = on(gc)
    row = {"mutant": name, "class": CLASS_OF[name], "before": before, "before_case": gc.name, "check": check}
    row.update(after=before, after_case="gate case", float_level=name in FLOAT_LEVEL_TWENTY)
    if name in BEST_HUNTED:
        h = BEST_HUNTED[name]
        n, ch = on(variant_case(name, h["seed"], h["i"]))
        if n is not None and (before is None or n < before):
            row.update(after=n, after_case=f"hunt seed {h['seed']} cell {h['i']}", check=ch)
    return row


def bug_row_pair(name: str, *, alpha: float, beta: float) -> dict:
    from rheo.mutants.best_cases import BEST_CASES
    from rheo.mutants.hunt import FLOAT_LEVEL
    from rheo.mutants.library import before_case, float_level_fields
    from rheo.selfgate.bugclasses import CLASS_OF, bug_row
    from rheo_ref.bugclasses.cases import BugCase

    lib, case = before_case(name)
    r = bug_row(case, name, alpha=alpha, beta=beta)
    row = {"mutant": name, "class": CLASS_OF[name], "before": r["samples_to_convict"], "before_case": lib}
    row.update(after=r["samples_to_convict"], after_case=lib, check=r["convicting_check"])
    row["float_level"] = name in FLOAT_LEVEL
    if name in FLOAT_LEVEL:
        row.update(float_level_fields(case, alpha=alpha, beta=beta))
    if name in BEST_CASES:
        h = BEST_CASES[name]["hunt"]
        b = bug_row(BugCase.from_json(BEST_CASES[name]["case"]), name, alpha=alpha, beta=beta)
        how = f"{DRAW_LABEL[h.get('draw', 'random')]} seed {h['seed']} cell {h['i']}" + (
            f", refined {h['refine_steps']} steps" if h["refine_steps"] else ""
        )
        row.update(after=b["samples_to_convict"], after_case=how, check=b["convicting_check"])
    return row


def batch_row_pair(name: str, *, alpha: float, beta: float) -> dict:
    from rheo.mutants.best_cases import BEST_BATCHES
    from rheo.mutants.hunt_batch import batch_from_json
    from rheo.mutants.library import before_batch
    from rheo.selfgate.batches import batch_row

    lib, cases, seeds = before_batch(name)
    r = batch_row(cases, seeds, name, alpha=alpha, beta=beta)
    row = {"mutant": name, "class": r["class"], "before": r["samples_to_convict"], "before_case": lib}
    row.update(after=r["samples_to_convict"], after_case=lib, check=r["convicting_check"], float_level=False)
    if name in BEST_BATCHES:
        h = BEST_BATCHES[name]["hunt"]
        b = batch_row(*batch_from_json(BEST_BATCHES[name]["batch"]), name, alpha=alpha, beta=beta)
        row["hunted"] = b["samples_to_convict"]  # on the best hunted batch, kept as "after" where not worse
        if b["samples_to_convict"] is not None and (row["before"] is None or b["samples_to_convict"] <= row["before"]):
            row.update(after=b["samples_to_convict"], after_case=f"batch draw seed {h['seed']} cell {h['i']}")
            row["check"] = b["convicting_check"]
    return row


def fewest(*, alpha: float, beta: float, only: list[str] | None = None) -> dict:
    """Every mutant's before/after row and, per kind (twenty / bug classes), the median and max of
    `after` over the detectable ones (not float-level)."""
    from rheo_ref.bugclasses.batch import BATCH_MUTANTS
    from rheo_ref.bugclasses.mutants import BUG_MUTANTS
    from rheo_ref.variants import MUTANTS

    rows = [twenty_row(n, alpha=alpha, beta=beta) for n in MUTANTS if not only or n in only]
    rows += [bug_row_pair(n, alpha=alpha, beta=beta) for n in BUG_MUTANTS if not only or n in only]
    rows += [batch_row_pair(n, alpha=alpha, beta=beta) for n in BATCH_MUTANTS if not only or n in only]
    summary = {}
    kinds = (("twenty", set(MUTANTS)), ("bug_classes", set(BUG_MUTANTS)), ("batch_classes", set(BATCH_MUTANTS)))
    for kind, names in kinds:
        for when in ("before", "after"):
            ns = [r[when] for r in rows if r["mutant"] in names and not r["float_level"] and r[when] is not None]
            if ns:
                summary[f"{kind}_{when}"] = {"median": statistics.median(ns), "max": max(ns), "mutants": len(ns)}
    return {"alpha": alpha, "beta": beta, "rows": rows, "summary": summary}


def markdown(out: dict) -> str:
    """The before/after table as docs/GATE_REFERENCE.md prints it."""
    from rheo_ref.bugclasses.mutants import BUG_MUTANTS

    lines = ["| mutant | class | before | after | check | after on |", "|---|---|---|---|---|---|"]
    for r in out["rows"]:
        m = BUG_MUTANTS.get(r["mutant"])
        cls = str(m.klass) if m else r["class"].split(":")[0]
        if r["float_level"]:
            bound = f"float-level (≥ {r['min_possible_samples']:,})" if "min_possible_samples" in r else "float-level"
            before = "-" if r["before"] is None else f"{r['before']:.2g}"
            lines.append(f"| `{r['mutant']}` | {cls} | {before} | {bound} | | |")
            continue
        lines.append(
            f"| `{r['mutant']}` | {cls} | {r['before']:,} | {r['after']:,} | {r['check']} | {r['after_case']} |"
        )
    lines.append("")
    for key, s in out["summary"].items():
        lines.append(f"- {key.replace('_', ' ')}: median {s['median']:g}, max {s['max']:,} ({s['mutants']} detectable)")
    return "\n".join(lines)
