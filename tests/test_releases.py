"""`rheo releases` (rheo/cli/releases.py): argument parsing, refusing a bad range, the bisect on a stubbed verdict,
the cache layout and the sampler-file diff on wheels made here. Nothing here downloads: every pip call is refused
(the `no_pip` fixture); the one test that runs the real matrix (flashspec, every release) is `slow`."""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path

import pytest

from rheo.cli import releases as R
from rheo.cli.main import build_parser, main
from rheo_ref.errors import CaseError

INDEX = ["0.1.3", "0.1.4", "0.1.5", "0.2.0", "0.3.0", "0.3.1"]


@pytest.fixture(autouse=True)
def no_pip(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def refused(args: list[str], *, what: str) -> str:
        raise AssertionError(f"a test ran pip {args} ({what})")

    monkeypatch.setattr(R, "_pip", refused)
    monkeypatch.setenv("RHEO_CACHE", str(tmp_path / "cache"))


def test_parser_reads_the_flags() -> None:
    args = build_parser().parse_args(
        ["releases", "--decoder", "flashspec", "--versions", "0.3.0,0.3.1", "--rows", "all", "--bisect", "0.1.3..0.3.1"]
    )
    assert (args.decoder, args.versions, args.rows, args.bisect, args.seeds) == (
        "flashspec", "0.3.0,0.3.1", "all", "0.1.3..0.3.1", None
    )  # fmt: skip
    assert args.func is R.run_releases
    assert build_parser().parse_args(["releases", "--decoder", "sglang"]).rows == "quick"


@pytest.mark.parametrize(
    "text, names",
    [
        ("0.3.1..0.1.3", "is not before"),
        ("0.2.0..0.2.0", "is not before"),
        ("0.1.3-0.3.1", "allowed: A..B"),
        ("0.1.3..", "allowed: A..B"),
        ("0.1.3..9.9.9", "9.9.9 is not on the index"),
    ],
)
def test_a_bad_bisect_range_is_refused(text: str, names: str) -> None:
    with pytest.raises(CaseError, match=names):
        R.parse_bisect(text, INDEX)


def test_a_good_bisect_range() -> None:
    assert R.parse_bisect(" 0.1.4 .. 0.3.0 ", INDEX) == ("0.1.4", "0.3.0")


def test_bad_range_exits_2_before_any_work(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(R, "index_versions", lambda package: list(INDEX))
    monkeypatch.setattr(R, "ensure_release", lambda *a: pytest.fail("built an environment for a refused range"))
    assert main(["releases", "--decoder", "flashspec", "--bisect", "0.3.1..0.1.3"]) == 2
    assert "0.3.1 is not before 0.1.3" in capsys.readouterr().err
    assert main(["releases", "--decoder", "vllm-ish"]) == 2
    assert "allowed: vllm, sglang, eagle-harness, flashspec" in capsys.readouterr().err
    assert main(["releases", "--decoder", "flashspec", "--rows", "no such row"]) == 2


def test_select_versions() -> None:
    assert R.select_versions(INDEX, None) == INDEX
    assert R.select_versions(INDEX, ">=0.1.5,<0.3") == ["0.1.5", "0.2.0"]
    assert R.select_versions(INDEX, "0.3.1, 0.1.3") == ["0.1.3", "0.3.1"]
    with pytest.raises(CaseError, match=r"0\.4\.0 not on the index"):
        R.select_versions(INDEX, "0.3.1,0.4.0")
    with pytest.raises(CaseError, match="matches no release"):
        R.select_versions(INDEX, ">=1.0")


@pytest.mark.parametrize("n", [2, 3, 5, 8, 13])
def test_bisect_finds_the_first_change_in_few_calls(n: int) -> None:
    versions = [f"0.{i}.0" for i in range(n)]
    for first in range(1, n):  # the verdict changes at versions[first]
        calls: list[str] = []

        def verdict(v: str, first: int = first, calls: list[str] = calls) -> str:
            calls.append(v)
            return "REJECT" if versions.index(v) >= first else "pass"

        out = R.bisect(versions, verdict)
        assert out["changed"] and (out["before"], out["first"]) == (versions[first - 1], versions[first])
        assert len(calls) == len(set(calls)) <= 2 + math.ceil(math.log2(n))  # each release judged once


def test_bisect_without_a_change_and_with_too_few() -> None:
    out = R.bisect(INDEX, lambda v: ("pass",))
    assert out == {"changed": False, "judged": [INDEX[0], INDEX[-1]]}
    with pytest.raises(CaseError, match="two releases"):
        R.bisect(["0.1.0"], lambda v: 0)


def test_cache_layout(tmp_path: Path) -> None:
    root = tmp_path / "cache" / "releases"
    assert R.cache_root() == root
    assert R.env_dir("flashspec", "0.3.1") == root / "flashspec-0.3.1"
    assert R.base_dir("eagle-harness") == root / "eagle-harness-base"
    assert R.wheel_dir() == root / "wheels"
    a = R.verdict_file("flashspec", "0.3.1", "quick", (1, 2))
    assert a.parent == root / "flashspec-0.3.1" and a.name.startswith("verdicts-")
    assert a != R.verdict_file("flashspec", "0.3.1", "all", (1, 2))
    assert a != R.verdict_file("flashspec", "0.3.1", "quick", (1, 3))
    assert a == R.verdict_file("flashspec", "0.3.1", "quick", (1, 2))


def test_cached_verdicts_are_read_not_rerun(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    monkeypatch.setattr(R, "index_versions", lambda package: list(INDEX))
    monkeypatch.setattr(R, "ensure_release", lambda *a: pytest.fail("built an environment for a cached verdict"))
    for v, verdicts in (("0.3.0", ["pass", "pass"]), ("0.3.1", ["REJECT", "REJECT"])):
        record = {"decoder": "flashspec", "package": "flashspec", "version": v, "setting": "s", "verdicts": verdicts,
                  "exact_tv_float": 0.0, "N": 10, "detectable_tv": 0.1, "seconds": [1.0, 1.0], "cause": "",
                  "as_expected": True, "release": v, "sampler_files_vs_pin": {"pin": "0.3.1", "changed": []}}  # fmt: skip
        path = R.verdict_file("flashspec", v, "quick", (1, 2))
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps([record]))
    out_json = tmp_path / "out.json"
    assert main(["releases", "--decoder", "flashspec", "--versions", "0.3.0,0.3.1", "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "| flashspec | same | flashspec 0.3.0 | s |" in out and "**REJECT**, **REJECT**" in out
    assert [r["release"] for r in json.loads(out_json.read_text())] == ["0.3.0", "0.3.1"]


def _wheel(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def test_sampler_diff_names_the_file_and_line(tmp_path: Path) -> None:
    f = R.SAMPLER_FILES["flashspec"]
    body = "".join(f"line {i}\n" for i in range(1, 21))
    old = _wheel(tmp_path / "flashspec-0.1.0-py3-none-any.whl", {f[0]: body, f[1]: "same\n", f[2]: "gone\n"})
    new = _wheel(
        tmp_path / "flashspec-0.2.0-py3-none-any.whl",
        {f[0]: body.replace("line 12\n", "line twelve\n"), f[1]: "same\n", f[3]: "new\n"},
    )
    diffs = {d["file"]: d for d in R.sampler_diff("flashspec", old, new)}
    assert set(diffs) == {f[0], f[2], f[3]}  # f[1] is the same in both
    assert (diffs[f[2]]["change"], diffs[f[3]]["change"]) == ("removed", "added")
    hunk = diffs[f[0]]["diff"]
    assert "@@ -11,3 +11,3 @@" in hunk and "-line 12" in hunk and "+line twelve" in hunk
    digest_old, digest_new = R.sampler_digest("flashspec", old), R.sampler_digest("flashspec", new)
    assert digest_old[f[1]] == digest_new[f[1]] and digest_old[f[0]] != digest_new[f[0]]
    assert digest_old[f[3]] is None and digest_new[f[2]] is None


def test_rows_separated_by_semicolons_keep_their_commas() -> None:
    from rheo.decoders import decoders

    table = decoders()["flashspec"].table
    rows = R.select_rows(table, "rejection T=1, batch 64; control: typical top_p=0.9")
    assert [r.setting for r in rows] == ["rejection T=1, batch 64", "control: typical top_p=0.9"]
    assert len(R.select_rows(table, "quick")) == len(table.select("quick"))
    with pytest.raises(CaseError, match="no row"):
        R.select_rows(table, "rejection T=1; no such row")
    with pytest.raises(CaseError, match="empty setting"):
        R.select_rows(table, "rejection T=1, batch 64;;")


def test_outcome_tells_verdicts_errors_and_rows_apart() -> None:
    ok = {"setting": "a", "verdicts": ["pass", "pass"]}
    assert R.outcome([ok]) != R.outcome([{**ok, "verdicts": ["pass", "REJECT"]}])
    assert R.outcome([ok]) != R.outcome([{"setting": "a", "error": "ImportError"}])
    assert R.outcome([ok]) != R.outcome([{**ok, "setting": "b"}])


def test_pins_and_link_dist(tmp_path: Path) -> None:
    import importlib.metadata as md

    pinned = dict(R.pins("flashspec"))
    assert pinned["flashspec"] and "torch" not in pinned  # torch: constraints.txt's, never envs/
    assert R.torch_pin().count(".") == 2
    site = tmp_path / "site"
    site.mkdir()
    dist = md.distribution("packaging")
    tops = R.link_dist(dist, site)
    assert "packaging" in tops and (site / "packaging").is_symlink()
    assert (site / "packaging" / "version.py").is_file()


@pytest.mark.slow
@pytest.mark.served
def test_flashspec_every_release(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The real matrix: every flashspec release on the index, quick rows, seeds 1,2 (downloads each wheel once).
    The pinned release's rows give the verdicts their exact TVs promise."""
    monkeypatch.undo()  # pip and the user's cache allowed
    out = tmp_path / "releases.json"
    main(["releases", "--decoder", "flashspec", "--rows", "quick", "--json", str(out)])
    records = json.loads(out.read_text())
    pinned = [r for r in records if r["release"] == "0.3.1"]
    assert pinned and all(r["as_expected"] for r in pinned)
    assert {r["release"] for r in records} >= {"0.3.0", "0.3.1"}


@pytest.mark.slow
@pytest.mark.served
def test_sglang_own_processor_rows_on_0_5_21_and_0_5_22(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The command docs/THIRD_PARTY.md quotes ("SGLang's own processors and the NaN q row, by release"), as a user runs
    it: `rheo releases --decoder sglang --versions 0.5.21,0.5.22 --rows "min-p 0.35;frequency 1/7;logit bias 3:4
    0:1/2;q-row-nan" --seeds 1,2` (downloads two wheels once; about 5 minutes): min-p and the frequency penalty are
    rejected on both seeds of both releases, the logit bias and the NaN q rows pass."""
    monkeypatch.undo()  # pip and the user's cache allowed
    out = tmp_path / "releases.json"
    rows = "min-p 0.35;frequency 1/7;logit bias 3:4 0:1/2;q-row-nan"
    main(["releases", "--decoder", "sglang", "--versions", "0.5.21,0.5.22", "--rows", rows, "--seeds", "1,2",
          "--json", str(out)])  # fmt: skip
    records = json.loads(out.read_text())
    assert sorted((r["release"], r["setting"]) for r in records) == sorted(
        (v, s) for v in ("0.5.21", "0.5.22") for s in rows.split(";")
    )
    for r in records:
        want = ["REJECT", "REJECT"] if r["setting"] in ("min-p 0.35", "frequency 1/7") else ["pass", "pass"]
        assert r["verdicts"] == want and r["as_expected"], r


@pytest.mark.slow
@pytest.mark.served
def test_vllm_0_24_to_0_32_draft_probs_and_synthetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The command docs/THIRD_PARTY.md quotes for vLLM's earlier releases, as a user runs it: `rheo releases --decoder
    vllm --versions '>=0.24.0,<0.33' --rows 'draft-probs;synthetic' --seeds 1,2` (eleven 310-330 MB wheels, downloaded
    once; about 12 minutes): every release drives the current driver unmodified, passes the lossless row and rejects
    its synthetic method, and the synthetic samples fit rheo's law of 0.33.0's code (own-law p >= 1e-3)."""
    monkeypatch.undo()  # pip and the user's cache allowed
    out = tmp_path / "releases.json"
    main(["releases", "--decoder", "vllm", "--versions", ">=0.24.0,<0.33", "--rows", "draft-probs;synthetic", "--seeds",
          "1,2", "--json", str(out)])  # fmt: skip
    records = json.loads(out.read_text())
    releases = {r["release"] for r in records}
    assert releases == {"0.24.0", "0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0",
                        "0.31.0", "0.32.0"}  # fmt: skip
    for r in records:
        want = ["pass", "pass"] if r["setting"] == "draft-probs" else ["REJECT", "REJECT"]
        assert r["verdicts"] == want and r["as_expected"], r
        assert r["setting"] == "draft-probs" or min(r["own_law_p"]) >= 1e-3, r
