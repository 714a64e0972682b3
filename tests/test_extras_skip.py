"""tests/conftest.py skips a test that needs an extra that is not installed, with the reason and the
install line: at import (the module), in a fixture, in the test; another missing module is still an error;
and under RHEO_ALL_EXTRAS=1 (`make test`, which installs every extra) nothing is skipped for one. Run on a
copy of the conftest in a fresh pytest process where torch and transformers are refused at import."""

from __future__ import annotations

from pathlib import Path

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).with_name("conftest.py")
REFUSE = """

import sys as _sys


class _Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("torch", "transformers"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


_sys.meta_path.insert(0, _Refuse())
"""
MODULES = {
    "test_imports_torch": "import torch\n\n\ndef test_a():\n    pass\n",
    "test_needs_transformers": "def test_b():\n    import transformers.generation\n",
    "test_fixture": (
        "import pytest\n\n\n@pytest.fixture\ndef lm():\n    import torch\n\n\ndef test_c(lm):\n    pass\n\n\n"
        "def test_plain():\n    pass\n"
    ),
    "test_not_an_extra": "import rheo_no_such_module_xyz\n\n\ndef test_d():\n    pass\n",
}


def _run(pytester, monkeypatch, strict: bool):
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8") + REFUSE)
    pytester.makepyfile(**MODULES)
    if strict:
        monkeypatch.setenv("RHEO_ALL_EXTRAS", "1")
    else:
        monkeypatch.delenv("RHEO_ALL_EXTRAS", raising=False)
    return pytester.runpytest_subprocess("-rs", "-p", "no:cacheprovider", "--continue-on-collection-errors")


def test_a_missing_extra_skips_with_its_install_line(pytester, monkeypatch):
    result = _run(pytester, monkeypatch, strict=False)
    result.assert_outcomes(passed=1, skipped=3, errors=1)
    out = result.stdout.str()
    assert "SKIPPED [2] conftest.py" in out and "needs torch: pip install -c constraints.txt -e '.[fast]'" in out, out
    assert "needs transformers: pip install -c constraints.txt -e '.[hf]'" in out
    assert "No module named 'rheo_no_such_module_xyz'" in out


def test_with_every_extra_required_a_missing_one_fails(pytester, monkeypatch):
    result = _run(pytester, monkeypatch, strict=True)
    result.assert_outcomes(passed=1, failed=1, errors=3)
    assert "needs torch" not in result.stdout.str()
