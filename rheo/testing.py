"""Stand-ins a downstream decoder's tests run on (docs/GATE_REFERENCE.md "What you import"): table
language models with exactly known laws, and the kit for decoders that split body, lm_head and
draft head. They need torch (and transformers for `TableLM`): `pip install rheo[fast,hf]`. A batched
decoder's checks need numpy only (docs/GATE.md, "A batched decoder's suite"):

    from rheo.testing import check_batch, assert_batch, check_logprobs, check_greedy

    from rheo.testing import table_lms, TableLM, table_lm
    from rheo.testing import table_embedding, TableBodyLayer, table_lm_head, draft_fc, TableDraftLayer
    from rheo.testing import table_module, decode_batches, processing_args  # a package's adapter

A downstream test imports these from here, never from `rheo_fast`: the names are stable, the
modules behind them are not.
"""

from __future__ import annotations

from typing import Any

from rheo_ref.errors import MissingDependencyError

_WHERE = {
    "TableLM": "rheo_fast.table_lm",
    "table_lm": "rheo_fast.table_lm",
    "table_lms": "rheo_fast.table_lm",
    "table_embedding": "rheo_fast.kit",
    "TableBodyLayer": "rheo_fast.kit",
    "table_lm_head": "rheo_fast.kit",
    "draft_fc": "rheo_fast.kit",
    "TableDraftLayer": "rheo_fast.kit",
    **dict.fromkeys(("table_module", "decode_batches", "processing_args"), "rheo_fast.adapters"),
}
# a batched decoder's checks (pure Python and numpy; rheo.decoders.batch_checks) and its worked example
_WHERE |= dict.fromkeys(
    ("BatchError", "BatchTest", "GreedyError", "LogprobError", "assert_batch", "check_batch", "check_greedy")
    + ("check_logprobs", "request_case"),
    "rheo.decoders.batch_checks",
)

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    """Loaded on first use, so `import rheo.testing` costs nothing and a missing torch is named."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    try:
        module = importlib.import_module(_WHERE[name])
    except ModuleNotFoundError as e:
        raise MissingDependencyError(
            f"rheo.testing.{name} needs {e.name!r}, which is not installed; pip install 'rheo[fast,hf]'"
        ) from e
    return getattr(module, name)
