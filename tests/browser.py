"""Open a local HTML file in real headless Chromium and report what a user would see.

Talks the DevTools protocol over ``--remote-debugging-pipe`` (fd 3 in, fd 4 out; NUL-terminated
JSON), so no port, no extra package. Collects uncaught exceptions, console errors and failed loads,
waits for the page's own ready signal (an attribute set when every plot is drawn), evaluates checks
in the page and saves a screenshot.
"""

from __future__ import annotations

import base64
import fcntl
import os
import select
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import orjson

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--remote-debugging-pipe",
]


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(Exception):
    pass


@dataclass
class PageResult:
    errors: list = field(default_factory=list)  # uncaught exceptions, console.error, error log entries
    checks: dict = field(default_factory=dict)
    screenshot: Path | None = None


class Chromium:
    def __init__(self, timeout_s: float = 60.0) -> None:
        exe = chromium_path()
        if exe is None:
            raise BrowserError("chromium is not installed (make test installs it: scripts/install-test-deps.sh)")
        self.timeout_s = timeout_s
        self.profile = tempfile.mkdtemp(prefix="voicetrace-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire_fds() -> None:  # in the child: our pipe ends become fds 3 (in) and 4 (out)
            a = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self._log = open(Path(self.profile) / "chromium.log", "wb")
        self.proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
            preexec_fn=wire_fds, pass_fds=(3, 4),
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []

    # --- protocol ---------------------------------------------------------------------
    def _read_message(self) -> dict:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._from_browser], [], [], self.timeout_s)
            if not ready:
                raise BrowserError(f"no message from chromium in {self.timeout_s:.0f} s")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError("chromium closed the DevTools pipe: " + self.log_tail())
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return orjson.loads(raw)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, orjson.dumps(message) + b"\0")
        while True:
            reply = self._read_message()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str) -> dict:
        for i, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(i)
        while True:
            event = self._read_message()
            if event.get("method") == method:
                return event
            self.events.append(event)

    def log_tail(self) -> str:
        try:
            return (Path(self.profile) / "chromium.log").read_text(errors="replace")[-800:]
        except OSError:
            return ""

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (BrowserError, OSError):
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        self._log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- a page -------------------------------------------------------------------------
    def open(self, path: Path, checks: dict[str, str], screenshot: Path | None = None,
             ready_attribute: str = "data-ready") -> PageResult:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.send(f"{domain}.enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False}, session=session)
        self.send("Page.navigate", {"url": Path(path).resolve().as_uri()}, session=session)
        self.wait_event("Page.loadEventFired")
        # The page marks itself ready when every plot promise resolved; wait for that, not for time.
        wait_js = f"""new Promise(function (resolve) {{
            if (document.body.hasAttribute('{ready_attribute}')) return resolve(true);
            new MutationObserver(function () {{
              if (document.body.hasAttribute('{ready_attribute}')) resolve(true);
            }}).observe(document.body, {{attributes: true}});
        }})"""
        self.send("Runtime.evaluate", {"expression": wait_js, "awaitPromise": True}, session=session)
        result = PageResult()
        for name, expression in checks.items():
            value = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session)
            if "exceptionDetails" in value:
                raise BrowserError(f"check {name!r} threw: {value['exceptionDetails']}")
            result.checks[name] = value["result"].get("value")
        if screenshot is not None:
            height = self.send("Runtime.evaluate", {"expression": "document.documentElement.scrollHeight",
                                                    "returnByValue": True}, session=session)["result"]["value"]
            self.send("Emulation.setDeviceMetricsOverride",
                      {"width": 1400, "height": min(int(height), 8000), "deviceScaleFactor": 1, "mobile": False},
                      session=session)
            shot = self.send("Page.captureScreenshot", {"format": "png"}, session=session)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
            result.screenshot = screenshot
        # Drain events that are already queued (non-blocking) before reading errors.
        while True:
            ready, _, _ = select.select([self._from_browser], [], [], 0)
            if not ready and b"\0" not in self._buffer:
                break
            self.events.append(self._read_message())
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                result.errors.append("exception: " + str(details.get("exception", {}).get("description") or details.get("text")))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                result.errors.append("console.error: " + " ".join(str(a.get("value", a.get("description"))) for a in params.get("args", [])))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                result.errors.append("log: " + str(params["entry"].get("text")))
        self.events.clear()
        self.send("Target.closeTarget", {"targetId": target})
        return result
