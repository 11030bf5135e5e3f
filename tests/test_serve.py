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


# --- a wildcard bind: the page must not send browsers to 0.0.0.0 ----------------------------


def test_a_wildcard_bind_puts_this_machines_address_in_the_page_not_0_0_0_0() -> None:
    pytest.importorskip("textual_serve", reason="pip install -e '.[serve]'")
    from xdptui.serve_url import host_addresses

    if not host_addresses():
        pytest.skip("this machine has no address beyond loopback")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "xdptui", "serve", "dual_port", "--host", "0.0.0.0",
         "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        page = ""
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not page:
            try:
                with urllib.request.urlopen(f"http://localhost:{port}/", timeout=1) as reply:
                    page = reply.read().decode()
            except OSError:
                time.sleep(0.2)
        assert page and "0.0.0.0" not in page
        address = host_addresses()[0]
        assert f"ws://{address}:{port}/ws" in page
    finally:
        server.terminate()
        _, err = server.communicate(timeout=10)
    assert f"browsers load the page from http://{address}:{port}" in err


def test_a_wildcard_bind_without_an_address_refuses_and_names_public_url(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("textual_serve", reason="pip install -e '.[serve]'")
    from xdptui import cli, serve_url

    monkeypatch.setattr(serve_url, "host_addresses", list)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["serve", "dual_port", "--host", "0.0.0.0", "--port", str(free_port())])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--public-url" in err and "no non-loopback address" in err


@pytest.mark.parametrize(
    ("host", "addresses", "url"),
    [
        ("localhost", ["10.1.2.3"], None),  # a named host: textual-serve's own URL is right
        ("lab-host", ["10.1.2.3"], None),
        ("0.0.0.0", ["10.1.2.3", "192.168.0.9"], "http://10.1.2.3:8000"),
        ("::", ["2001:db8::7"], "http://[2001:db8::7]:8000"),
    ],
)
def test_the_public_url_is_derived_only_for_a_wildcard_bind(
    host: str, addresses: list[str], url: str | None
) -> None:
    from xdptui.serve_url import public_url

    assert public_url(host, 8000, lambda: addresses) == url
