"""`python -m rheo.decoders.vllm.gate [--rows a,b] [--seeds 1,2] [--tv D]`: vLLM's verdict table, a thin
alias of `rheo gate --decoder vllm --rows ROWS --seeds SEEDS [--tv D]` (its rows are the registry entry's,
`rheo.decoders.vllm.DECODER.table`; docs/THIRD_PARTY.md). It runs `python -m rheo` (the decoders never
import the command line)."""

from __future__ import annotations

import argparse
import runpy
import sys


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", default="all")
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--tv", default=None)
    a = ap.parse_args(argv)
    sys.argv = ["rheo", "gate", "--decoder", "vllm", "--rows", a.rows, "--seeds", a.seeds]
    sys.argv += ["--tv", a.tv] if a.tv else []
    runpy.run_module("rheo", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
