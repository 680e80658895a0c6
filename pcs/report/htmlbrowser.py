"""Headless Chromium driven over the DevTools protocol on a pipe: load a page, watch it, screenshot it.

Used by the browser test of the HTML report (tests/report/test_html_browser.py)
and by the script that regenerates the screenshots in docs/
(docs/screenshots.py); nothing in ``pcs`` itself needs a browser.

The browser is Debian's ``chromium`` (``.ci/run`` installs it), started with
``--remote-debugging-pipe``: the DevTools protocol runs over file
descriptors 3 (commands in) and 4 (replies and events out) as JSON messages
ended by a NUL byte, so no port, no websocket library and no driver binary
are needed (protocol: the Chrome DevTools Protocol, "Target", "Page",
"Runtime", "Log", "Network" and "Emulation" domains).
"""
from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CHROMIUM_FLAGS", "find_chromium", "Browser", "PageRun", "load_page"]

#: Flags for a headless run on a shared build machine: no sandbox (root in a
#: container), no GPU, and none of the background traffic (QUIC, component
#: updates, sync, first-run pages) that would show up as network requests.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars", "--mute-audio", "--remote-debugging-pipe")


def find_chromium() -> str | None:
    """The Chromium executable (``$PCS_CHROMIUM``, then ``chromium``, ``chromium-browser``), or None."""
    env = os.environ.get("PCS_CHROMIUM")
    if env:
        return env if os.access(env, os.X_OK) else None
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """One headless Chromium process with a fresh profile; a context manager.

    Args:
        executable: the browser binary (default :func:`find_chromium`).
        timeout_s: seconds to wait for any one reply.
    Raises:
        RuntimeError: no Chromium found, or it exited / stopped answering.
    """

    def __init__(self, executable: str | None = None, timeout_s: float = 60.0) -> None:
        exe = executable or find_chromium()
        if exe is None:
            raise RuntimeError("no chromium executable found (apt-get install chromium, or set PCS_CHROMIUM)")
        self.timeout_s = timeout_s
        self._profile = tempfile.TemporaryDirectory(prefix="pcs-chromium-")
        cmd_r, self._cmd_w = os.pipe()  # we write commands, the browser reads fd 3
        self._out_r, out_w = os.pipe()  # the browser writes fd 4, we read

        def child_fds() -> None:  # runs in the child before exec: the pipe ends become fds 3 and 4
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (cmd_r, out_w)]  # out of the way of 3, 4
            for fd, want in zip(high, (3, 4)):
                os.dup2(fd, want)  # dup2 leaves the copy inheritable

        self.proc = subprocess.Popen([exe, *CHROMIUM_FLAGS, f"--user-data-dir={self._profile.name}",
                                      "about:blank"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=child_fds, close_fds=False)
        os.close(cmd_r)
        os.close(out_w)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict] = []

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Ask the browser to exit, then end it; remove the profile."""
        if self.proc.poll() is None:
            try:
                self.send("Browser.close")
            except (RuntimeError, OSError):
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for fd in (self._cmd_w, self._out_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self._profile.cleanup()

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._out_r], [], [], left)[0]:
                raise RuntimeError("chromium did not answer in time")
            chunk = os.read(self._out_r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe (it exited)")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send one command and wait for its reply; events read meanwhile go to :attr:`events`.

        Raises:
            RuntimeError: the protocol answered with an error, or no reply in time.
        """
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, session: str | None = None) -> dict:
        """Wait for the next event ``method`` (already received ones first); returns its params."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            for i, ev in enumerate(self.events):
                if ev.get("method") == method and (session is None or ev.get("sessionId") == session):
                    return self.events.pop(i).get("params", {})
            self.events.append(self._read_message(deadline))


@dataclass
class PageRun:
    """What one page load showed.

    Attributes:
        console_errors: console messages of level error, uncaught exceptions and log
            entries of level error, as text.
        failed_requests: requests that failed (URL and error text).
        requests: every URL the page asked for, the page itself first.
        value: the JSON value of the ``ready`` expression (awaited when a promise).
        screenshot_png: the PNG bytes of the whole page.
        width_px, height_px: the page size the screenshot covers.
    """

    console_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    value: Any = None
    screenshot_png: bytes = b""
    width_px: int = 0
    height_px: int = 0


def _collect(events: list[dict], run: PageRun) -> None:
    for ev in events:
        m, p = ev.get("method"), ev.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            run.console_errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p["args"]))
        elif m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            run.console_errors.append(d.get("exception", {}).get("description") or d.get("text", "exception"))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            run.console_errors.append(f"{p['entry'].get('source')}: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        elif m == "Network.requestWillBeSent":
            run.requests.append(p["request"]["url"])
        elif m == "Network.loadingFailed":
            run.failed_requests.append(f"{p.get('requestId')}: {p.get('errorText')}")


def load_page(path: str | Path, ready: str = "true", width_px: int = 1280, browser: Browser | None = None,
              screenshot: bool = True) -> PageRun:
    """Open a local HTML file, wait for ``ready`` (a JS expression, awaited), collect errors, screenshot.

    Args:
        path: the HTML file (opened as a ``file://`` URL, as a user would).
        ready: JS expression evaluated after the load event; a promise is
            awaited; its value (JSON-serialisable) lands in :attr:`PageRun.value`.
        width_px: viewport width in CSS pixels; the height follows the page.
        browser: a running :class:`Browser` (default: a new one, closed after).
        screenshot: take the full-page screenshot.
    Returns:
        :class:`PageRun`.
    Raises:
        RuntimeError: the browser failed, or ``ready`` threw (its message included).
    """
    own = browser is None
    b = browser or Browser()
    try:
        target = b.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        sid = b.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            b.send(f"{domain}.enable", session=sid)
        b.send("Emulation.setDeviceMetricsOverride", {"width": width_px, "height": 800, "deviceScaleFactor": 1,
                                                      "mobile": False}, session=sid)
        b.events.clear()
        b.send("Page.navigate", {"url": Path(path).resolve().as_uri()}, session=sid)
        b.wait_event("Page.loadEventFired", sid)
        res = b.send("Runtime.evaluate", {"expression": ready, "awaitPromise": True, "returnByValue": True},
                     session=sid)
        run = PageRun()
        if "exceptionDetails" in res:
            d = res["exceptionDetails"]
            run.console_errors.append(d.get("exception", {}).get("description") or d.get("text", "ready failed"))
        run.value = res.get("result", {}).get("value")
        if screenshot:
            _screenshot(b, sid, run, width_px)
        b.send("Runtime.evaluate", {"expression": "1"}, session=sid)  # flush pending events
        _collect(b.events, run)
        b.send("Target.closeTarget", {"targetId": target})
        return run
    finally:
        if own:
            b.close()


def _screenshot(b: Browser, sid: str, run: PageRun, width_px: int) -> None:
    size = b.send("Runtime.evaluate", {"expression": "[document.documentElement.scrollWidth, "
                                                     "document.documentElement.scrollHeight]",
                                       "returnByValue": True}, session=sid)["result"]["value"]
    run.width_px, run.height_px = max(width_px, int(size[0])), int(size[1])
    b.send("Emulation.setDeviceMetricsOverride", {"width": run.width_px, "height": run.height_px,
                                                  "deviceScaleFactor": 1, "mobile": False}, session=sid)
    shot = b.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=sid)
    run.screenshot_png = base64.b64decode(shot["data"])
