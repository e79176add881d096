"""A real browser for the sign-in pages: headless Chromium (Debian's `chromium` package) driven over the Chrome
DevTools Protocol on a pipe (`--remote-debugging-pipe`: NUL-separated JSON on fds 3 and 4), so nothing but the
standard library is needed. JavaScript is off for every page (`scriptEnabled=false`): whatever a test does here a
person could do with scripts disabled. Pages are read through the DOM, typed into with key events and clicked with
mouse events at the element's place, as a person would; nothing is posted behind the browser's back.

The tests fail, never skip, when Chromium is missing: .ci/run installs it.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
_TIMEOUT = 30.0


class BrowserError(AssertionError):
    pass


@dataclass(frozen=True)
class Page:
    url: str
    html: str
    status: int
    headers: dict[str, str]


class Browser:
    """One Chromium with one tab. `open`, `type_into`, `click` wait for the page that follows to finish loading."""

    def __init__(self, process: subprocess.Popen[bytes], commands: int, answers: int) -> None:
        self.process = process
        self._commands = commands
        self._answers = answers
        self._next_id = 0
        self._lock = threading.Lock()
        self._waiting: dict[int, queue.Queue[dict[str, Any]]] = {}
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name="chromium-cdp", daemon=True)
        self._reader.start()
        self.session = ""
        self.responses: dict[str, tuple[int, dict[str, str]]] = {}  # document URL -> (status, headers)

    def _read(self) -> None:
        buffered = b""
        while True:
            try:
                chunk = os.read(self._answers, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                for waiting in list(self._waiting.values()):
                    waiting.put({"error": {"message": "chromium closed its pipe"}})
                return
            buffered += chunk
            while b"\0" in buffered:
                message, buffered = buffered.split(b"\0", 1)
                parsed = json.loads(message)
                if "id" in parsed and parsed["id"] in self._waiting:
                    self._waiting.pop(parsed["id"]).put(parsed)
                else:
                    self.events.put(parsed)

    def send(self, method: str, params: dict[str, Any] | None = None, session: bool = True) -> dict[str, Any]:
        with self._lock:
            self._next_id += 1
            ident = self._next_id
            answer: queue.Queue[dict[str, Any]] = queue.Queue()
            self._waiting[ident] = answer
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        try:
            reply = answer.get(timeout=_TIMEOUT)
        except queue.Empty:
            raise BrowserError(f"chromium did not answer {method} within {_TIMEOUT:.0f} s") from None
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error'].get('message')}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    def _attach(self) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)[
            "sessionId"
        ]
        self.send("Page.enable")
        self.send("Network.enable")
        self.send("DOM.enable")

    def _drain(self) -> None:
        while True:
            try:
                self._note(self.events.get_nowait())
            except queue.Empty:
                return

    def _note(self, event: dict[str, Any]) -> None:
        if event.get("method") == "Network.responseReceived" and event["params"].get("type") == "Document":
            response = event["params"]["response"]
            headers = {k.lower(): v for k, v in response.get("headers", {}).items()}
            self.responses[response["url"]] = (int(response["status"]), headers)

    def _await_load(self, action: Any) -> Page:
        """Run `action`, then wait until the top frame has navigated and loaded; the page it shows."""
        self._drain()
        action()
        deadline = time.monotonic() + _TIMEOUT
        navigated = False
        while time.monotonic() < deadline:
            try:
                event = self.events.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            self._note(event)
            method = event.get("method")
            if method == "Page.frameNavigated" and not event["params"]["frame"].get("parentId"):
                navigated = True
            elif method == "Page.loadEventFired" and navigated:
                return self.page()
        raise BrowserError(f"no page loaded within {_TIMEOUT:.0f} s")

    def page(self) -> Page:
        root = self.send("DOM.getDocument", {"depth": 0})["root"]
        html = self.send("DOM.getOuterHTML", {"nodeId": root["nodeId"]})["outerHTML"]
        url = self._url()
        status, headers = self.responses.get(url, (0, {}))
        return Page(url, html, status, headers)

    def _url(self) -> str:
        history = self.send("Page.getNavigationHistory")
        return str(history["entries"][history["currentIndex"]]["url"])

    def open(self, url: str) -> Page:
        return self._await_load(lambda: self.send("Page.navigate", {"url": url}))

    def _node(self, selector: str) -> int:
        root = self.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        node = int(self.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"])
        if not node:
            raise BrowserError(f"nothing matches {selector!r} on {self._url()}")
        return node

    def type_into(self, selector: str, text: str) -> None:
        """Focus the field and type `text` into it (key events, as a keyboard would)."""
        self.send("DOM.focus", {"nodeId": self._node(selector)})
        for char in text:
            self.send("Input.dispatchKeyEvent", {"type": "keyDown", "text": char, "unmodifiedText": char, "key": char})
            self.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": char})

    def click(self, selector: str) -> Page:
        """A left click in the middle of the element; the page its form or link leads to."""
        node = self._node(selector)
        self.send("DOM.scrollIntoViewIfNeeded", {"nodeId": node})
        quad = self.send("DOM.getBoxModel", {"nodeId": node})["model"]["content"]
        x, y = sum(quad[0::2]) / 4, sum(quad[1::2]) / 4

        def press() -> None:
            for kind in ("mousePressed", "mouseReleased"):
                self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

        return self._await_load(press)

    def cookies(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.send("Network.getAllCookies")["cookies"]
        return found


@contextmanager
def chromium() -> Iterator[Browser]:
    """Headless Chromium with JavaScript off, a fresh profile, no network of its own beyond what pages ask."""
    if not os.path.exists(CHROMIUM):
        raise AssertionError("chromium is missing: apt-get install chromium (.ci/run installs it)")
    commands_read, commands_write = os.pipe()
    answers_read, answers_write = os.pipe()
    profile = tempfile.mkdtemp(prefix="jarvis-chromium-")

    def on_fds_3_and_4() -> None:  # Chromium reads commands on fd 3 and writes answers on fd 4
        commands, answers = os.dup(commands_read), os.dup(answers_write)  # neither may be clobbered by the other
        os.dup2(commands, 3)
        os.dup2(answers, 4)

    args = [
        CHROMIUM,
        "--headless",
        "--remote-debugging-pipe",
        "--no-sandbox",  # the tests run as root in a container
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--blink-settings=scriptEnabled=false",
        f"--user-data-dir={profile}",
        "about:blank",
    ]
    process = subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=False,  # fds 3 and 4 are made in the child; Python's own fds are not inheritable anyway
        preexec_fn=on_fds_3_and_4,  # dup2 only, before exec
    )
    os.close(commands_read)
    os.close(answers_write)
    browser = Browser(process, commands_write, answers_read)
    try:
        browser._attach()
        yield browser
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        os.close(commands_write)
        os.close(answers_read)
        shutil.rmtree(profile, ignore_errors=True)
