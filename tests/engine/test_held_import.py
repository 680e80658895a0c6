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


def _fake_heavy(tmp_path) -> None:
    """A fake heavy package that counts its runs in a module of its own (as numpy's compiled core, loaded once) and
    sends itself SIGINT half-way through its body."""
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


def test_a_signal_inside_a_held_import_is_raised_after_it(tmp_path):
    # Without the hold the handler raises in the fake package's body (done never set, the package out of
    # sys.modules) and the next import runs the body again (count 2); with it, the import finishes (count 1) and
    # KeyboardInterrupt follows, the whole module in sys.modules; the next import -- here on a worker thread --
    # finds it there.
    _fake_heavy(tmp_path)
    out = _run(tmp_path, """\
        import sys
        from pcs._heldimport import held_import
        try:
            held_import("fakeheavy")
            print("finished")
        except KeyboardInterrupt:
            print("interrupted")
        import threading
        got = []
        t = threading.Thread(target=lambda: got.append(held_import("fakeheavy")))   # the next import: a worker's
        t.start()
        t.join()
        import fakeheavy, fakeheavy_count
        assert got == [fakeheavy]
        print(fakeheavy.done, fakeheavy_count.n, fakeheavy.sub.x, sys.modules["fakeheavy"] is fakeheavy,
              type(fakeheavy.__loader__).__name__)
        """)
    assert out == ["interrupted", "True", "1", "1", "True", "SourceFileLoader"]


def test_a_users_own_imports_probes_and_handler_see_no_change_after_import_pcs(tmp_path):
    # After import pcs: a find_spec probe of a package not yet imported imports nothing and hands back the path
    # finder's own loader (a SourceFileLoader; pkgutil.get_loader the same), and the user's own import of the
    # fake package runs unheld, as without pcs: their own non-raising SIGINT handler is called inside the body
    # with its frame (the package's module body, "<module>") -- once per signal, two signals sent -- and a
    # re-import after removing the package from sys.modules runs the body again (count 2), as Python does.
    _fake_heavy(tmp_path)
    (tmp_path / "fakeheavy" / "__init__.py").write_text(textwrap.dedent("""\
        import os, signal
        import fakeheavy_count
        fakeheavy_count.n += 1
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
        done = True
        """))
    out = _run(tmp_path, """\
        import importlib.abc, importlib.machinery, importlib.util, pkgutil, signal, sys, warnings
        import pcs
        spec = importlib.util.find_spec("fakeheavy")
        print("fakeheavy" in sys.modules, type(spec.loader).__name__,
              isinstance(spec.loader, importlib.abc.Loader),
              isinstance(pkgutil.get_loader("fakeheavy"), importlib.machinery.SourceFileLoader))
        got = []
        signal.signal(signal.SIGINT, lambda s, frame: got.append(frame.f_code.co_name if frame else None))
        import fakeheavy, fakeheavy_count
        print(got, fakeheavy_count.n)
        del sys.modules["fakeheavy"]
        import fakeheavy
        print(fakeheavy_count.n, [f for f in sys.meta_path if type(f).__module__.startswith("pcs")])
        """)
    assert out == ["False", "SourceFileLoader", "True", "True", "['<module>',", "'<module>']", "1", "2", "[]"]


def test_ctrl_c_in_the_first_replays_numpy_import_leaves_numpy_whole(tmp_path):
    # An import hook after pcs's sends SIGINT when numpy imports numpy.linalg (after its compiled core, which a
    # process cannot initialise twice, has loaded; numpy 2.4), inside the first
    # pcs.replay: that call raises KeyboardInterrupt; numpy is whole afterwards (numpy.matrix, the attribute the
    # reviewer's broken process lacked) and the next replay runs: 8 requests of mooncake_conv_8.jsonl. A find_spec
    # probe of numpy in between (a global import hook once handed back a kept module there, and numpy's body ran
    # a second time: "The NumPy module was reloaded") warns nothing.
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
        import importlib.util, warnings
        warnings.simplefilter("error")
        print(importlib.util.find_spec("numpy") is not None)
        import numpy
        print(Kick.sent, hasattr(numpy, "matrix"), pcs.replay({str(trace)!r}).summary.requests)
        """)
    assert out == ["interrupted", "True", "True", "True", "8"]


def test_import_pcs_does_not_import_numpy(tmp_path):
    out = _run(tmp_path, """\
        import sys, pcs
        print("numpy" in sys.modules, "pyarrow" in sys.modules)
        """)
    assert out == ["False", "False"]


def test_a_module_another_thread_is_importing_is_waited_for(tmp_path, monkeypatch):
    # Thread A imports a module whose body waits on an event; thread B asks held_import for it meanwhile. Returning
    # what sys.modules holds then would hand B a module without its names (4 threads making a process's first
    # pcs.replay at once: "partially initialized module 'pcs.engine.api' has no attribute 'replay'"); B must wait
    # for A's import and see the whole module (value 42).
    import importlib
    import threading

    from pcs._heldimport import held_import

    (tmp_path / "slowbody_gate.py").write_text("import threading\nstarted = threading.Event()\n"
                                               "release = threading.Event()\n")
    (tmp_path / "slowbody.py").write_text("import slowbody_gate\nslowbody_gate.started.set()\n"
                                          "slowbody_gate.release.wait(30)\nvalue = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import slowbody_gate

    seen = []
    a = threading.Thread(target=importlib.import_module, args=("slowbody",))
    b = threading.Thread(target=lambda: seen.append(getattr(held_import("slowbody"), "value", None)))
    try:
        a.start()
        assert slowbody_gate.started.wait(30)
        b.start()
        b.join(0.3)                      # B is still waiting for A's import: nothing seen yet
        assert seen == []
        slowbody_gate.release.set()
        a.join(30)
        b.join(30)
        assert seen == [42]
    finally:
        slowbody_gate.release.set()
        for m in ("slowbody", "slowbody_gate"):
            sys.modules.pop(m, None)


def test_a_ctrl_c_while_waiting_for_another_threads_import_is_raised_at_once(tmp_path):
    # The main thread asks held_import for a module a worker thread is importing (its body waits 20 s on an event).
    # The main thread runs no module body while it waits, so nothing needs the stop signals held: a SIGINT 0.3 s
    # in is raised there at once (held, it came only when the worker's import ended, 20 s later).
    (tmp_path / "slowbody_gate.py").write_text("import threading\nstarted = threading.Event()\n"
                                               "release = threading.Event()\n")
    (tmp_path / "slowbody.py").write_text("import slowbody_gate\nslowbody_gate.started.set()\n"
                                          "slowbody_gate.release.wait(20)\nvalue = 42\n")
    out = _run(tmp_path, """\
        import importlib, os, signal, threading, time
        import slowbody_gate
        from pcs._heldimport import held_import
        threading.Thread(target=importlib.import_module, args=("slowbody",), daemon=True).start()
        slowbody_gate.started.wait(20)
        threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        t0 = time.monotonic()
        try:
            held_import("slowbody")
            print("returned")
        except KeyboardInterrupt:
            print("interrupted", time.monotonic() - t0 < 5)
        slowbody_gate.release.set()
        """)
    assert out == ["interrupted", "True"]
