"""One queue up close, for the app's zoom: the slots of an RX ring, an XDP TX ring, a tap's ring,
or the bulks of a devmap bulk queue -- built only for the queue asked for.

An RX ring's descriptors are the exact-mode FIFO (``RxQueue.fifo``): the head is
``next_to_clean`` (where NAPI takes from, ``rx_packets`` mod the ring size), the tail where the
NIC writes the next frame. Each descriptor's verdict is what the attached program decides for
its flow-table entry (``Compiled``: a bond slave's XDP_TX shows the slave
``bond_xdp_get_xmit_slave`` picks). A TX ring's slots wait for the wire (or a tap's reader).
In fast mode rings hold counts per entry, so the zoom sums them by verdict instead.
A bulk queue (``xdp_dev_bulk_queue``) is emptied at the end of every poll (``xdp_do_flush``):
its zoom is the bulks its CPU's last poll sent (``bq_flush`` records), 16 at most each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from xdptui.model.errors import Errno
from xdptui.model.views import BulkView, QueueRef, QueueZoomView, SlotView, StreamEventView
from xdptui.sim.core.filter import TX_ABORT, TX_HERE, TX_RR
from xdptui.sim.dev.nic import Nic
from xdptui.sim.dev.rings import RxQueue, TxRing
from xdptui.sim.dev.tun import Tun
from xdptui.sim.events import STEP_KINDS as STEPS
from xdptui.sim.kconst import DEV_MAP_BULK_SIZE, XDP_REDIRECT, XDP_TX, action_name
from xdptui.sim.snapshot import stream_views

if TYPE_CHECKING:
    from xdptui.sim.state import State

IntArray = npt.NDArray[np.int64]
SLOTS_LISTED = 4096  # descriptors a zoom lists at most (the largest ring a driver takes)


def zoom_view(st: State, ref: QueueRef) -> QueueZoomView | None:
    """The zoom on ``ref`` now (None: no such queue any more)."""
    if ref.kind == "xsk":  # the socket's rings are in the frame (``Frame.xsks``)
        xs = st.world.xsks.get(ref.dev)
        if xs is None:
            return None
        rx_prod = xs.stats["rx_packets"]
        return QueueZoomView(
            ref,
            f"{xs.name} AF_XDP socket",
            xs.rx_size,
            xs.rx,
            xs.rx_cons % xs.rx_size,
            rx_prod % xs.rx_size,
            st.is_exact,
        )
    dev = st.world.devices.get(ref.dev)
    if dev is None:
        return None
    if ref.kind == "bq":
        return _bulk(st, ref)
    if ref.kind == "rx":
        if ref.index >= len(dev.rxq):
            return None
        return _rx(st, ref, dev.rxq[ref.index])
    rings = (
        dev.tx[: dev.xdp_rings] if isinstance(dev, Nic) else dev.tx if isinstance(dev, Tun) else []
    )
    if ref.index >= len(rings):
        return None
    return _tx(st, ref, rings[ref.index])


def verdicts(st: State, dev_name: str, entries: IntArray) -> list[str]:
    """What the program attached to ``dev_name`` does with each entry, in words."""
    c = st.dp.compiled.get(dev_name)
    if c is None or c.mode is None:
        return ["stack (no program)"] * len(entries)
    by_ifindex = st.world.by_ifindex
    out: list[str] = []
    for e in entries.tolist():
        act = int(c.act[e])
        if act == XDP_TX and c.master is not None:
            slave = int(c.tx_slave[e])
            if slave == TX_HERE:
                out.append("XDP_TX")
            elif slave == TX_ABORT:
                out.append("XDP_ABORTED")
            elif slave == TX_RR:
                out.append("XDP_TX→rr")
            else:
                dev = by_ifindex.get(slave)
                out.append(f"XDP_REDIRECT→{dev.name if dev else slave}")
        elif act == XDP_REDIRECT:
            err = int(c.err[e])
            target = by_ifindex.get(int(c.target[e]))
            name = target.name if target is not None else "?"
            out.append(f"XDP_REDIRECT→{name}" if not err else f"XDP_REDIRECT ✗{Errno(err).name}")
        else:
            out.append(action_name(int(c.raw[e])) if act != XDP_TX else "XDP_TX")
    return out


def _flows(st: State, entries: IntArray) -> list[tuple[str, int]]:
    """(source, flow) of each flow-table entry (entry j of a source is flow j % flows)."""
    out: list[tuple[str, int]] = []
    sources = st.world.sources
    for e in entries.tolist():
        src = next((s for s in sources if s.offset <= e < s.offset + len(s.table)), None)
        if src is None:
            out.append(("", -1))
        else:
            out.append((src.spec.name, (e - src.offset) % src.spec.flows))
    return out


def _summary(labels: list[str], counts: IntArray | None = None) -> tuple[tuple[str, int], ...]:
    total: dict[str, int] = {}
    for i, label in enumerate(labels):
        total[label] = total.get(label, 0) + (int(counts[i]) if counts is not None else 1)
    return tuple(sorted(total.items(), key=lambda kv: -kv[1]))


def _rx(st: State, ref: QueueRef, rxq: RxQueue) -> QueueZoomView:
    exact = st.is_exact
    occ = rxq.occupancy(exact)
    head = rxq.rx_packets % rxq.size
    label = f"{ref.dev} RX queue {ref.index} · IRQ on cpu{rxq.irq_cpu}"
    if not exact:
        held = rxq.held  # rows of (entry or its class's representative, frames)
        names = verdicts(st, ref.dev, held.entry.astype(np.int64))
        return QueueZoomView(
            ref,
            label,
            rxq.size,
            occ,
            head,
            (head + occ) % rxq.size,
            False,
            summary=_summary(names, held.count),
            cpus=(rxq.irq_cpu,),
        )
    cols = rxq.fifo.peek(SLOTS_LISTED)
    entries = cols["entry"]
    names = verdicts(st, ref.dev, entries)
    flows = _flows(st, entries)
    e = st.world.entries
    slots = tuple(
        SlotView(
            (head + i) % rxq.size,
            flows[i][0],
            flows[i][1],
            int(e.size[entries[i]]),
            names[i],
            max(0, st.now - int(cols["t"][i])),
        )
        for i in range(len(entries))
    )
    return QueueZoomView(
        ref,
        label,
        rxq.size,
        occ,
        head,
        (head + occ) % rxq.size,
        True,
        slots,
        _summary(names),
        cpus=(rxq.irq_cpu,),
    )


def _tx(st: State, ref: QueueRef, ring: TxRing) -> QueueZoomView:
    exact = st.is_exact
    occ = ring.occupancy(exact)
    head = ring.sent % ring.size
    what = "tap ring toward userspace" if ref.kind == "tap" else "XDP TX ring"
    cpus = ",".join(str(c) for c in ring.cpus)
    label = f"{ref.dev} {what} {ref.index}" + (f" · cpu{cpus}" if cpus else "")
    if not exact or not len(ring.fifo):
        summary = (("waiting", occ),) if occ else ()
        return QueueZoomView(
            ref,
            label,
            ring.size,
            occ,
            head,
            (head + occ) % ring.size,
            exact,
            summary=summary,
            cpus=ring.cpus,
        )
    cols = ring.fifo.peek(SLOTS_LISTED)
    entries = cols["entry"]
    flows = _flows(st, entries)
    size = st.world.entries.size
    slots = tuple(
        SlotView(
            (head + i) % ring.size,
            flows[i][0],
            flows[i][1],
            int(size[entries[i]]),
            "waiting",
            max(0, int(cols["t"][i]) - st.now),
        )
        for i in range(len(entries))
    )
    return QueueZoomView(
        ref,
        label,
        ring.size,
        occ,
        head,
        (head + occ) % ring.size,
        True,
        slots,
        (("waiting", occ),),
        cpus=ring.cpus,
    )


def _bulk(st: State, ref: QueueRef) -> QueueZoomView:
    """The bulks the bulk queue's CPU sent at its last poll of the device, oldest first."""
    cpu, src, dst = ref.index, ref.dev, ref.target
    records: list[dict[str, Any]] = list(st.stream.records)
    last = None
    for i in range(len(records) - 1, -1, -1):
        r = records[i]
        if r["kind"] == "bq_flush" and (r["cpu"], r["from"], r["to"]) == (cpu, src, dst):
            last = i
            break
    bulks: list[BulkView] = []
    poll: StreamEventView | None = None
    if last is not None:
        t = records[last]["t_ns"]
        start = last
        while (
            start > 0
            and records[start - 1]["t_ns"] == t
            and records[start - 1]["kind"] not in STEPS
        ):
            start -= 1
        if start > 0 and records[start - 1]["kind"] in STEPS and records[start - 1]["cpu"] == cpu:
            poll = stream_views(records[start - 1 : last + 1])[0]
        for r in records[start : last + 1]:
            if r["kind"] == "bq_flush" and (r["cpu"], r["from"], r["to"]) == (cpu, src, dst):
                egress = int(r.get("egress_drops", 0))
                bulks.append(
                    BulkView(
                        int(r["t_ns"]),
                        int(r["frames"]),
                        int(r["sent"]),
                        egress,
                        int(r["drops"]) - egress,
                        str(r["reason"]),
                        r["egress"],
                    )
                )
    tally = st.dp.tp.bulk_queue(cpu, src, dst or "")
    summary: tuple[tuple[str, int], ...] = ()
    if tally is not None:
        summary = (
            ("frames enqueued", tally.frames),
            ("flushes (bq_xmit_all)", tally.flushes),
            ("dropped by the egress program", tally.egress_drops),
        )
    label = f"bulk queue cpu{cpu} {src}→{dst}"
    return QueueZoomView(
        ref,
        label,
        DEV_MAP_BULK_SIZE,
        0,
        0,
        0,
        st.is_exact,
        summary=summary,
        bulks=tuple(bulks),
        last_poll=poll,
        cpus=(cpu,),
    )
