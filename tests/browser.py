"""Headless chromium for the HTML report's tests: find it, load a page, read back what a probe
script appended to the laid-out page; or drive it (``DevTools``) where the page builds itself
after it has loaded, as a notebook front end does.

Debian's ``chromium`` (``apt-get install -y chromium``); where none is on PATH the tests that
need it skip and say so. Every network request goes to a dead proxy, but for the loopback
address: a report fetches nothing, and a live notebook server on 127.0.0.1 is reached.
"""

import base64
import html
import json
import os
import re
import select
import shutil
import subprocess
import sys
import time

import pytest


def chromium_or_skip() -> str:
    """Debian's chromium on PATH, or a skip that says how to get it."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium on PATH (install it: apt-get update && apt-get install -y chromium)")


def offline(tmp_path, width: int, height: int = 900) -> list[str]:
    """Headless chromium's flags: a window ``width`` px wide, a profile of its own under
    ``tmp_path``, every request sent to a dead proxy (a name resolves to nothing) but those to
    127.0.0.1 (an address: no name to resolve), which go straight there."""
    return [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--proxy-server=127.0.0.1:9",
        "--proxy-bypass-list=127.0.0.1",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        f"--window-size={width},{height}",
    ]


def browse(chromium: str, url: str, tmp_path, width: int, *extra: str) -> str:
    """The DOM after load, in headless chromium with every network request sent to a dead proxy."""
    done = subprocess.run(
        [chromium, *offline(tmp_path, width), "--virtual-time-budget=3000", "--dump-dom", *extra, url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def probed(dom: str, element_id: str) -> object:
    """The JSON a probe script wrote into ``<pre id=element_id>`` of the dumped DOM."""
    (found,) = re.findall(rf'<pre id="{element_id}">(.*?)</pre>', dom, re.S)
    return json.loads(html.unescape(found))


#: Run as ``python -c ONTO_3_AND_4 R W program args...``: ``program`` with the descriptors R and W
#: as its 3 and 4, where ``--remote-debugging-pipe`` reads and writes (moved out of the way first:
#: R or W may be 3 or 4 already). A trampoline rather than a ``preexec_fn``, which is not safe in
#: a process with threads (pytest-xdist's workers have some).
ONTO_3_AND_4 = """import fcntl, os, sys
fds = [int(fd) for fd in sys.argv[1:3]]
high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fds]
for fd in fds:
    os.close(fd)
for fd, moved in zip((3, 4), high):
    os.dup2(moved, fd)
    os.close(moved)
os.execvp(sys.argv[3], sys.argv[3:])
"""


#: what chromium answers for an evaluation cut short when its page loads another document (a
#: page that reloads itself; seen once in CI, a JupyterLab or Notebook page after the theme command)
NAVIGATED = "Inspected target navigated or closed"


class DevToolsError(AssertionError):
    """What chromium answered instead of a result, or what a page still waited for."""


class DevTools:
    """Headless chromium driven through the DevTools protocol over a pipe (JSON messages, each
    ended by a NUL byte, on its descriptors 3 and 4): no port is opened and no client library
    is needed. Each page opened gets a window of its own (a tab behind another is hidden, and a
    hidden page lays nothing out), ``width`` x ``height`` px. Use it as a context manager: the
    browser is closed, and killed if it does not go, however the block ends."""

    def __init__(self, chromium: str, tmp_path, width: int, height: int):
        commands, self._to_browser = os.pipe()
        self._from_browser, answers = os.pipe()
        self.log = tmp_path / "chromium.log"
        with open(self.log, "w", encoding="utf-8") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", ONTO_3_AND_4, str(commands), str(answers), chromium]
                + [*offline(tmp_path, width, height), "--remote-debugging-pipe", "about:blank"],
                pass_fds=(commands, answers),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        os.close(commands)
        os.close(answers)
        self._buffer = b""
        self._next = 0
        self._answers: dict[int, dict] = {}
        self.navigated: list[str] = []  # pages whose wait a navigation cut short (``wait_until``)

    def __enter__(self) -> "DevTools":
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self.process.poll() is None:
                self.send("Browser.close")
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        finally:
            os.close(self._to_browser)
            os.close(self._from_browser)

    def send(self, method: str, session: str | None = None, **params) -> int:
        """Sends a command (to the page of ``session``, or to the browser); its id."""
        self._next += 1
        message = {"id": self._next, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:  # a message longer than the pipe's buffer goes in parts
            data = data[os.write(self._to_browser, data) :]
        return self._next

    def answer(self, ident: int, timeout: float) -> dict:
        """The result of the command ``ident``, read from the pipe as it comes (events are
        dropped: none is asked for); ``DevToolsError`` for an error or an exception in a page."""
        deadline = time.monotonic() + timeout
        while ident not in self._answers:
            while b"\0" not in self._buffer:
                left = deadline - time.monotonic()
                ready, _, _ = select.select([self._from_browser], [], [], max(left, 0))
                if not ready:
                    raise DevToolsError(f"no answer from chromium in {timeout} s ({self.log})")
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise DevToolsError(f"chromium closed the pipe ({self.log})")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            message = json.loads(raw)
            if "id" in message:
                self._answers[message["id"]] = message
        message = self._answers.pop(ident)
        if "error" in message:
            raise DevToolsError(message["error"])
        result = message["result"]
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise DevToolsError(details.get("exception", {}).get("description") or details.get("text"))
        return result

    def call(self, method: str, session: str | None = None, timeout: float = 30, **params) -> dict:
        return self.answer(self.send(method, session, **params), timeout)

    def open(self, url: str) -> str:
        """Loads ``url`` in a new window; the session that drives its page. The page is blank
        until the session is attached, then sent to ``url``: the answer comes once that
        document is the page's, so no later command lands in the blank one."""
        target = self.call("Target.createTarget", url="about:blank", newWindow=True)["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        went = self.call("Page.navigate", session, url=url)
        if went.get("errorText"):
            raise DevToolsError(f"{url}: {went['errorText']}")
        return session

    def evaluate(self, sessions: dict[str, str], expression: str, timeout: float = 30) -> dict[str, object]:
        """``expression``'s value (a promise's, once it settles) in each page of ``sessions``
        (name: session), evaluated in all of them at once."""
        sent = {
            name: self.send(
                "Runtime.evaluate", session, expression=expression, awaitPromise=True, returnByValue=True
            )
            for name, session in sessions.items()
        }
        deadline = time.monotonic() + timeout
        return {
            name: self.answer(ident, max(deadline - time.monotonic(), 0.1))["result"].get("value")
            for name, ident in sent.items()
        }

    def wait_until(self, sessions: dict[str, str], condition: str, timeout: float) -> None:
        """Returns once the JavaScript ``condition`` (an expression) is true in every page of
        ``sessions``, checked in each page every 50 ms; where it is still false after
        ``timeout`` s, ``DevToolsError`` with what it last returned (a string saying what is
        missing, for instance). A page that loads another document meanwhile (its evaluation
        is cut short) is waited on again in the new one, and named in ``navigated``."""
        wait = f"""new Promise((resolve, reject) => {{
  const end = Date.now() + {round(timeout * 1000)};
  const check = () => {{
    const said = ({condition});
    if (said === true) resolve(true);
    else if (Date.now() > end) reject(new Error("still waiting: " + JSON.stringify(said)));
    else setTimeout(check, 50);
  }};
  check();
}})"""
        pending = dict(sessions)
        deadline = time.monotonic() + timeout + 10
        while pending:
            sent = {
                name: self.send("Runtime.evaluate", s, expression=wait, awaitPromise=True, returnByValue=True)
                for name, s in pending.items()
            }
            for name, ident in sent.items():
                try:
                    self.answer(ident, max(deadline - time.monotonic(), 0.1))
                except DevToolsError as error:
                    if NAVIGATED not in str(error) or time.monotonic() > deadline:
                        raise
                    self.navigated.append(name)  # checked again in the document it went to
                    continue
                del pending[name]

    def screenshot(self, session: str, path) -> None:
        """What the page's window shows, as a PNG at ``path``."""
        shot = self.call("Page.captureScreenshot", session, format="png")
        path.write_bytes(base64.b64decode(shot["data"]))
