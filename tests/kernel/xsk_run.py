"""Runs one AF_XDP (copy mode) scenario for real and prints what the kernel counted, as JSON.

Started by ``kernel_oracle_xsk.py`` as ``unshare -nm python3 xsk_run.py OBJ XSK_SOCK SCENARIO``
(OBJ: ``xsk_progs.c`` built, XSK_SOCK: ``xsk_sock.c`` built): the network namespace is new and
empty, the mount namespace private (bpffs mounted fresh), so nothing here outlives the process.

Every scenario: a veth pair vi/vs; vs runs x_xsk natively (``bpf_redirect_map(&xsks_map,
rx_queue_index, XDP_PASS)``); one AF_XDP socket (``xsk_sock``) bound in copy mode to queue 0 of
vs (or of another veth, or not bound) sits at key 0 of xsks_map (or nowhere); frames sent out of
vi from the stack (AF_PACKET: dev_queue_xmit -> veth_xmit) land on vs's rx queue 0, the only
one a veth has by default. Returned: the socket's XDP_STATISTICS and rings, ``ethtool -S`` and
``ip -s link`` of vs and vi, the xdp:xdp_redirect and xdp:xdp_redirect_err hits of x_xsk (the
latter by errno), and how many frames a packet socket on vs saw (those that reached the stack).

``SCENARIOS`` holds each scenario's parameters (``scenario_params``), shared with the tests and
with the simulator's side of the comparison.
"""

from __future__ import annotations

import errno
import json
import os
import select
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from typing import IO, Any

from netns_run import PIN, attach, prog_id, sh, stats, tracing, veth

# The parameters of each scenario. frames: umem chunks; chunk: their size (XDP_UMEM_REG
# chunk_size); headroom: the umem's headroom; fill, rx: the fill and rx ring sizes (the fill
# ring gets min(frames, fill) chunks before the traffic); n: frames sent; sizes: frame i has
# sizes[i % len(sizes)] bytes (no FCS); reader: "never" leaves the rx ring alone, "recycle"
# gives every received chunk back to the fill ring; bind: the device the socket is bound to
# (None: not bound); queue: the queue it is bound to; queues: vs's rx queues (vi has one tx
# queue, so every frame lands on vs's queue 0); key: its key in xsks_map (None: in no map);
# mtu: of vi and vs; pace: frames sent between pauses (of 1 ms, and until a recycling reader
# has taken every frame sent so far).
DEFAULTS: dict[str, Any] = {
    "frames": 4096,
    "chunk": 4096,
    "headroom": 0,
    "fill": 2048,
    "rx": 2048,
    "n": 200,
    "sizes": tuple(range(64, 101)),
    "reader": "never",
    "bind": "vs",
    "queue": 0,
    "queues": 1,
    "key": 0,
    "mtu": 1500,
    "pace": 32,
}
SCENARIOS: dict[str, dict[str, Any]] = {
    # a: 64 chunks for 200 frames: the rest find the fill ring empty
    "xsk_fill_ring_empty": {"frames": 64, "fill": 64, "rx": 256},
    # b: 256 chunks but an rx ring of 64 nobody reads
    "xsk_rx_ring_full": {"frames": 256, "fill": 256, "rx": 64},
    # c: xsks_map empty: bpf_redirect_map gives the flags' action, XDP_PASS
    "xsk_no_socket": {"frames": 256, "fill": 256, "rx": 256, "key": None},
    # d: the socket is bound to queue 0 of vo, another veth, but sits in the map vs's program uses
    "xsk_other_device": {"frames": 256, "fill": 256, "rx": 256, "bind": "vo"},
    # bound to queue 1 of vs while every frame arrives on queue 0
    "xsk_other_queue": {"frames": 256, "fill": 256, "rx": 256, "queue": 1, "queues": 2},
    # socket in the map but never bound
    "xsk_unbound": {"frames": 256, "fill": 256, "rx": 256, "bind": None},
    # e: 1900-byte frames into 2048-byte chunks (rx frame size 2048 - 256)
    "xsk_frame_too_big": {
        "frames": 256,
        "chunk": 2048,
        "fill": 256,
        "rx": 256,
        "sizes": (1900,),
        "mtu": 1900,
    },
    # frames of exactly the rx frame size and one byte more, in turn
    "xsk_frame_size_limit": {
        "frames": 256,
        "chunk": 2048,
        "fill": 256,
        "rx": 256,
        "sizes": (1792, 1793),
        "mtu": 1800,
    },
    # the same with 256 bytes of umem headroom: the limit moves down by as much
    "xsk_umem_headroom": {
        "frames": 256,
        "chunk": 2048,
        "headroom": 256,
        "fill": 256,
        "rx": 256,
        "sizes": (1536, 1537),
        "mtu": 1800,
    },
    # f: 64 chunks, but every received one goes back to the fill ring; frames sent in bursts
    # of 32, each once the reader has recycled the one before
    "xsk_reader_recycles": {"frames": 64, "fill": 64, "rx": 256, "reader": "recycle"},
}


def scenario_params(name: str) -> dict[str, Any]:
    """Scenario ``name``'s parameters, every one of ``DEFAULTS`` set."""
    return DEFAULTS | SCENARIOS[name]


SRC, DST = b"\x02\x00\x00\x00\x00\x01", b"\x02\x00\x00\x00\x00\x02"


def frame(i: int, size: int) -> bytes:
    """Frame i of ``size`` bytes: netns_run.frame's MACs, the local experimental ethertype
    0x88b5 (no protocol of the stack takes it: only the packet socket of ``stack_counter``)
    and i."""
    return DST + SRC + b"\x88\xb5" + struct.pack("<I", i) + bytes(max(0, size - 18))


def send(
    dev: str, n: int, sizes: tuple[int, ...], pace: int, settle: Callable[[int], None]
) -> None:
    """n frames out of ``dev`` from the stack (AF_PACKET: dev_queue_xmit -> veth_xmit), frame i
    of sizes[i % len(sizes)] bytes; after every ``pace`` frames a 1 ms pause (the peer's NAPI
    drains its 256-slot ring) and ``settle(frames sent so far)``."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((dev, 0))
    for i in range(n):
        s.send(frame(i, sizes[i % len(sizes)]))
        if i % pace == pace - 1 or i == n - 1:
            time.sleep(0.001)
            settle(i + 1)
    s.close()
    time.sleep(0.05)


def reader_caught_up(out: IO[bytes]) -> Callable[[int], None]:
    """For a reader that recycles: wait (1 s at most) until it has taken as many frames off its
    rx ring as were sent, so it never lags more than one burst behind, however loaded the
    machine (its lines on ``out``: how many so far)."""

    def settle(sent: int) -> None:
        got, deadline = 0, time.monotonic() + 1
        while got < sent and select.select([out], [], [], max(0, deadline - time.monotonic()))[0]:
            line = out.readline()
            if not line:  # it died: its exit status tells why
                return
            got = int(line)

    return settle


def stack_counter(dev: str) -> socket.socket:
    """A packet socket on ``dev`` for the frames of ``frame()``: it sees those that reached the
    stack (__netif_receive_skb's taps), after XDP; never those XDP dropped or redirected."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88B5))
    s.bind((dev, 0x88B5))
    s.setblocking(False)
    return s


def drain(s: socket.socket) -> int:
    n = 0
    while True:
        try:
            s.recv(65536)
        except BlockingIOError:
            return n
        n += 1


def redirects(events: list[tuple[str, dict[str, str]]], pid: int) -> dict[str, object]:
    """x_xsk's xdp_redirect hits and its xdp_redirect_err hits by errno name."""
    mine = [(e, f) for e, f in events if f.get("prog_id") == str(pid)]
    errs: dict[str, int] = {}
    for e, f in mine:
        if e == "xdp_redirect_err":
            name = errno.errorcode[-int(f["err"])]
            errs[name] = errs.get(name, 0) + 1
    return {
        "xdp_redirect": sum(e == "xdp_redirect" for e, _ in mine),
        "xdp_redirect_err": errs,
        "xdp_exception": sum(e == "xdp_exception" for e, _ in mine),
    }


def run(name: str, xsk_sock: str) -> dict[str, object]:
    p = scenario_params(name)
    q = str(p["queues"])
    sh("ip", "link", "add", "vi", "type", "veth", "peer", "name", "vs", "numrxqueues", q)
    if p["queues"] > 1:
        sh("ethtool", "-L", "vs", "rx", q)  # veth_set_channels: a veth starts with one
    for dev in ("vi", "vs"):
        sh("ip", "link", "set", dev, "up")
        sh("ip", "link", "set", dev, "mtu", str(p["mtu"]))
    if p["bind"] not in (None, "vs"):
        veth(p["bind"], "vp")
    attach("vs", "x_xsk")
    args = [
        p["bind"] or "vs",
        str(p["queue"]),
        *(str(p[k]) for k in ("frames", "chunk", "headroom", "fill", "rx")),
        f"{PIN}/maps/xsks_map",
        str(-1 if p["key"] is None else p["key"]),
        p["reader"],
        "0" if p["bind"] is None else "1",
    ]
    sock = subprocess.Popen(
        [xsk_sock, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,  # unbuffered: a line read is never more than that line (select stays true)
    )
    assert sock.stdout is not None and sock.stdin is not None
    ready, _, _ = select.select([sock.stdout], [], [], 5)
    line = sock.stdout.readline() if ready else b""
    if line.strip() != b"ready":
        sock.kill()
        raise RuntimeError(f"xsk_sock {' '.join(args)}: {(line + sock.communicate()[1]).decode()}")
    stack = stack_counter("vs")
    with tracing("xdp_redirect", "xdp_redirect_err", "xdp_exception") as read:
        settle = reader_caught_up(sock.stdout) if p["reader"] == "recycle" else lambda _: None
        send("vi", p["n"], p["sizes"], p["pace"], settle)
        events = read()
    out, err = sock.communicate(b"done\n", timeout=10)
    if sock.returncode != 0:
        raise RuntimeError(f"xsk_sock {' '.join(args)}: {err.decode()}")
    return {
        "xsk": json.loads(out.splitlines()[-1]),
        **redirects(events, prog_id("x_xsk")),
        "stack": drain(stack),
        "vs": stats("vs"),
        "vi": stats("vi"),
    }


def main() -> None:
    obj, xsk_sock, name = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs("/sys/fs/bpf", exist_ok=True)
    sh("mount", "-t", "bpf", "bpf", "/sys/fs/bpf")
    for key in ("all", "default"):  # no router solicitations or MLD reports in the counts
        with open(f"/proc/sys/net/ipv6/conf/{key}/disable_ipv6", "w") as f:
            f.write("1")
    sh("bpftool", "prog", "loadall", obj, PIN, "pinmaps", f"{PIN}/maps")
    print(json.dumps(run(name, xsk_sock)))


if __name__ == "__main__":
    main()
