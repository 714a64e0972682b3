"""Decoders under test: one folder per decoder nobody here wrote (or rheo's own LM path), run on table
language models of a case and gated against the exact target law (docs/DECODERS.md, docs/THIRD_PARTY.md).

A decoder is a `Decoder` entry in one registry (like the scheme families': `rheo.families.registry`): the
built-in ones are discovered, on first use, as the `DECODER` of every subpackage of `rheo.decoders`
(every folder on the package's `__path__` that defines one), in the order of their `order` field
(ties by name); another joins with `register` (a test's toy decoder). A decoder that runs in its own
virtual environment (vLLM, SGLang, ...) is the same entry, built by `rheo.decoders.served.Served`.
`rheo gate --decoder NAME` (alias `gate-hf`), its help, its `--gen` keys, each decoder's verdict table
(`--rows`) and the fuzz harness's list of decoders all read the registry; code outside a decoder's
folder never names it.

On the command line a decoder is `NAME` or, when it takes an argument, `NAME:ARG` (`ensemble:1/2`,
`seqspec:standard`); `DecoderRun.parse` checks both and the `--gen` options and gives the run the
gate samples with (`rheo.decoders.gate`).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from rheo_ref.errors import CaseError
from rheo_ref.laws import Law
from rheo_ref.models import Case
from rheo_ref.registry import Registry

from .rows import Row, Table


def _no_arg(text: str) -> Any:
    return None


def _nothing(*args: Any) -> None:
    return None


@dataclass(frozen=True)
class Decoder:
    """One decoder under test: everything the gate, the CLI and the fuzz harness need from it.

    - `name`: as on the command line before any `:ARG` (`assisted`, `seqspec`);
    - `summary`: what runs, for `rheo gate --help` (lines after the first are indented under it);
    - `gen_keys`, `gen_help`: the `--gen KEY=VALUE` keys it takes (any other is refused: the exact
      target law would be unknown) and one help line on them and their defaults;
    - `decode(case, context, n, seed, num_samples, run)`: `num_samples` independent decodes of `n`
      tokens from `context` with the case's unprocessed tables (the decoder processes them as its
      code does), seeded by `seed`; a list of token tuples. Called in worker processes too
      (`--workers`): it must be a module-level function of the folder;
    - `exact_law(case, n, run)`: the decoder's own exact law of the first n tokens where rheo knows
      it (None: unknown), for the exact TV printed beside the verdict;
    - `arg`: the metavar of `NAME:ARG` (None: the decoder takes no argument) and `parse_arg(text)` its
      value (raising `CaseError` with the allowed values);
    - `defaults(run)`: the options in effect beside the given ones (the decoder's own defaults);
    - `check(run)`: refuse options the exact law does not cover (before any work);
    - `check_case(case, run)`: refuse a case the decoder cannot run (before the exact law's cost);
    - `min_context`: the tokens of context it needs (transformers generates from at least one id): the
      gate's sampler refuses a shorter case (`check_context`), through the library as through the CLI;
    - `requires`: modules that must be importable, and `install`: the line that installs them;
    - `package`: the distribution named in the verdict (`"eagle-llm"`); None: transformers' own where the
      decoder requires transformers, else no package;
      `version`: its pinned version where it is not installed here (a served decoder's), else None
      (the installed one); `path`: the code under test (`"vllm/v1/sample/rejection_sampler.py"`);
    - `examples`: valid `--decoder` values the fuzz harness runs (default: `name`);
    - `order`: the place in the help and in every table (then by name); the built-in ones use
      multiples of 10, so a new folder slots in without renumbering;
    - `target_law(case, n, run)`: the law the run claims where it is not the processed p
      (`run.target_case`); None keeps the processed p (and with it `--horizon`);
    - `env`: the served environment's name (None: the decoder runs in this interpreter); `served` its
      `rheo.decoders.served.Served`: the interpreter its driver runs in (`--python`, this one where the
      package is importable, rheo's own `.venv-<env>`) and the release installed there, which
      `distribution()` reports; no interpreter with the package: `rheo gate` exits 2 naming the install line;
    - `table`: the decoder's verdict table (`rheo.decoders.rows`; `rheo gate --rows`), None: no table;
    - `ties`: the rule the engine's own code follows at a top-k / top-p cut between tied tokens
      (`rheo_ref.processing.check_ties`: "all", "low", "high" or a rule per cut; docs/PROCESSING.md,
      "Ties", cites each engine's line); `--gen ties=...` names the cuts it leaves open (or overrides
      it), and a cut between tied tokens that neither names is refused. None: the engine has none.
    """

    name: str
    summary: str
    decode: Callable[..., list[tuple[int, ...]]]
    gen_keys: tuple[str, ...] = ()
    gen_help: str = ""
    exact_law: Callable[[Case, int, DecoderRun], Law | None] = lambda case, n, run: None
    arg: str | None = None
    parse_arg: Callable[[str], Any] = _no_arg
    defaults: Callable[[DecoderRun], Mapping[str, Any]] = lambda run: {}
    check: Callable[[DecoderRun], None] = _nothing
    check_case: Callable[[Case, DecoderRun], None] = _nothing
    min_context: int = 1
    requires: tuple[str, ...] = ("transformers",)
    install: str = "pip install -e '.[model]'"
    package: str | None = None
    examples: tuple[str, ...] = field(default=())
    version: str | None = None
    path: str = ""
    order: int = 1000
    target_law: Callable[[Case, int, DecoderRun], Law | None] = lambda case, n, run: None
    env: str | None = None
    table: Table | None = None
    ties: Any = None
    served: Any = None  # a served decoder's `rheo.decoders.served.Served` (its interpreter, release and range)

    @property
    def spelling(self) -> str:
        """As written on the command line: `ensemble:W`, `assisted`."""
        return self.name if self.arg is None else f"{self.name}:{self.arg}"

    def distribution(self) -> tuple[str | None, str | None]:
        """(the distribution under test, its version): `package` (when None: transformers' own for a decoder
        that requires transformers, else None, no package) at the pinned `version`, else the version
        installed here (None: not installed, or no package)."""
        from rheo.decoders.gate import dist_version

        name = self.package or ("transformers" if "transformers" in self.requires else None)
        if self.served is not None:  # the release installed where its driver runs, not a constant
            return name, self.served.version()
        if name is None:
            return None, self.version
        return name, self.version or dist_version(name)

    def check_environment(self) -> None:
        """The library's one check that this decoder can run here, before any work: its `requires` importable
        (else `MissingDependencyError` naming the install line) and, for a served decoder, an interpreter with
        its package (`Served.python`)."""
        import importlib.util

        from rheo_ref.errors import MissingDependencyError

        for module in self.requires:
            if importlib.util.find_spec(module) is None:
                raise MissingDependencyError(f"rheo gate --decoder {self.name} needs {module} ({self.install})")
        if self.served is not None:  # the interpreter with the package (--python, this one, rheo's .venv-NAME)
            self.served.python()

    def check_context(self, case: Case, spelling: str | None = None) -> None:
        """Refuse a case whose context is shorter than `min_context` (the library's check, before any work;
        `spelling`: the run's name with its `:ARG`, for the message)."""
        need = self.min_context
        if len(case.context) < need:
            raise CaseError(
                f"decoder {spelling or self.name} needs a case context of at least {need} "
                f"token{'s' if need != 1 else ''}; the case's is {list(case.context)}"
            )

    def installed_version(self) -> str | None:
        return self.distribution()[1]


def discover() -> list[Decoder]:
    """The `DECODER` of every subpackage of `rheo.decoders` (every folder on its `__path__`), sorted by
    `(order, name)`: a new folder joins with no edit anywhere else."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.ispkg:
            entry = getattr(importlib.import_module(f"{__name__}.{info.name}"), "DECODER", None)
            if isinstance(entry, Decoder):
                found.append(entry)
    return sorted(found, key=lambda d: (d.order, d.name))


class _Discovered(Registry[Decoder]):
    """The registry whose built-in entries are `discover()`'s, found again when `__path__` changes."""

    def __init__(self) -> None:
        super().__init__(Decoder, __name__, "DECODER", (), noun="decoder")
        self._path: tuple[str, ...] | None = None
        self._added: dict[str, Decoder] = {}
        self.built_in: tuple[str, ...] = ()

    def _load(self) -> None:
        path = tuple(__path__)
        if self._path != path:
            found = discover()  # (a folder that fails to import raises here, every time: no partial registry)
            self._path, self.built_in, self._entries = path, tuple(d.name for d in found), {}
            for entry in [*found, *self._added.values()]:
                super().register(entry)

    def register(self, entry: Decoder) -> Decoder:
        out = super().register(entry)
        self._added[entry.name] = entry
        return out

    def unregister(self, name: str) -> None:
        self._load()
        if name in self.built_in:
            raise CaseError(f"decoder {name!r} is built in; allowed: those added by register()")
        self._added.pop(name, None)
        self._entries.pop(name, None)


_REGISTRY = _Discovered()
register = _REGISTRY.register
unregister = _REGISTRY.unregister


def decoders() -> Mapping[str, Decoder]:
    """Every decoder by name: the discovered ones in `(order, name)` order, then those registered."""
    return _REGISTRY.entries()


def examples() -> list[str]:
    """Every registered decoder's valid `--decoder` values (the fuzz harness's list)."""
    return [e for d in decoders().values() for e in (d.examples or (d.name,))]


@dataclass(frozen=True)
class DecoderRun:
    """One decoder with its argument and its `--gen` options (picklable: workers get it)."""

    decoder: str  # the registry name
    gen: tuple[tuple[str, Any], ...] = ()
    arg: Any = None  # the value of NAME:ARG (ensemble: a Fraction weight; seqspec: the method)

    @classmethod
    def parse(cls, name: str, gen: Mapping[str, Any] | None = None) -> DecoderRun:
        """`NAME` or `NAME:ARG` as on the command line (`rheo gate --help` lists them), with the
        `--gen` options; refuses an unknown decoder, a bad argument and an unsupported option."""
        head, _, text = name.partition(":")
        head = cls.head(name)
        known = decoders()
        if head not in known or (known[head].arg is not None) != bool(text):
            raise CaseError(f"unknown decoder {name!r}; allowed: {', '.join(d.spelling for d in known.values())}")
        dec = known[head]
        arg = dec.parse_arg(text) if dec.arg is not None else None
        gen = dict(gen or {})
        bad = sorted(set(gen) - set(dec.gen_keys))
        if bad:
            raise CaseError(
                f"decoder {head}: --gen {bad[0]} is not supported (the exact target law would be unknown); "
                f"allowed: {', '.join(dec.gen_keys)}"
            )
        run = cls(head, tuple(sorted(gen.items())), arg)
        dec.check(run)
        return run

    @staticmethod
    def head(name: str) -> str:
        """The registry name of `NAME[:ARG]`; `_` stands for `-` (`eagle_harness`, the folder's name)."""
        head = name.partition(":")[0]
        alt = head.replace("_", "-")
        return alt if head not in decoders() and alt in decoders() else head

    @property
    def entry(self) -> Decoder:
        return decoders()[self.decoder]

    @property
    def name(self) -> str:
        return self.decoder if self.arg is None else f"{self.decoder}:{self.arg}"

    def options(self) -> dict[str, Any]:
        """The options in effect: the given ones, then the decoder's defaults for the rest."""
        out = dict(self.gen)
        for k, v in self.entry.defaults(self).items():
            out.setdefault(k, v)
        return out

    def processing(self) -> Any:
        """The logits processing of the options (temperature 1/k, top-k, top-p: rheo.decoders.laws), the
        tie rule at a cut the given `ties` where named, else the engine's own (`Decoder.ties`)."""
        from rheo.decoders.laws import Processing
        from rheo_ref.processing import merge_ties

        gen = dict(self.gen)
        return Processing.from_gen({**gen, "ties": merge_ties(self.entry.ties, gen.get("ties"))})

    def target_case(self, case: Case, n: int) -> Case:
        """The case whose target law sampling aims at: p (and q) processed, `n` tokens."""
        c = self.processing().case(case)
        return replace(c, tokens=n)

    def exact_law(self, case: Case, n: int) -> Law | None:
        """The decoder's exact law of the first n tokens where rheo knows it, else None."""
        return self.entry.exact_law(case, n, self)

    def sampler(self, case: Case, *, workers: int = 1) -> Any:
        """The gate's sampler of this run on `case` (`rheo.decoders.gate.sampler`)."""
        from rheo.decoders.gate import sampler

        return sampler(self, case, workers=workers)


__all__ = ["Decoder", "DecoderRun", "Row", "Table", "decoders", "discover", "examples", "register", "unregister"]
