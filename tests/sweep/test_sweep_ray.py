"""--ray: the same rows as --jobs 1 on a local Ray (2 CPUs, started here); the trace is put into the object
store once, not shipped with each task. Skipped only where Ray is not installed (.ci/run installs the extra)."""
from __future__ import annotations

import pytest

ray = pytest.importorskip("ray")

from pathlib import Path  # noqa: E402

from pcs.sweep import read_results, run_sweep  # noqa: E402

DOZEN = Path(__file__).resolve().parent / "dozen.toml"      # 12 replay points on a 200-request sample


@pytest.fixture(scope="module")
def dozen_plan() -> Path:
    return DOZEN


@pytest.fixture(scope="module")
def dozen_rows(tmp_path_factory) -> list[dict]:
    """The dozen plan's rows run in this process (--jobs 1)."""
    return read_results(run_sweep(DOZEN, tmp_path_factory.mktemp("jobs1"), jobs=1).out).to_pylist()


@pytest.fixture(scope="module")
def local_ray():
    import logging

    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR)
    yield
    ray.shutdown()


def test_ray_gives_the_same_rows_and_puts_the_trace_once(local_ray, dozen_plan, dozen_rows, tmp_path, monkeypatch):
    puts = []
    real_put = ray.put

    def counting_put(value, *args, **kwargs):
        puts.append(type(value).__name__)
        return real_put(value, *args, **kwargs)

    monkeypatch.setattr(ray, "put", counting_put)
    run = run_sweep(dozen_plan, tmp_path, ray="local")
    assert (run.backend, run.ran, run.failed) == ("ray", 12, 0)
    assert puts == ["LoadedTrace"]                 # one trace, one put, for all 12 tasks
    assert read_results(tmp_path).to_pylist() == dozen_rows
    assert ray.is_initialized()                    # the test's Ray: the sweep did not shut it down


def test_ray_and_jobs_together_are_refused(local_ray, dozen_plan, tmp_path):
    with pytest.raises(ValueError, match="not both"):
        run_sweep(dozen_plan, tmp_path, jobs=2, ray="local")


def test_a_signal_raised_inside_ray_wait_reaches_the_cli_unwrapped(local_ray, dozen_plan, tmp_path, monkeypatch):
    # SIGTERM's handler (pcs.cli.common.unwind_on_signals) raises Terminated; when it runs inside Ray's C code
    # (ray.wait checks signals) Ray hands back a SystemError caused by it, which the CLI took for a bug in pcs
    # (exit 1, traceback). run_ray re-raises the cause: the CLI then prints one line and exits 143.
    from pcs.cli.common import Terminated

    def wait(*args, **kwargs):
        raise SystemError("returned a result with an exception set") from Terminated(15)

    monkeypatch.setattr(ray, "wait", wait)
    with pytest.raises(Terminated):
        run_sweep(dozen_plan, tmp_path, ray="local")


def test_connecting_keeps_the_stop_handlers(monkeypatch):
    # ray.init installs its own SIGTERM handler (it printed a dump and exited 1); _connect puts back what
    # was there before, so the CLI's handler still unwinds the run
    import signal

    from pcs.sweep import backends

    def mine(signum, frame):
        pass

    def fake_init(**kwargs):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    old = signal.signal(signal.SIGTERM, mine)
    try:
        monkeypatch.setattr(ray, "is_initialized", lambda: False)
        monkeypatch.setattr(ray, "init", fake_init)
        assert backends._connect("local", quiet=True) is True
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, old)
