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
