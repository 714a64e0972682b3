"""Run a command; print one JSON line: its wall seconds, the peak RSS summed over its process tree
(polled every 0.1 s) and, when it printed a `rheo exact` report, the report's method, TV, τ and
whether its law sums to 1 (docs/EXACT_AT_SCALE.md §10; tests/bench/chain_one_run.sh).

    python tests/bench/run_measured.py OUT.json PYTHONPATH COMMAND...
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from fractions import Fraction

import psutil


def main() -> None:
    out_path, path = sys.argv[1], sys.argv[2]
    cmd = sys.argv[3:]
    t0 = time.perf_counter()
    peak = largest = 0
    with open(out_path, "w") as fh:
        p = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=path), cwd=path)
        proc = psutil.Process(p.pid)
        while p.poll() is None:
            try:
                rss = [q.memory_info().rss for q in [proc, *proc.children(recursive=True)]]
                peak, largest = max(peak, sum(rss)), max(largest, max(rss))
            except psutil.Error:
                pass
            time.sleep(0.1)
        err = p.stderr.read().decode() if p.stderr else ""
    res: dict = {
        "cmd": " ".join(cmd[3:]),
        "rc": p.returncode,
        "wall_s": round(time.perf_counter() - t0, 1),
        "peak_tree_rss_MiB": round(peak / 2**20),
        "largest_MiB": round(largest / 2**20),
    }
    try:
        with open(out_path) as fh:
            report = json.load(fh)
        res |= {k: report.get(k) for k in ("method", "tv", "enumerated", "seconds")}
        res["tau"] = float(Fraction(report["tau"])) if report.get("tau") else None
        res["sum1"] = sum(Fraction(v) for v in report["law"].values()) == 1
    except (OSError, ValueError, KeyError) as e:
        res["error"] = (err or str(e))[-300:]
    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
