"""Ctrl-C ends the compiled step loops promptly, even when one arrival's run is thousands of steps.

With ``max_num_batched_tokens=1`` a prompt of p tokens is p prefill steps, so the loop runs between two arrivals
for longer than the signal check's period; the check's count is kept across ``feed``'s runs, a loop on a worker
thread (the no-cache run beside, ``PCS_THREADS=on``) stops when the main thread's loop took the signal, and a stop
in a call made inline (``PCS_THREADS=off``) is raised at once, not at the caller's next join
(``pcs/engine/_stepsched.c`` ``check_signals``, ``pcs.beside.Beside``). A real process, SIGINT sent to itself 0.5 s
after the first ``feed`` began: it must end with KeyboardInterrupt within a few seconds, where the uninterrupted
run takes ten times longer (the run's own length is measured in the same test, so a slow machine scales both).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

DRIVER = textwrap.dedent("""
    import os, signal, sys, threading, time
    import pcs
    from pcs.engine import stepnative
    from pcs.engine.schedconfig import SchedulerConfig

    # a test runner started in the background (nohup, CI) ignores SIGINT, and its children inherit that; a
    # user's shell does not: Python's own Ctrl-C handler, as an interactive process has it
    signal.signal(signal.SIGINT, signal.default_int_handler)
    trace, interrupt = sys.argv[1], sys.argv[2] == "1"
    began = threading.Event()
    real = stepnative.NativeStepEngine.feed

    def feed(self, chunk):
        began.set()
        return real(self, chunk)

    stepnative.NativeStepEngine.feed = feed
    sent = []

    def ctrl_c():
        began.wait()
        time.sleep(0.5)
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    if interrupt:
        threading.Thread(target=ctrl_c, daemon=True).start()
    t0 = time.monotonic()
    try:
        pcs.replay(trace, tiers=["gpu=300blocks", "cpu=900blocks"], policy="lru",
                   scheduler=SchedulerConfig(max_num_batched_tokens=1, max_num_seqs=1))
    except KeyboardInterrupt:
        print("interrupted", time.monotonic() - sent[0])
    else:
        print("finished", time.monotonic() - t0)
""")


@pytest.fixture(scope="module")
def long_trace(tmp_path_factory):
    """4,000 synthetic requests: with one token per step, tens of millions of steps."""
    d = tmp_path_factory.mktemp("steps")
    subprocess.run([sys.executable, "-m", "pcs", "trace", "synth", d / "t.jsonl", "--requests", "4000", "-q"],
                   check=True, capture_output=True, cwd=ROOT)
    return d / "t.jsonl"


def _run(trace: Path, threads: str, interrupt: bool) -> tuple[str, float]:
    env = dict(os.environ, PCS_THREADS=threads, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", DRIVER, str(trace), "1" if interrupt else "0"], env=env,
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    word, seconds = out.stdout.split()
    return word, float(seconds)


@pytest.mark.parametrize("threads", ["off", "on"])
def test_ctrl_c_ends_the_step_loops(long_trace, threads):
    word, whole = _run(long_trace, threads, interrupt=False)
    assert word == "finished"
    word, after = _run(long_trace, threads, interrupt=True)
    assert word == "interrupted"
    # the loops' part after the signal is most of the run (it began at the first feed, + 0.5 s); a stop within
    # 0.2 s on a quiet machine, bounded here by a tenth of the whole run for a loaded one
    assert after < max(whole / 10, 0.5), (after, whole)


OTHER_THREAD = textwrap.dedent("""
    import json, os, signal, sys, threading, time
    import pcs
    from pcs.engine import stepnative
    from pcs.engine.schedconfig import SchedulerConfig

    signal.signal(signal.SIGINT, signal.default_int_handler)
    trace = sys.argv[1]
    kw = dict(tiers=["gpu=300blocks", "cpu=900blocks"], policy="lru",
              scheduler=SchedulerConfig(max_num_batched_tokens=1, max_num_seqs=1))
    fed = {}                                   # thread name -> the monotonic time its replay's first feed began
    real = stepnative.NativeStepEngine.feed

    def feed(self, chunk):
        fed.setdefault(threading.current_thread().name, time.monotonic())
        return real(self, chunk)

    stepnative.NativeStepEngine.feed = feed
    other = {}

    def replay_other():
        try:
            other["summary"] = json.dumps(pcs.replay(trace, **kw).summary.to_dict(), sort_keys=True, default=str)
        except BaseException as exc:
            other["error"] = repr(exc)
        other["ended"] = time.monotonic()

    t = threading.Thread(target=replay_other, name="other")
    t.start()
    while "other" not in fed:
        time.sleep(0.005)
    sent = []

    def ctrl_c():
        while "MainThread" not in fed:
            time.sleep(0.005)
        time.sleep(0.2)
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=ctrl_c, daemon=True).start()
    try:
        pcs.replay(trace, **kw)
        main = "finished"
    except KeyboardInterrupt:
        main = "interrupted"
    t.join()
    clean = json.dumps(pcs.replay(trace, **kw).summary.to_dict(), sort_keys=True, default=str)
    print(json.dumps({"main": main, "other_error": other.get("error"), "other_equal": other.get("summary") == clean,
                      "other_ran_past_the_signal": bool(sent) and other["ended"] > sent[0]}))
""")


def test_a_stop_of_one_replay_leaves_another_threads_replay_whole(long_trace):
    # Ctrl-C ends the main thread's replay; a replay another thread runs at the time goes on to the result it gives
    # alone (a stop count kept for the whole process ended it with "RuntimeError: the step loop stopped"; now only
    # the run's own no-cache twin stops with it: _stepsched.c stop_with)
    env = dict(os.environ, PCS_THREADS="on", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", OTHER_THREAD, str(long_trace)], env=env, capture_output=True,
                         text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["other_ran_past_the_signal"], got      # the case this test is for: both ran when the signal came
    assert got == {"main": "interrupted", "other_error": None, "other_equal": True, "other_ran_past_the_signal": True}


TWIN = textwrap.dedent("""
    import json, os, signal, sys, threading, time
    import pcs
    from pcs.engine import stepnative
    from pcs.engine.schedconfig import SchedulerConfig

    signal.signal(signal.SIGINT, signal.default_int_handler)
    trace, late = sys.argv[1], sys.argv[2] == "late"
    began, twin = threading.Event(), {}
    real_feed, real_close = stepnative.NativeStepEngine.feed, stepnative.NativeStepEngine.close

    def watched(real, name):
        def call(self, *a):
            if not self.no_cache:
                began.set()
                return real(self, *a)
            if late and name == "feed" and not twin.get("delayed"):
                twin["delayed"] = True
                time.sleep(0.6)              # the twin's first feed begins after the run's loop took the signal
            try:
                return real(self, *a)
            except BaseException as exc:
                twin["error"] = repr(exc)
                raise
            finally:
                twin["ended"] = time.monotonic()
        return call

    stepnative.NativeStepEngine.feed = watched(real_feed, "feed")
    stepnative.NativeStepEngine.close = watched(real_close, "close")
    sent = []

    def ctrl_c():
        began.wait()
        time.sleep(0.2)
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=ctrl_c, daemon=True).start()
    try:
        pcs.replay(trace, tiers=["gpu=300blocks", "cpu=900blocks"], policy="lru",
                   scheduler=SchedulerConfig(max_num_batched_tokens=1, max_num_seqs=1))
        main = "finished"
    except KeyboardInterrupt:
        main = "interrupted"
    print(json.dumps({"main": main, "twin_stopped": "the step loop stopped" in twin.get("error", ""),
                      "twin_ran_to_the_signal": bool(sent) and twin.get("ended", 0) >= sent[0]}))
""")


@pytest.mark.parametrize("late", ["", "late"])
def test_a_stop_of_the_run_stops_its_no_cache_twin(long_trace, late):
    # the run's no-cache twin, fed and closed on a worker beside it, stops with it (RuntimeError at its next signal
    # check, dropped for the KeyboardInterrupt) instead of running to its end while the stopped call waits for it --
    # also when its feed begins only after the run's loop took the signal ("late": it measured from its own start
    # and missed it)
    env = dict(os.environ, PCS_THREADS="on", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", TWIN, str(long_trace), late or "-"], env=env, capture_output=True,
                         text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"main": "interrupted", "twin_stopped": True, "twin_ran_to_the_signal": True}
