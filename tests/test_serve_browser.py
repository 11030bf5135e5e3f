"""``xdptui serve`` in a real browser: headless Chromium loads the classroom page, the app renders
in its terminal, a key typed into the page reaches the app and changes the screen.

Chromium is driven over the DevTools protocol with aiohttp's websocket client (aiohttp comes with
textual-serve, already in the ``dev`` extra). textual-serve draws the terminal with xterm.js on a
canvas, so the test turns on xterm's screen-reader mode: xterm then keeps the visible rows as text
in the DOM (``.xterm-accessibility-tree``), which is what the assertions read.
A screenshot of the page goes to ``$XDPTUI_SCREENSHOT_DIR`` (else pytest's tmp_path).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUMS = ("chromium", "chromium-browser", "google-chrome")
TITLE = "dual-port bond"  # topologies/dual_port.yaml's name (cut short on a narrow header)

# Runs before textual-serve's script: xterm's Terminal is assigned to ``this.terminal`` of the
# page's session object; an accessor on Object.prototype catches that one assignment.
CATCH_TERMINAL = """
Object.defineProperty(Object.prototype, "terminal", {
  configurable: true,
  get() { return undefined; },
  set(value) {
    Object.defineProperty(this, "terminal", {value, writable: true, configurable: true});
    if (value && value.buffer && value.options) { window.__terminal = value; }
  },
});
"""
# The terminal's rows as text: xterm's screen-reader mode mirrors them into the DOM.
ROWS_TEXT = """
(() => {
  const t = window.__terminal;
  if (!t) { return ""; }
  if (!t.options.screenReaderMode) { t.options.screenReaderMode = true; }
  const tree = document.querySelector(".xterm-accessibility-tree");
  return tree ? tree.innerText : "";
})()
"""

SCREEN_ONLY = "window.__terminal.options.screenReaderMode = false"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def find_chromium() -> str | None:
    for name in CHROMIUMS:
        found = shutil.which(name)
        if found:
            return found
    return None


def wait_for_http(url: str, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as reply:
                return str(reply.read().decode())
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"nothing answered at {url} within {seconds:.0f} s")


class DevTools:
    """One page's DevTools session: commands by id, events ignored."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.next_id = 0

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        await self.ws.send_str(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(await asyncio.wait_for(self.ws.receive_str(), 20))
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                result: dict[str, Any] = message["result"]
                return result

    async def rows(self) -> str:
        reply = await self.send("Runtime.evaluate", expression=ROWS_TEXT, returnByValue=True)
        return str(reply["result"].get("value", ""))

    async def wait_for_text(self, wanted: str, seconds: float) -> str:
        deadline = time.monotonic() + seconds
        text = ""
        while time.monotonic() < deadline:
            text = await self.rows()
            if wanted in text:
                return text
            await asyncio.sleep(0.2)
        raise AssertionError(f"{wanted!r} never appeared in the page; last rows:\n{text}")

    async def press(self, key: str, code: str, key_code: int) -> None:
        """A real key event into the focused terminal (what a student's keyboard sends)."""
        await self.send(
            "Runtime.evaluate",
            expression="document.querySelector('.xterm-helper-textarea').focus()",
        )
        down = {"key": key, "code": code, "windowsVirtualKeyCode": key_code}
        await self.send("Input.dispatchKeyEvent", type="keyDown", text=key, **down)
        await self.send("Input.dispatchKeyEvent", type="keyUp", **down)

    async def screenshot(self, path: Path) -> None:
        shot = await self.send("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))


def stop(process: Any) -> None:
    """Kill a process started in its own session, with every child it forked (the browser's
    renderers, the server's app sessions)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def start_chromium(binary: str, profile: Path) -> tuple[Any, int]:
    """Headless Chromium with DevTools on a port it picks (written to DevToolsActivePort)."""
    args = [binary, "--headless=new", "--remote-debugging-port=0", f"--user-data-dir={profile}",
            "--no-first-run", "--no-default-browser-check", "--disable-extensions",
            "--window-size=1600,1200",  # larger than any viewport below: no page scrollbars
            "about:blank"]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.insert(1, "--no-sandbox")  # Chromium refuses root without it (CI containers)
    browser = subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    port_file = profile / "DevToolsActivePort"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and browser.poll() is None:
        if port_file.exists() and port_file.read_text().strip():
            return browser, int(port_file.read_text().split()[0])
        time.sleep(0.1)
    stop(browser)
    raise AssertionError(f"{binary} gave no DevTools port within 30 s")


async def drive(
    devtools_port: int, page_url: str, viewport: tuple[int, int], shots: Path
) -> tuple[str, str, Path]:
    """Open the classroom page in a viewport of ``viewport`` CSS pixels, wait for the app, step
    one poll with '.', screenshot. Returns the rows before and after the key, and the PNG."""
    import aiohttp

    targets = json.loads(wait_for_http(f"http://127.0.0.1:{devtools_port}/json/list", 10))
    page = next(t for t in targets if t["type"] == "page")
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as ws,
    ):
        tools = DevTools(ws)
        await tools.send("Page.enable")
        width, height = viewport
        await tools.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
                             deviceScaleFactor=1, mobile=False)  # fmt: skip
        await tools.send("Page.addScriptToEvaluateOnNewDocument", source=CATCH_TERMINAL)
        await tools.send("Page.navigate", url=page_url)
        before = await tools.wait_for_text("Step", 60)  # the key bar: the bottom row is drawn
        await tools.press(".", "Period", 190)
        after = before
        deadline = time.monotonic() + 20
        while "t 0ns" in after and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            after = await tools.rows()
        # The screenshot as a student sees the page: without the screen-reader rows laid over it.
        await tools.send("Runtime.evaluate", expression=SCREEN_ONLY)
        await asyncio.sleep(0.5)  # let the page paint the new frame
        cells = "`${__terminal.cols}x${__terminal.rows}`"
        size = await tools.send("Runtime.evaluate", expression=cells, returnByValue=True)
        shot = shots / f"serve-{size['result']['value']}.png"  # the terminal's cols x rows
        await tools.screenshot(shot)
        return before, after, shot


# About 120x40 and 80x24 terminal cells at textual-serve's font (a cell is about 9x19 pixels).
@pytest.mark.parametrize("viewport", [(1087, 770), (724, 460)], ids=["120x40", "80x24"])
def test_the_classroom_page_renders_the_app_and_a_key_steps_it(
    tmp_path: Path, viewport: tuple[int, int]
) -> None:
    pytest.importorskip("textual_serve", reason="pip install -e '.[serve]'")
    pytest.importorskip("aiohttp", reason="aiohttp (textual-serve's own) drives the browser")
    binary = find_chromium()
    if binary is None:
        pytest.skip(
            f"no browser: none of {', '.join(CHROMIUMS)} is on PATH (apt-get install chromium)"
        )
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "xdptui", "serve", "topologies/dual_port.yaml",
         "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    shots = Path(os.environ.get("XDPTUI_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    try:
        page_url = f"http://127.0.0.1:{port}/"
        wait_for_http(page_url, 20)
        browser, devtools_port = start_chromium(binary, tmp_path / "profile")
        try:
            before, after, shot = asyncio.run(
                asyncio.wait_for(drive(devtools_port, page_url, viewport, shots), 120)
            )
        finally:
            stop(browser)
    finally:
        stop(server)
    assert TITLE in before and "t 0ns" in before, f"the app did not open at t=0; rows:\n{before}"
    assert "t 0ns" not in after, f"'.' did not step the simulation; rows:\n{after}"
    assert "Step" in after  # still the app, one poll on
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
