"""A Ctrl-C during the first pcs call of a process -- while it imports numpy, pyarrow ... on first use -- raises
``KeyboardInterrupt`` and leaves no package half-initialised: the heavy imports run on the main thread with the
stop signals held (pcs/_heldimport.py), and a signal that came is raised once the import has finished.

Deterministic: the signal is sent from inside the import itself (a fake package's body, or an import hook that
sends it when numpy imports numpy.linalg), in a subprocess, so this process's numpy is not touched.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.helpers import ROOT


def _run(tmp_path, script: str) -> list[str]:
    path = tmp_path / "script.py"
    # Python leaves SIGINT ignored in a process started with it ignored (a background job of a non-interactive
    # shell, as CI runs the suite): the scripts set the handler that raises KeyboardInterrupt themselves.
    path.write_text("import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
                    + textwrap.dedent(script))
    env = {"PYTHONPATH": f"{ROOT}:{tmp_path}", "PCS_THREADS": "off", "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_a_signal_inside_a_heavy_import_is_raised_after_it(tmp_path):
    # The fake package counts its runs in a module of its own (as numpy's compiled core, loaded once) and sends
    # itself SIGINT half-way: without the hold the handler raises in its body (done never set) and the next
    # import runs the body again (count 2); with it, the import finishes (count 1), KeyboardInterrupt follows,
    # and the next import -- here on a worker thread -- hands back the finished module.
    pkg = tmp_path / "fakeheavy"
    pkg.mkdir()
    (tmp_path / "fakeheavy_count.py").write_text("n = 0\n")
    (pkg / "__init__.py").write_text(textwrap.dedent("""\
        import os, signal
        import fakeheavy_count
        fakeheavy_count.n += 1
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100000):
            pass
        from fakeheavy import sub
        done = True
        """))
    (pkg / "sub.py").write_text("x = 1\n")
    out = _run(tmp_path, """\
        import pcs, pcs._heldimport
        pcs._heldimport.HEAVY.add("fakeheavy")
        try:
            import fakeheavy
            print("finished")
        except KeyboardInterrupt:
            print("interrupted")
        import threading
        got = []
        t = threading.Thread(target=lambda: got.append(__import__("fakeheavy")))   # the next import: a worker's
        t.start()
        t.join()
        import fakeheavy, fakeheavy_count, sys
        assert got == [fakeheavy]
        print(fakeheavy.done, fakeheavy_count.n, fakeheavy.sub.x, sys.modules["fakeheavy"] is fakeheavy,
              type(fakeheavy.__loader__).__name__)
        """)
    assert out == ["interrupted", "True", "1", "1", "True", "SourceFileLoader"]


def test_ctrl_c_in_the_first_replays_numpy_import_leaves_numpy_whole(tmp_path):
    # An import hook after pcs's sends SIGINT when numpy imports numpy.linalg (after its compiled core, which a
    # process cannot initialise twice, has loaded; numpy 2.4), inside the first
    # pcs.replay: that call raises KeyboardInterrupt; numpy is whole afterwards (numpy.matrix, the attribute the
    # reviewer's broken process lacked) and the next replay runs: 8 requests of mooncake_conv_8.jsonl.
    trace = ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl"
    out = _run(tmp_path, f"""\
        import os, signal, sys
        import pcs

        class Kick:
            sent = False
            def find_spec(self, name, path=None, target=None):
                if name == "numpy.linalg" and not Kick.sent:
                    Kick.sent = True
                    os.kill(os.getpid(), signal.SIGINT)
                return None

        sys.meta_path.insert(1, Kick())
        assert "numpy" not in sys.modules
        try:
            pcs.replay({str(trace)!r})
            print("finished")
        except KeyboardInterrupt:
            print("interrupted")
        import numpy
        print(Kick.sent, hasattr(numpy, "matrix"), pcs.replay({str(trace)!r}).summary.requests)
        """)
    assert out == ["interrupted", "True", "True", "8"]


def test_import_pcs_does_not_import_numpy(tmp_path):
    out = _run(tmp_path, """\
        import sys, pcs
        print("numpy" in sys.modules, "pyarrow" in sys.modules)
        """)
    assert out == ["False", "False"]
