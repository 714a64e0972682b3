"""The gate's sampling on a Dask cluster (rheo.lossless.cluster, `rheo.on_dask`, `rheo gate --scheduler`):
chunk seeds from the call's seed and the chunk's index only, so the rows and the verdict on a cluster are
the rows drawn in this process chunk by chunk (`chunked`), whatever the workers; a worker killed mid-chunk
has its chunk drawn again with the same seed (the verdict and every row unchanged); a served decoder's
driver runs as a child of the worker; bad arguments and a missing Dask are one line, exit 2."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import CASES, needs_env

import rheo
from rheo.cli.main import main
from rheo.lossless import cluster
from rheo.lossless.cluster import chunk_plan, chunk_seed, chunked, on_dask
from rheo.lossless.sequential import chunk_seed as look_seed
from rheo_ref.errors import CaseError, EnvironmentFailure, MissingDependencyError

distributed = pytest.importorskip("distributed")

CASE = rheo.load_case(str(CASES / "small.json"))
ALPHA, TV = 1e-3, 0.15


class Law:
    """A sampler drawing from an exact law (the target's: lossless; `bias` moves mass: lossy). With `marks` (a
    folder) it leaves `started-<pid>-<seed>` there as a chunk begins, and the first chunk drawn anywhere writes
    `held` (its pid and seed) and sleeps `hold` seconds before it draws: a worker to kill mid-chunk. Pickled by
    value to the workers (a class of a test module)."""

    def __init__(self, bias: float = 0.0, marks: str | None = None, hold: float = 0.0) -> None:
        self.bias, self.marks, self.hold = bias, marks, hold

    def __call__(self, case, seed, num_samples):
        if self.marks:
            Path(self.marks, f"started-{os.getpid()}-{seed}").touch()
            try:  # (the claim stays: one chunk in all is held)
                os.close(os.open(Path(self.marks, "claimed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass
            else:
                Path(self.marks, "held.tmp").write_text(f"{os.getpid()} {seed}")
                os.rename(Path(self.marks, "held.tmp"), Path(self.marks, "held"))
                time.sleep(self.hold)
        law = rheo.target_law(case, case.tokens)
        keys = sorted(law)
        weights = [float(law[k]) for k in keys]
        weights[0] += self.bias
        return random.Random(seed).choices(keys, weights, k=num_samples)


def _by_value():
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def client():
    _by_value()
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0"
        ) as local,
        distributed.Client(local) as c,
    ):
        yield c


def test_chunks_depend_on_the_seed_and_index_only():
    plan = chunk_plan(7, 1001, 250)
    assert [k for _, k in plan] == [250, 250, 250, 250, 1]
    assert [s for s, _ in plan] == [chunk_seed(7, i) for i in range(5)]
    assert len({s for s, _ in plan}) == 5 and all(0 <= s < 2**63 for s, _ in plan)
    # a look of the sequential gate is called with look_seed(seed, j); none of its chunks repeats the first look's
    first = {s for s, _ in chunk_plan(7, 4000, 250)}
    later = {s for j in range(1, 5) for s, _ in chunk_plan(look_seed(7, j), 4000, 250)}
    assert not first & later


def test_chunked_draws_each_chunk_with_its_own_seed():
    law = Law()
    rows = chunked(law, chunk=40)(CASE, 3, 100)
    want = law(CASE, chunk_seed(3, 0), 40) + law(CASE, chunk_seed(3, 1), 40) + law(CASE, chunk_seed(3, 2), 20)
    assert rows == [tuple(r) for r in want]


@pytest.mark.parametrize(
    "kwargs, says",
    [({"chunk": 0}, "chunk=0"), ({"chunk": 2.0}, "chunk=2.0"), ({"workers": 2}, "with scheduler='tcp://h:1'")],
)
def test_bad_arguments_are_one_line(kwargs, says):
    with pytest.raises(CaseError, match=r"allowed") as e:
        on_dask(Law(), "tcp://h:1", **kwargs)
    assert says in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(CaseError, match="tcp://HOST:PORT"):
        on_dask(Law(), "http://h:1")


def test_the_cluster_draws_the_rows_and_verdict_of_this_process(client):
    """Lossless and lossy: the same record (N, p-value, verdict) on two workers as chunk by chunk here."""
    for law, verdict in ((Law(), False), (Law(bias=0.5), True)):
        here = rheo.check_lossless(chunked(law, chunk=97), CASE, alpha=ALPHA, tv=TV, seed=11)
        with on_dask(law, client, chunk=97) as s:
            there = rheo.check_lossless(s, CASE, alpha=ALPHA, tv=TV, seed=11)
        assert there == here and here.rejected is verdict
    with on_dask(Law(), client, chunk=97) as s:  # the rows themselves, with a sequential gate's looks too
        assert s(CASE, 5, 300) == chunked(Law(), chunk=97)(CASE, 5, 300)
        seq = rheo.check_lossless(s, CASE, alpha=ALPHA, tv=TV, seed=5, sequential=True)
    assert seq == rheo.check_lossless(chunked(Law(), chunk=97), CASE, alpha=ALPHA, tv=TV, seed=5, sequential=True)


def test_a_sampler_error_on_a_worker_is_raised_as_it_is(client):
    def broken(case, seed, n):
        return [(0, 1.5)] * n

    with on_dask(broken, client, chunk=10) as s, pytest.raises(rheo.SamplerOutputError, match=r"1\.5"):
        s(CASE, 1, 25)


def test_a_killed_worker_changes_neither_the_samples_nor_the_verdict(client, tmp_path):
    """SIGKILL one worker's process while it draws a chunk: the scheduler draws that chunk again (same seed)
    on a live worker, and the record equals the undisturbed run's, drawn here chunk by chunk."""
    marks = tmp_path / "marks"
    marks.mkdir()
    law = Law(marks=str(marks), hold=60)
    undisturbed = rheo.check_lossless(chunked(Law(), chunk=150), CASE, alpha=ALPHA, tv=TV, seed=2)
    rows_here = chunked(Law(), chunk=150)(CASE, 2, undisturbed.n)
    out: dict = {}

    def run():
        with on_dask(law, client, chunk=150) as s:
            out["rows"] = s(CASE, 2, undisturbed.n)
            out["res"] = rheo.check_lossless(s, CASE, alpha=ALPHA, tv=TV, seed=2)

    pids = set(client.run(os.getpid).values())
    t = threading.Thread(target=run)
    t.start()
    held = marks / "held"
    deadline = time.monotonic() + 60
    while not held.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    victim_pid, victim_seed = map(int, held.read_text().split())
    assert victim_pid in pids
    os.kill(victim_pid, signal.SIGKILL)  # (it sleeps inside its chunk: killed mid-chunk)
    t.join(120)
    assert not t.is_alive()
    drawn_by = {int(p.name.split("-")[1]) for p in marks.glob("started-*") if int(p.name.split("-")[2]) == victim_seed}
    assert victim_pid in drawn_by and len(drawn_by) >= 2, "the killed worker's chunk was not drawn again elsewhere"
    assert out["rows"] == rows_here and out["res"] == undisturbed


def test_a_chunk_that_kills_every_worker_is_an_environment_failure(tmp_path):
    """With Dask's `allowed-failures` at 0, the first death of a chunk's worker gives the chunk up: one
    `EnvironmentFailure` (exit 1) naming the chunk, its seed and size, never a verdict on fewer samples."""
    import dask

    _by_value()
    marks = tmp_path / "marks"
    marks.mkdir()
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0"
        ) as local,
        distributed.Client(local) as c,
        on_dask(Law(marks=str(marks), hold=60), c, chunk=50) as s,
    ):
        caught: list = []
        t = threading.Thread(target=lambda: _catch(caught, s, CASE, 4, 120))
        t.start()
        deadline = time.monotonic() + 60
        while not (marks / "held").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        pid, seed = map(int, (marks / "held").read_text().split())
        os.kill(pid, signal.SIGKILL)
        t.join(60)
    assert not t.is_alive() and len(caught) == 1
    err = caught[0]
    assert isinstance(err, EnvironmentFailure) and err.exit_status == 1, err
    m = re.match(r"chunk (\d+) \(seed (\d+), (\d+) samples\): every worker that drew it died", str(err))
    assert m, err
    i, said, size = map(int, m.groups())
    assert said == chunk_seed(4, i) and size == min(50, 120 - 50 * i)  # (the killed one, or one queued on it)
    assert seed in {chunk_seed(4, j) for j in range(3)}


def _catch(caught: list, s, *args) -> None:
    try:
        s(*args)
    except Exception as e:
        caught.append(e)


def test_a_served_driver_runs_as_a_child_of_the_worker(client, tmp_path):
    """A served decoder's chunk on a worker: the worker starts the driver (`run_driver`), whose reply comes back."""
    probe = client.submit(_served_chunk, str(tmp_path), CASE, 4, 6, pure=False).result()
    assert probe["parent"] in set(client.run(os.getpid).values()) and probe["parent"] != os.getpid()
    assert probe["samples"] == [[4, i] for i in range(6)]


def _served_chunk(folder: str, case, seed: int, n: int) -> dict:
    from rheo.decoders.served import PYTHON_VAR, run_driver, table_request

    Path(folder, "fake_driver.py").write_text(
        "import json, os, sys\nr = json.load(sys.stdin)\n"
        "print(json.dumps({'parent': os.getppid(), 'samples': [[r['seed'], i] for i in range(r['num_samples'])]}))\n"
    )
    os.environ["PYTHONPATH"] = folder
    os.environ[PYTHON_VAR] = sys.executable
    return run_driver("x", "fake_driver", table_request(case, list(case.context), 2, seed, n, {}), timeout=60,
                      package="numpy")  # fmt: skip


def test_the_cli_scheduler_local_gives_the_verdict_of_the_chunks_here(tmp_path, capsys, monkeypatch):
    """`rheo gate CASE --sampler M:F --scheduler local --workers 2`: the record of the same chunks drawn here."""
    (tmp_path / "lawsampler.py").write_text(
        "import random, rheo\n"
        "def sample(case, seed, n):\n"
        "    law = rheo.target_law(case, case.tokens)\n"
        "    keys = sorted(law)\n"
        "    return random.Random(seed).choices(keys, [float(law[k]) for k in keys], k=n)\n"
    )
    monkeypatch.chdir(tmp_path)
    case = str(Path(__file__).parent / "cases" / "small.json")
    flags = ["--alpha", str(ALPHA), "--tv", str(TV), "--seed", "9"]
    code = main(["gate", case, "--sampler", "lawsampler:sample", *flags, "--scheduler", "local", "--workers", "2",
                 "--chunk", "120"])  # fmt: skip
    out = capsys.readouterr()
    assert code == 0, out.err
    report = json.loads(out.out)
    import lawsampler

    here = rheo.check_lossless(chunked(lawsampler.sample, chunk=120), CASE, alpha=ALPHA, tv=TV, seed=9)
    assert code == 0 and report["verdict"] == "pass" and (report["N"], report["p_value"]) == (here.n, here.p_value)
    assert report["scheduler"] == "local" and report["chunk"] == 120


@pytest.mark.parametrize(
    "flags, says",
    [
        (["--scheduler", "nonsense"], "--scheduler 'nonsense'; allowed: tcp://HOST:PORT"),
        (["--chunk", "10"], "--chunk 10 without --scheduler"),
        (["--scheduler", "local", "--chunk", "0"], "--chunk 0: allowed"),
        (["--scheduler", "tcp://127.0.0.1:1", "--workers", "2"], "a running cluster has its own workers"),
        (["--scheduler", "local", "--workers", "0"], "--workers"),
    ],
)
def test_bad_cli_flags_exit_2_with_one_line(flags, says, capsys):
    code = main(["gate", "tests/cases/small.json", "--decoder", "vllm", *flags])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and len(err) == 1 and says in err[0], err


def test_without_dask_the_gate_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'rheo\[dask\]'"):
        on_dask(Law(), "local")
    code = main(["gate", "tests/cases/small.json", "--decoder", "vllm", "--scheduler", "local"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "pip install 'rheo[dask]'" in err and len(err.splitlines()) == 1, err
    assert cluster.CHUNK >= 1


def _vllm_env(test):
    """`.venv-vllm` of this checkout, or an interpreter named by RHEO_SERVED_PYTHON (`rheo gate --python`)."""
    from rheo.decoders.served import PYTHON_VAR

    return test if os.environ.get(PYTHON_VAR) else needs_env("vllm")(test)


@pytest.mark.slow
@pytest.mark.lossless
@_vllm_env
def test_vllm_chunks_run_on_a_local_cluster(rheo_seed):
    """vLLM's sampler (its driver, one run a chunk, started by the workers) on a local cluster of 2 processes:
    the negative control (`synthetic=1,1`, exact TV 0.478) at δ = 0.3 is rejected, its record naming the cluster."""
    from rheo.decoders import DecoderRun
    from rheo.decoders.gate import gate_hf

    c = rheo.load_case(str(CASES / "hf.json"))
    run = DecoderRun.parse("vllm", {"k": 2, "synthetic": "1,1"})
    r = gate_hf(c, run, alpha=1e-3, tv=0.3, seed=rheo_seed, tokens=2, scheduler="local", chunk=40)
    assert r["exact_tv_float"] > 0.3 and r["verdict"] == "REJECT" and r["scheduler"] == "local" and r["chunk"] == 40, r
