"""The one timing loop of `rheo bench-model` and `rheo draft-ceiling` (`rheo_fast.lm.bench.timed_decodes`),
on stand-in decoders (no model): every cell on every prompt, interleaved prompt by prompt; a cell's coins
depend on the seed, the prompt and its key only, so cells with the same key draw the same stream."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch", reason="the fast path needs the `fast` extra (torch)")

from rheo_fast.lm import bench  # noqa: E402
from rheo_fast.lm.bench import Cell, Loaded, timed_decodes  # noqa: E402
from rheo_fast.lm.decode import TreeSize  # noqa: E402


@pytest.fixture
def stand_ins(monkeypatch):
    """generate_ar / generate_tree replaced by decoders that record (prompt ids, method, T, first coin)."""
    seen = []

    def decode(method):
        def run(model_or_lm, ids, *args, T=None, max_new, generator, eos):
            coin = torch.rand(1, generator=generator).item()
            seen.append((tuple(ids), method if method == "ar" else args[0], coin))
            return SimpleNamespace(tokens=[1] * max_new, tau=1.5, seconds=0.1)

        return run

    monkeypatch.setattr(bench, "generate_ar", decode("ar"))
    monkeypatch.setattr(bench, "generate_tree", decode("tree"))
    monkeypatch.setattr(bench, "scheme_for", lambda method, size: method)
    monkeypatch.setattr(bench, "render", lambda prompt, tokenizer: [prompt.id])
    return seen


def test_every_cell_on_every_prompt_interleaved_with_keyed_coins(stand_ins):
    prompts = [SimpleNamespace(set="humaneval", id=i) for i in (7, 8)]
    target = SimpleNamespace(model="target", tokenizer=None, eos_ids=())
    loaded = Loaded(prompts, head=None, meta={}, target=target)
    cells = [Cell("ar", 1.0, key=("ar",)), Cell("rheo", 1.0, "lm", ("rheo",)), Cell("topk", 1.0, "lm", ("rheo",))]
    out = list(timed_decodes(loaded, cells, size=TreeSize(), max_new=3, seed=5, desc="test", progress=False))
    assert [(pr.id, cell.method) for pr, cell, _ in out] == [(p, m) for p in (7, 8) for m in ("ar", "rheo", "topk")]
    assert [(ids, method) for ids, method, _ in stand_ins] == [
        ((p,), m) for p in (7, 8) for m in ("ar", "rheo", "topk")
    ]
    coins = [c for _, _, c in stand_ins]
    assert coins[1] == coins[2] and coins[4] == coins[5]  # same key, same prompt: the same stream
    assert len({coins[0], coins[1], coins[3], coins[4]}) == 4  # another key or another prompt: another one
    again = list(timed_decodes(loaded, cells[:1], size=TreeSize(), max_new=3, seed=5, desc="test", progress=False))
    assert len(again) == 2 and stand_ins[-2][2] == coins[0]  # reproducible from the seed
