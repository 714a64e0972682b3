"""The one error hierarchy of rheo: every error we raise derives from `RheoError`.

Messages name the offending value and what is allowed, in one line, so that the CLI can print
them as they are and a test can match them. `exit_status` is what the `rheo` command exits with:
2 for bad input (a case, a flag, a size refused up front, an output path that cannot be
written) and for a dependency that is missing (a package that is not installed, a trained file not
made yet: the one line names it and the line that installs or makes it), 1 for another failure of the
environment (a corrupted cache file, no memory or disk left). docs/CLI.md has the table.
"""

from __future__ import annotations

from typing import Any


class RheoError(Exception):
    """Base class of every error raised by rheo."""

    exit_status = 2


class CaseError(RheoError, ValueError):
    """A malformed case, table model or scheme (docs/ALGORITHM.md §10), or a bad argument."""


class TooLargeError(CaseError):
    """Work refused up front because its estimated size exceeds a limit (the message names the
    estimate, the limit and the flag that overrides it)."""


class TieError(CaseError):
    """A top-k or top-p cut falls between tied tokens and the caller named no tie rule
    (`rheo_ref.processing.keep_largest`: the message names the row, the tied tokens, their
    probability and the rules)."""


class OutputError(RheoError, ValueError):
    """An output path that cannot be written (a folder, read-only, missing parent)."""


class EnvironmentFailure(RheoError, RuntimeError):
    """Not the input's fault: the machine lacks something the command needs."""

    exit_status = 1


class MissingDependencyError(EnvironmentFailure):
    """An optional package (model, prompts) or a trained file that a command needs is not installed. Exit 2,
    as bad input: the command cannot run as given until the user installs (or makes) what the one line names,
    with the line that does it; not a failure midway, and never a bug in rheo."""

    exit_status = 2


class PackageUnavailable(MissingDependencyError):
    """The package a served decoder drives is not installed in the interpreter that runs it, or its installed
    release moved what the adapter drives: the one line names the package (the missing piece), the installed
    version, the supported releases and the install line. Exit 2, as bad input: the environment the user
    pointed the gate at cannot be judged as given."""

    exit_status = 2


class DeviceUnavailable(MissingDependencyError):
    """`--device cuda` where the interpreter that runs a served decoder's driver shows no CUDA device
    (`torch.cuda.is_available()` false there): the one line names the interpreter and the allowed device. Exit 2,
    as bad input: the device the user asked for is not in the environment the gate was pointed at."""

    exit_status = 2


class CorruptFileError(EnvironmentFailure):
    """A file rheo wrote earlier (weights, cached features) is unreadable or does not match."""


class StatsError(RheoError, ValueError):
    """A bad argument to a statistical test (an error rate outside (0, 1), N < 1, ...)."""


class SamplerOutputError(StatsError):
    """What a sampler returned (or samples handed to a test) is not N token sequences: the message
    names the value, its sample and token, and what is allowed (`rheo.lossless.validate`)."""


class LosslessError(RheoError, AssertionError):
    """A statistical test rejected: the sampler's outcomes do not follow the exact law.
    `result` is the test's record (a `rheo.lossless.stats.LawTest`, or a
    `rheo.lossless.horizon.HorizonTest`); `top_cells` are its cells with the largest standardised
    residuals and `conditional` the conditional law that deviates most (`rheo.lossless.diagnosis`),
    where the record has them.

    A verdict, not bad input: the `rheo` command exits 1 on it (docs/CLI.md)."""

    exit_status = 1

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        self.result = result
        self.top_cells = getattr(result, "top_cells", ())
        self.conditional = getattr(result, "worst_conditional", None)

    @property
    def cells(self) -> Any:
        """Deprecated spelling of `top_cells` (a record's `cells` is its number of tested cells). Its row, with
        the release that removes it, is in `rheo.deprecated`'s table; the text is that row's `message()`
        (the reference cannot import rheo: the layers point down)."""
        import warnings

        warnings.warn(
            "LosslessError.cells is deprecated and will be removed in rheo 0.2.0; use LosslessError.top_cells",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.top_cells


class ProofError(RheoError, AssertionError):
    """A check of proofs/ that was expected to hold, symbolically or exactly, did not."""
