"""Deprecations live in one table (`rheo.deprecated`): every spelling in it still works and warns with its
row's text (replacement and the release that removes it), and the table is removed on time: a row whose
release rheo's version has reached fails here until it and its shim are deleted."""

from __future__ import annotations

import importlib.metadata
import warnings
from fractions import Fraction

import pytest

import rheo
import rheo.decoders.settings
import rheo.families.registry
import rheo.family
import rheo.lossless.planning
import rheo.selfgate.matrix
import rheo_ref.processing
from rheo.deprecated import BY_NAME, DEPRECATED, Deprecated, attribute

A = {(0,): Fraction(1, 2), (1,): Fraction(1, 2)}
B = {(0,): Fraction(1, 4), (1,): Fraction(3, 4)}


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3])


def _lossless_error() -> rheo.LosslessError:
    case = rheo.Case.from_json({"target": {"vocab_size": 2, "context_length": 0, "probs": {"": ["1/2", "1/2"]}}})
    res = rheo.check_lossless(lambda c, s, n: [(0,)] * n, case, alpha=1e-3, tv=0.2, seed=0)
    return rheo.LosslessError("rejected", res)


# how to read each row's spelling, and what it must equal: (read, the replacement's value)
READ = {
    "rheo.tv": (lambda: rheo.tv, lambda: rheo.total_variation),
    "rheo.min_num_samples": (lambda: rheo.min_num_samples, lambda: rheo.lossless.stats.min_num_samples),
    "rheo.min_detectable_tv": (lambda: rheo.min_detectable_tv, lambda: rheo.lossless.stats.min_detectable_tv),
    "rheo.lossless.planning.tv": (lambda: rheo.lossless.planning.tv, lambda: rheo.total_variation),
    "rheo.family": (lambda: rheo.family.suite_families, lambda: rheo.families.registry.suite_families),
    "rheo.decoders.settings.Sampling": (
        lambda: rheo.decoders.settings.Sampling,
        lambda: rheo_ref.processing.Sampling,
    ),
    "rheo.selfgate.matrix.ALPHA": (
        lambda: rheo.selfgate.matrix.ALPHA,
        lambda: rheo.selfgate.matrix.alpha_per_test(),
    ),
}


def test_every_row_names_a_release_after_this_one():
    """A row whose release has come must go (with its shim) before that release ships."""
    version = _release(importlib.metadata.version("rheo"))
    due = [d.old for d in DEPRECATED if _release(d.removed_in) <= version]
    assert not due, f"rheo {version} should no longer have {due}: delete their rows and shims"
    assert len(BY_NAME) == len(DEPRECATED)


@pytest.mark.parametrize("old", list(READ))
def test_each_spelling_warns_with_its_row_and_still_works(old):
    read, new = READ[old]
    with pytest.warns(DeprecationWarning) as caught:
        value = read()
    assert [str(w.message) for w in caught] == [BY_NAME[old].message()]
    assert caught[0].filename == __file__  # attributed to the code that read it
    assert value == new()


def test_the_reference_errors_shim_writes_its_row():
    """`LosslessError.cells` lives in rheo_ref (which cannot import rheo): its text is the table's all the same."""
    err = _lossless_error()
    with pytest.warns(DeprecationWarning) as caught:
        assert err.cells == err.top_cells
    assert [str(w.message) for w in caught] == [BY_NAME["LosslessError.cells"].message()]


def test_the_deprecated_spellings_still_compute():
    with pytest.warns(DeprecationWarning, match="use rheo.total_variation"):
        assert rheo.lossless.planning.tv(A, B) == rheo.total_variation(A, B) == Fraction(1, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert rheo.tv(A, B) == Fraction(1, 4)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        rheo.nope  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'tv'"):  # a row of another module
        attribute("rheo.selfgate.matrix", "tv", {})
    with pytest.raises(AttributeError, match="no attribute 'nope'"):  # a deprecated module's unknown name
        rheo.family.nope  # noqa: B018
    assert Deprecated("a", "b", "9.9.9", "x.py").message() == "a is deprecated and will be removed in rheo 9.9.9; use b"
