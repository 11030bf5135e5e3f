"""``xdptui serve`` hands the app to browsers through textual-serve (the ``serve`` extra)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port: int = s.getsockname()[1]
        return port


def test_serve_answers_with_the_page_that_opens_the_apps_websocket() -> None:
    pytest.importorskip("textual_serve", reason="pip install -e '.[serve]'")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "xdptui", "serve", "topologies/dual_port.yaml", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        page = ""
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not page:
            try:
                with urllib.request.urlopen(f"http://localhost:{port}/", timeout=1) as reply:
                    page = reply.read().decode()
            except OSError:
                time.sleep(0.2)
        assert f"ws://localhost:{port}/ws" in page
    finally:
        server.terminate()
        server.wait(timeout=10)
