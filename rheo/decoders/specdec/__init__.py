"""specdec 0.2.0 (PyPI) under the gate: `SpecDecoder.spec_gen(prompt, max_new_tok, num_sample_tok)`, unmodified
(draft `generate_small`, target `verify`: chain speculative sampling at temperature 1, batch 1), on the
case's `TableLM`s; its exact law is `rheo.decoders.laws.Chain`; docs/ECOSYSTEM.md.

`SpecDecoder.__init__` loads two hub models by name (`AutoModelForCausalLM.from_pretrained`), so the
adapter makes the object without it and sets the four attributes its methods read (`small_model`,
`big_model`, `tokenizer`, `device`); the methods under test run as released."""

from __future__ import annotations

from typing import Any

from rheo.decoders import Decoder, Law, Row, Table
from rheo_ref.errors import CaseError
from rheo_ref.models import Case

VERSION = "0.2.0"
MAX_GAMMA = 6  # the exact law enumerates V^gamma drafts a round


class IdTokenizer:
    """What `spec_gen` asks of a tokenizer, on ids: the prompt is the context, decode writes the ids."""

    eos_token_id = None

    def __init__(self, context: list[int]) -> None:
        self.context = list(context)

    def encode(self, prompt: str, return_tensors: str = "pt") -> Any:
        import torch

        return torch.tensor([self.context])

    def decode(self, ids: Any, skip_special_tokens: bool = True) -> str:
        return " ".join(str(int(i)) for i in ids)


def defaults(run: Any) -> dict[str, Any]:
    return {"num_sample_tok": 5}  # the CLI's example; spec_gen has no default


def check(run: Any) -> None:
    g = run.options()["num_sample_tok"]
    if isinstance(g, bool) or not isinstance(g, int) or not 1 <= g <= MAX_GAMMA:
        raise CaseError(f"num_sample_tok={g!r} must be an integer in [1, {MAX_GAMMA}]")


def exact_law(case: Case, n: int, run: Any) -> Law | None:
    from rheo.decoders.laws import Chain, table_drafter, table_row

    q = case.q_samp_model
    chain = Chain(case.target, table_drafter(q), table_row(q), cap=run.options()["num_sample_tok"], horizon=n + 1)
    return chain.token_law(case.context, n)


def decode(case: Case, context: list[int], n: int, seed: int, num_samples: int, run: Any) -> list[tuple[int, ...]]:
    import torch
    from specdec.decoder import SpecDecoder

    from rheo.testing import decode_batches, table_lm

    dec = object.__new__(SpecDecoder)
    dec.small_model, dec.big_model = table_lm(case.q_samp_model), table_lm(case.target)
    dec.tokenizer, dec.device = IdTokenizer(context), "cpu"
    g = run.options()["num_sample_tok"]

    def one(prompt: torch.Tensor) -> list[list[int]]:
        ids = [int(t) for t in dec.spec_gen("", n, g).split()]
        return [ids[len(context) :]]

    return decode_batches(one, context, n, seed, num_samples)


DECODER = Decoder(
    name="specdec",
    summary=f"specdec {VERSION}'s SpecDecoder.spec_gen (chain speculative sampling, T=1, batch 1), unmodified;\n"
    f"pip install --no-deps specdec=={VERSION}",
    decode=decode,
    gen_keys=("num_sample_tok",),
    gen_help="num_sample_tok (drafts a round, 1..6, default 5); the package has no temperature, top-k or batch",
    exact_law=exact_law,
    defaults=defaults,
    check=check,
    requires=("specdec", "transformers"),
    install=f"pip install --no-deps specdec=={VERSION}",
    package="specdec",
    order=120,
    path="specdec/decoder.py (SpecDecoder.spec_gen, generate_small, verify)",
    table=Table(
        case="tests/cases/hf.json",
        tokens=4,
        tv=0.25,
        rows=(
            Row("gamma 3", {"num_sample_tok": 3}),
            Row("gamma 1", {"num_sample_tok": 1}, slow=True),
            Row("gamma 5", {"num_sample_tok": 5}, slow=True),
        ),
    ),
)
