"""srep-moe 0.1.0 (PyPI) under the gate: its `EAGLE3SDDriver.run_episode` (srep_moe/sd_engine.py), the EAGLE-3
draft-and-verify loop, unmodified, with stand-ins for what its constructor takes: the target (an `nn.Module`
whose `model.layers[-1]` its `HiddenStateHook` hooks, returning the case's target logits), the speculator
(`forward(hidden_states, input_ids, ttt_steps)` returning γ draft tokens: the greedy chain of the case's
draft table, as an EAGLE-3 head drafts its argmax), a tokenizer of ids and a `TorrentState`. `run_episode`
returns statistics only, so the tokens are read where the loop hands them back to the model: the committed
sequence each `draft()` call runs the target on; `max_new_tokens` = n + γ + 1 makes the loop draft once more
after the n-th token.

Its verifier, `speculative_sampling` (sd_engine.py:286-337), accepts a draft x with p(x) (a one-hot q: the
drafter's argmax) and on a rejection draws the token from p itself (line 324), where the algorithm draws from
p with x removed: the token x comes out with p(x)·(2 − p(x)) instead of p(x). Exact law:
`rheo.decoders.chain_law` with a one-hot q and that residual. The loop also hands `draft()` a cache that
already holds the previous verify's drafts while re-running the whole sequence (sd_engine.py:219, :372, :376);
the table model ignores caches, so that is read here, not gated. Temperature 0 (its default) is greedy."""

from __future__ import annotations

from typing import Any

from rheo.decoders import Decoder, Law, Row, Table
from rheo.decoders.generate import check_options
from rheo_ref.errors import CaseError
from rheo_ref.models import Case, TableModel

VERSION = "0.1.0"
MAX_GAMMA = 6  # the exact law enumerates a round's drafts


def defaults(run: Any) -> dict[str, Any]:
    return {"temperature": 1, "gamma": 5}  # gamma: EAGLE3SDDriver's default


def check(run: Any) -> None:
    check_options(run)
    g = run.options()["gamma"]
    if isinstance(g, bool) or not isinstance(g, int) or not 1 <= g <= MAX_GAMMA:
        raise CaseError(f"gamma={g!r} must be an integer in [1, {MAX_GAMMA}]")
    proc = run.processing()
    if proc.top_k is not None or proc.top_p is not None:
        raise CaseError("top_k/top_p: srep-moe's speculative_sampling takes a temperature only")


def _argmax_table(q: TableModel) -> TableModel:
    from rheo.decoders.economize.law import argmax, one_hot

    rows = {key: one_hot(argmax(r), q.vocab_size) for key, r in q.probs.items()}
    return TableModel(q.vocab_size, q.context_length, rows, f"argmax of {q.name}")


def _whole_p(r: Any, q: Any, x: int) -> Any:
    return r  # sd_engine.py:324: the rejected draft's token is drawn from p itself


def exact_law(case: Case, n: int, run: Any) -> Law | None:
    from rheo.decoders.chain_law import token_law

    p = run.processing().table(case.target)
    return token_law(p, _argmax_table(case.q_samp_model), case.context, n, run.options()["gamma"], residual=_whole_p)


def decode(case: Case, context: list[int], n: int, seed: int, num_samples: int, run: Any) -> list[tuple[int, ...]]:
    from types import SimpleNamespace

    import torch
    from srep_moe.models import TorrentState
    from srep_moe.sd_engine import EAGLE3SDDriver

    from rheo.testing import decode_batches, processing_args, table_module

    g, T = run.options()["gamma"], processing_args(run)["temperature"]
    p_logits, q_logits = table_module(case.target), table_module(case.q_samp_model)

    class Body(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = torch.nn.ModuleList([torch.nn.Identity()])  # what HiddenStateHook hooks

    class Target(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = Body()
            self.seen: list[int] = []

        def forward(self, ids: torch.Tensor, past_key_values: Any = None, use_cache: bool = True) -> Any:
            self.model.layers[-1]((ids[..., None].float(),))  # output[0]: the "hidden states" [1, S, 1]
            self.seen = ids[0].tolist()
            return SimpleNamespace(logits=p_logits(ids), past_key_values=None)

    class Speculator:
        device = torch.device("cpu")

        def __init__(self, target: Target) -> None:
            self.target, self.committed = target, list[int]()

        def forward(self, hidden_states: Any, input_ids: Any, ttt_steps: int) -> list[torch.Tensor]:
            self.committed = ids = list(self.target.seen)  # draft() ran the target on the committed sequence
            out = []
            for _ in range(ttt_steps):
                ids = ids + [int(q_logits(torch.tensor(ids))[-1].argmax())]
                out.append(torch.tensor([[ids[-1]]]))
            return out

    class Tokenizer:
        eos_token_id = -1

        def __call__(self, prompt: str, return_tensors: str = "pt") -> Any:
            return SimpleNamespace(input_ids=torch.tensor([list(context)]))

    def episode(prompt: torch.Tensor) -> list[list[int]]:
        target = Target()
        spec = Speculator(target)
        driver = EAGLE3SDDriver(target, spec, Tokenizer(), TorrentState(num_layers=1), gamma=g, device=spec.device)
        driver.run_episode([""], max_new_tokens=n + g + 1, temperature=T)
        return [spec.committed[len(context) :]]

    return decode_batches(episode, context, n, seed, num_samples)


CAUSE = (
    "srep_moe/sd_engine.py:324 `bonus = int(torch.multinomial(p_target, num_samples=1).item())`: after "
    "rejecting a draft accepted with p(x) (line 319, a one-hot q) the token is drawn from p, not from p with x "
    "removed: x comes out with p(x)(2 − p(x))"
)

DECODER = Decoder(
    name="srep-moe",
    summary=f"srep-moe {VERSION}'s EAGLE3SDDriver.run_episode (EAGLE-3 draft and verify), unmodified;\n"
    f"pip install --no-deps srep-moe=={VERSION}",
    decode=decode,
    gen_keys=("temperature", "gamma"),
    gen_help="gamma (drafts a round, 1..6, default 5), temperature (1/k, default 1; the package's 0 is greedy)",
    exact_law=exact_law,
    defaults=defaults,
    check=check,
    requires=("srep_moe",),
    install=f"pip install --no-deps srep-moe=={VERSION}",
    package="srep-moe",
    order=160,
    path="srep_moe/sd_engine.py (EAGLE3SDDriver.speculative_sampling, run_episode)",
    table=Table(
        case="tests/cases/hf.json",
        tokens=4,
        tv=0.2,  # the exact TV is 0.243 at T = 1 (every gamma), 0.173 at T = 1/2
        rows=(
            Row("T=1 gamma 3", {"gamma": 3}, cause=CAUSE),
            Row("T=1/2 gamma 3", {"gamma": 3, "temperature": 0.5}, cause=CAUSE, tv=0.15, slow=True),
            Row("T=1 gamma 1", {"gamma": 1}, cause=CAUSE, slow=True),
            Row("T=1 gamma 5", {"gamma": 5}, cause=CAUSE, slow=True),
        ),
    ),
)
