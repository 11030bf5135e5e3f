"""Exact mode's rings: frames into rings as descriptors, checked against the ring's free
slots at that instant; transmit rings drain one frame after the other (``Exact.departures``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from xdptui.sim.batch import Rows
from xdptui.sim.dev.netdev import NetDev, Refusal
from xdptui.sim.dev.nic import Nic
from xdptui.sim.dev.rings import RxQueue, TxRing
from xdptui.sim.dev.tun import Tun
from xdptui.sim.dev.veth import Veth, backlog_room
from xdptui.sim.frame_log import sent_by

if TYPE_CHECKING:
    from xdptui.sim.datapath import Datapath
    from xdptui.sim.dev.netdev import Xmit
    from xdptui.sim.world import World

IntArray = npt.NDArray[np.int64]


TX = frozenset({"tx"})
DROP = frozenset({"drop"})


class ExactRings(Protocol):
    """What exact mode's rings call back into its event calendar (``Exact``): the TX rings'
    wire, NAPI scheduling and the drop events."""

    @property
    def dp(self) -> Datapath: ...

    @property
    def world(self) -> World: ...

    @property
    def tx_due(self) -> dict[str, list[IntArray]]: ...

    def departures(
        self,
        dev: NetDev,
        ring: TxRing,
        wire: IntArray,
        ready: IntArray | None,
        t: int,
        entries: IntArray | None = None,
    ) -> IntArray: ...

    def complete(self, dev: NetDev, ring: TxRing, t: int) -> None: ...

    def schedule_napi(self, dev: NetDev, rxq: RxQueue, cpu: int) -> None: ...

    def wake(self, cpu: int, t: int) -> None: ...

    def log_drop(self, t: int, dev: str, where: str, frames: int, **extra: int | str) -> None: ...


class ExactIO:
    """Frames into rings as descriptors, checked against the ring's free slots at that
    instant; transmit rings drain one frame after the other."""

    def __init__(self, exact: ExactRings) -> None:
        self.exact = exact

    @property
    def dp(self) -> Datapath:
        return self.exact.dp

    def tx(self, ring_dev: NetDev, ring: TxRing, rows: Rows, t: int, ref: Refusal) -> int:
        ex = self.exact
        dp = ex.dp
        ex.complete(ring_dev, ring, t)
        fifo = ring.fifo
        ok = rows.head(max(0, ring.size - len(fifo)))
        n_ok = ok.total
        if n_ok:
            wire = ex.world.entries.wire_bytes[ok.entry]
            ready = None if ok.time is None else np.maximum(ok.time, t)
            dep = ex.departures(ring_dev, ring, wire, ready, t, ok.entry)
            fifo.push({"entry": ok.entry, "wire": wire, "t": dep})
            dp.accounts.accepted(ref, ok, into_rx=False)
            if dp.frame_log is not None:
                what = sent_by(ref.kind, ref.src.name, ring.index)
                dp.frame_log.add(ring_dev.name, TX, dep, ok.entry, what)
            if isinstance(ring_dev, Nic) and ring_dev.card in ex.world.cards:
                ex.tx_due.setdefault(ring_dev.card, []).append(dep)
        refused = rows.total - n_ok
        if refused:
            ring.dropped += refused
            dp.accounts.refused(ref, ring_dev, refused)
            where = "xdp_tx_ring_full" if ref.kind == "tx" else f"{ref.kind}_ring_full"
            ex.log_drop(t, ring_dev.name, where, refused, ring=ring.index)
            if dp.frame_log is not None:
                lost = rows.entry[n_ok:] if rows.ordered else rows.entry
                dp.frame_log.add(
                    ring_dev.name, DROP, np.int64(t), lost, f"{where} (ring {ring.index})"
                )
        if dp.watch is None:
            return n_ok
        if dp.watched(ok):
            assert ok.ident is not None
            pos = int(np.flatnonzero(ok.ident == dp.watch)[0])
            dep_t = int(fifo.column("t")[len(fifo) - n_ok + pos])
            dp.hop(t, ring_dev.name, "tx_ring", f"ring {ring.index} ({len(fifo)}/{ring.size})")
            gone = "the reader takes it" if isinstance(ring_dev, Tun) else "on the wire"
            dp.hop(dep_t, ring_dev.name, "wire", gone, end=True)
        elif dp.watched(rows):
            dp.hop(t, ring_dev.name, "drop", f"ring {ring.index} is full", end=True)
        return n_ok

    def tx_bulks(self, ring_dev: NetDev, ring: TxRing, xs: Sequence[Xmit], t: int) -> None:
        """``tx`` of one poll's bulks toward one ring (an ``ndo_xdp_xmit`` each), in order: the
        ring takes a prefix of them, so one completion, one departure schedule and one push
        serve all; each bulk's taken and refused frames count as its own call counts them.
        (The frames are ready at ``t`` and nobody follows one of them.)"""
        dp = self.exact.dp
        if (
            len(xs) == 1
            or dp.watch is not None
            or dp.frame_log is not None
            or any(x.rows.time is not None for x in xs)
        ):
            for x in xs:
                self.tx(ring_dev, ring, x.rows, t, dp.accounts.refusal("xmit", x.src, x))
            return
        ex = self.exact
        ex.complete(ring_dev, ring, t)
        fifo = ring.fifo
        entry = np.concatenate([x.rows.entry for x in xs])
        left = min(max(0, ring.size - len(fifo)), len(entry))
        if left:
            ok = entry[:left]
            wire = ex.world.entries.wire_bytes[ok]
            dep = ex.departures(ring_dev, ring, wire, None, t, ok)
            fifo.push({"entry": ok, "wire": wire, "t": dep})
            if isinstance(ring_dev, Nic) and ring_dev.card in ex.world.cards:
                ex.tx_due.setdefault(ring_dev.card, []).append(dep)
        for x in xs:
            ref = dp.accounts.refusal("xmit", x.src, x)
            n = x.rows.total
            took = min(n, left)
            left -= took
            if took:
                dp.accounts.accepted(ref, x.rows.head(took), into_rx=False)
            if n > took:
                ring.dropped += n - took
                dp.accounts.refused(ref, ring_dev, n - took)
                ex.log_drop(t, ring_dev.name, "xmit_ring_full", n - took, ring=ring.index)

    def tx_many(self, ring_dev: NetDev, rings: IntArray, rows: Rows, t: int, ref: Refusal) -> int:
        taken = 0
        for r in np.unique(rings).tolist():
            taken += self.tx(ring_dev, tx_rings(ring_dev)[r], rows.where(rings == r), t, ref)
        return taken

    def wake(self, cpu: int, t: int) -> None:
        self.exact.wake(cpu, t)

    def rx(self, dev: NetDev, rxq: RxQueue, rows: Rows, t: int, cpu: int, ref: Refusal) -> int:
        free = backlog_room(rxq.size, len(rxq.fifo), rxq.proc)
        ok = rows.head(free)
        n_ok = ok.total
        if n_ok:
            zeros = np.zeros(n_ok, np.int64)
            idents = ok.ident if ok.ident is not None else zeros - 1
            rxq.fifo.push({"entry": ok.entry, "ident": idents, "t": zeros + t})
            rxq.peak = max(rxq.peak, len(rxq.fifo))
            self.dp.accounts.accepted(ref, ok, into_rx=True)
            self.exact.schedule_napi(dev, rxq, cpu)
            if self.dp.frame_log is not None:
                x = ref.xmit
                sender = x.dst if ref.kind == "xmit" and x is not None else ref.src
                what = f"to the peer {dev.name}'s queue {rxq.index} (veth_xmit)"
                self.dp.frame_log.add(sender.name, TX, np.int64(t), ok.entry, what)
        refused = rows.total - n_ok
        if refused:
            self.dp.accounts.refused(ref, dev, refused)
            where = "backlog_full" if isinstance(dev, Veth) and dev.backlog() else "veth_ring_full"
            self.exact.log_drop(t, dev.name, where, refused, queue=rxq.index)
            if self.dp.frame_log is not None:
                lost = rows.entry[n_ok:] if rows.ordered else rows.entry
                what = f"{where} (queue {rxq.index})"
                self.dp.frame_log.add(dev.name, DROP, np.int64(t), lost, what)
        if self.dp.watched(rows):
            self.dp.hop(t, dev.name, "rx_ring", queue_where(dev, rxq, cpu))
            if not self.dp.watched(ok):
                self.dp.hop(t, dev.name, "drop", full_why(dev), end=True)
        elif self.dp.watched(rows):
            self.dp.hop(t, dev.name, "drop", f"queue {rxq.index}'s ring is full", end=True)
        return n_ok


def tx_rings(dev: NetDev) -> list[TxRing]:
    if isinstance(dev, Nic | Tun):
        return dev.tx
    return []


def queue_where(dev: NetDev, rxq: RxQueue, cpu: int) -> str:
    """Where a frame waits, as a followed frame's hop says it: a NIC's ring and the CPU its
    interrupt fires on, a veth's ``ptr_ring`` or the backlog (``veth.backlog_room``) and the
    CPU whose NAPI takes it."""
    if not isinstance(dev, Veth):
        return f"queue {rxq.index} ({len(rxq.fifo)}/{rxq.size}), IRQ on cpu {cpu}"
    if not dev.backlog():
        return f"queue {rxq.index}'s ptr_ring ({len(rxq.fifo)}/{rxq.size}), NAPI on cpu {cpu}"
    waiting = len(rxq.fifo) - rxq.proc
    return (
        f"the backlog (input queue {waiting}/{rxq.size}, {rxq.proc} in process_queue), "
        f"process_backlog on cpu {cpu}"
    )


def full_why(dev: NetDev) -> str:
    """Why a veth's full queue refused a frame (the followed frame's last hop)."""
    if isinstance(dev, Veth) and dev.backlog():
        return "the backlog is full (enqueue_to_backlog): the sender's tx_dropped, rx_dropped here"
    return "the ptr_ring is full: the sender's tx_dropped"
