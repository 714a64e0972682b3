#!/bin/bash
# docs/EXACT_AT_SCALE.md §10: `rheo exact CASE` (no flag), `--method chain --workers 1`, and the
# chain of an earlier commit (default 24a52aa, from a `git archive` of it), on three tables at
# R = 60, D = 8, one process per line, back to back. Run under the machine's CPU lock:
#   flock /tmp/rheo-cpu.lock tests/bench/chain_one_run.sh [BEFORE_COMMIT]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PY:-$ROOT/.venv/bin/python}
[ -x "$PY" ] || PY=$(command -v python)
BEFORE=${1:-24a52aa}
W=$(mktemp -d)
mkdir -p "$W/before" && git -C "$ROOT" archive "$BEFORE" | tar -x -C "$W/before"
PYTHONPATH=$ROOT "$PY" - "$W" <<'P'
import json, random, sys
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.generate import random_pair
from rheo_ref.models import Case
from rheo_ref.strategies import random_table
w = sys.argv[1]
rng = random.Random(0); q, p = random_pair(rng, 12, 1, style="zipf")
json.dump(Case(q, p, Scheme(4, 1, 3, 8, 60), (0,), 1).to_json(), open(f"{w}/zipf12.json", "w"))
rng = random.Random(0); q, p = random_table(rng, 16, "draft"), random_table(rng, 16, "target")
json.dump(Case(q, p, Scheme(4, 1, 3, 8, 60), (0,), 1).to_json(), open(f"{w}/random16.json", "w"))
P
cp "$ROOT/tests/cases/paper16.json" "$W/paper16.json"
for c in ${CASES:-paper16 zipf12 random16}; do
  echo "== $c $(date +%T)"
  "$PY" "$ROOT/tests/bench/run_measured.py" "$W/$c.new.json" "$ROOT" "$PY" -m rheo exact "$W/$c.json"
  "$PY" "$ROOT/tests/bench/run_measured.py" "$W/$c.new1.json" "$ROOT" "$PY" -m rheo exact "$W/$c.json" --method chain --workers 1
  "$PY" "$ROOT/tests/bench/run_measured.py" "$W/$c.old.json" "$W/before" "$PY" -m rheo exact "$W/$c.json" --method chain
  "$PY" -c "
import json, sys
a, b, c = (json.load(open(f'$W/$c.{s}.json')) for s in ('new', 'new1', 'old'))
print('same law, tau:', a['law'] == b['law'] == c['law'], a['tau'] == b['tau'] == c['tau'])"
done
rm -rf "$W"
