"""Shared test configuration.

The default run is parallel (pytest-xdist, `-n auto --dist loadgroup` in pyproject.toml's
addopts; the real-model module is one group, so its model loads once). Every worker keeps torch's
intra-op threads at 1 (set here, before any test module imports torch), so two workers on two
cores do not oversubscribe them.

Hypothesis profiles, chosen by RHEO_HYPOTHESIS_PROFILE (docs/GATE.md):
- `ci` (the default): derandomized, so every run, parallel or not, tries the same examples;
- `dev`: random, modest example counts;
- `nightly`: many more examples, random.
A test that needs an extra that is not installed (torch, transformers, import-linter, ...) is skipped
with the reason and the install line (`EXTRAS`; `needs`), unless RHEO_ALL_EXTRAS=1 (`make test`).
Tests sit in folders that mirror the packages (tests/decoders/, tests/cli/, ...); each folder's modules
import `helpers` from tests/ (on the path as this file's folder) and must have a basename of their own.

Seeds of statistical tests come from the test id (rheo.lossless.plugin's `rheo_seed`), so they
do not depend on which worker runs a test; RHEO_SEED_SALT varies them all (nightly). The plugin
itself is loaded through its pytest11 entry point; tests/ only chooses the profile.
"""

from __future__ import annotations

import os
import sys

import pytest

if os.environ.get("PYTEST_XDIST_WORKER"):  # read by torch, numpy and tokenizers when first imported
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "RAYON_NUM_THREADS"):
        os.environ[_var] = "1"
    os.environ["TOKENIZERS_PARALLELISM"] = "false"

from hypothesis import HealthCheck, settings

from rheo.cli.main import EXTRAS as CLI_EXTRAS

PROFILE_ENV = "RHEO_HYPOTHESIS_PROFILE"
ALL_EXTRAS_ENV = "RHEO_ALL_EXTRAS"  # set (`make test`, which installs every extra): a missing one fails

# The optional packages a test may need and the extra that installs each (pyproject.toml). A test module
# that imports one that is not installed, or a test (or fixture) that does while it runs, is skipped with
# the reason, e.g. "needs torch: pip install 'rheo[fast]'"; any other missing module is an error as ever.
EXTRAS = {
    **CLI_EXTRAS,  # those a subcommand needs (rheo.cli.main), and those only the tests need:
    "jupytext": "notebooks",
    "nbformat": "notebooks",
    "sympy": "proofs",
    "z3": "proofs",
    "importlinter": "dev",
}


def needs(package: str) -> str:
    """The skip reason of a test that needs `package` (an optional package, or a dev tool's name)."""
    extra = EXTRAS.get(package, "dev")
    return f"needs {package}: pip install -c constraints.txt -e '.[{extra}]'"


def skip_missing_extra(exc: BaseException | None) -> None:
    """Skip the running test (or module) when `exc` says an optional package is not installed."""
    if os.environ.get(ALL_EXTRAS_ENV) or not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return
    top = exc.name.partition(".")[0]
    if top in EXTRAS:
        pytest.skip(needs(top))


class ExtrasModule(pytest.Module):
    """A test module that is skipped, not an error, when importing it needs an optional package."""

    def collect(self):
        try:
            return super().collect()
        except self.CollectError as e:
            skip_missing_extra(e.__cause__)
            raise


def pytest_pycollect_makemodule(module_path, parent):
    return ExtrasModule.from_parent(parent, path=module_path)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    try:
        return (yield)
    except ModuleNotFoundError as e:
        skip_missing_extra(e)
        raise


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    try:
        return (yield)
    except ModuleNotFoundError as e:
        skip_missing_extra(e)
        raise


settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=40,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("nightly", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get(PROFILE_ENV, "ci"))


@pytest.fixture(scope="module")
def one_thread():
    """Tiny tensors: intra-op threads only contend on this 2-core machine (about 10x slower).
    Fast-path test modules use it with `pytestmark = pytest.mark.usefixtures("one_thread")`."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def pytest_terminal_summary(terminalreporter):
    """How many inputs the fuzzing harness (tests/test_fuzz.py) tried per subcommand, and how they
    ended (only in the process that ran it: `-n 0`)."""
    fuzz = sys.modules.get("test_fuzz")
    counts = getattr(fuzz, "COUNTS", None)
    if not counts:
        return
    outcomes = fuzz.OUTCOMES
    terminalreporter.section("fuzzing harness: inputs per subcommand")
    for name, n in sorted(counts.items()):
        ends = ", ".join(f"{how}: {k}" for (cmd, how), k in sorted(outcomes.items()) if cmd == name)
        terminalreporter.write_line(f"{name:18} {n:6}   ({ends})")
    terminalreporter.write_line(f"{'total':18} {sum(counts.values()):6}")


def pytest_collection_modifyitems(config, items):
    """`slow` tests run only when the -m expression names them (`-m slow`, `-m "lossless or slow"`):
    `pytest -m lossless`, the gate for decoder changes, stays quick, and the long third-party rows
    and whole-table runs (each stating its wall time) are opt-in."""
    if "slow" in (config.option.markexpr or ""):
        return
    slow = [i for i in items if i.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [i for i in items if not i.get_closest_marker("slow")]
