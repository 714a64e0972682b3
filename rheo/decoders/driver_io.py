"""A served driver's stdout, kept for its reply: importing this module, the first thing a driver does (before it
imports the package under test), keeps fd 1 for the driver's one JSON line (`reply`) and sends everything else
written there (a package's log lines, C-level prints) to stderr, where the gate shows the last of it. vLLM 0.24-0.29
log "Failed to import from vllm._C" to stdout when they are imported on CPU, which left the gate with no JSON reply.
Only a driver's process imports this module, never the gate's own (standard library only, like `device`).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

sys.stdout.flush()
_REPLY = os.fdopen(os.dup(1), "w")  # fd 1 as the driver got it: the pipe the gate reads
os.dup2(2, 1)  # from here on, whatever writes to fd 1 (sys.stdout included) writes to stderr


def reply(obj: Any) -> None:
    """Write the driver's reply, one JSON line, on the stdout kept at import."""
    _REPLY.write(json.dumps(obj, allow_nan=False) + "\n")
    _REPLY.flush()
