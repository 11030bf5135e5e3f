"""AF_XDP sockets and XSKMAP: XDP frames handed to userspace (``net/xdp/xsk.c``, ``xskmap.c``,
``xsk_buff_pool.c``).

A socket is bound to one (device, queue) and owns a UMEM of ``frames`` chunks of
``frame_size`` bytes and four rings of descriptors: fill (userspace gives the kernel empty
chunks), RX (the kernel gives userspace filled ones), TX and completion. An XDP program sends a
frame to it with ``bpf_redirect_map(&xsks, rx_queue_index, XDP_PASS)`` (``xsk_map_redirect``:
a key without a socket falls back to the flags' action).

Receive, as ``__xsk_map_redirect`` -> ``xsk_rcv`` does it, frame by frame:

- ``xsk_rcv_check``: a socket bound to another device or queue -> EINVAL
  (``xsk_dev_queue_valid``); a frame longer than the chunk's room (``frame_size`` less
  ``XDP_PACKET_HEADROOM``) -> ENOSPC and ``rx_dropped``. These depend on the frame only and are
  resolved when the program is compiled (:func:`check_errors`).
- copy mode (``__xsk_rcv``): ``xsk_buff_alloc`` takes a chunk from the pool's free list, else
  from the fill ring; none -> ENOMEM, ``rx_dropped`` and ``rx_fill_ring_empty_descs``
  (``__xp_alloc``: ``fq->queue_empty_descs++``). The frame is copied into the chunk.
- ``__xsk_rcv_zc``: ``xskq_prod_reserve_desc`` on the RX ring; full -> ENOBUFS and
  ``rx_ring_full`` (``xs->rx_queue_full``), the chunk back to the free list (``xp_free``).
- ``xsk_flush`` at ``xdp_do_flush`` (``__xsk_map_flush``): the RX producer is published (the
  reader sees the poll's frames at its end) and the fill ring's consumer released.

A failed receive is an ``xdp_do_redirect`` error (``xdp:xdp_redirect_err``, the driver drops).
Within one poll, chunks come first from the free list, then the fill ring, and the frames that
succeed are the first ones: the poll's outcome is arithmetic over its frame count
(:meth:`XskSocket.receive`), the one rule both modes run poll by poll.

The reader is userspace's loop (xdpsock's ``rx_drop``): it takes RX descriptors one after the
other at its rate, each from when its poll's flush published it, and gives every chunk
straight back to the fill ring (as many as the fill ring has room for; the rest it holds).

Zero-copy (``XDP_ZEROCOPY``: ice, i40e, mlx5, ixgbe; veth and tun copy only, bind answers
EOPNOTSUPP): the driver's RX ring is built from UMEM chunks, so a redirect hands the chunk over
without a copy (``xsk_rcv_zc``). Modelling choice: the chunk is taken from the fill ring when
the frame is redirected rather than when the driver refilled its ring beforehand, so an empty
fill ring shows as the socket's ``rx_dropped`` and ``rx_fill_ring_empty_descs`` rather than as
the NIC's missed frames; ``need_wakeup`` then tells the reader to kick the driver
(``xsk_set_rx_need_wakeup`` when a refill found the fill ring empty).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from xdptui.model.errors import Errno, KernelError
from xdptui.model.views import XSK_COUNTERS
from xdptui.sim import costs
from xdptui.sim.batch import PollShape, Rows
from xdptui.sim.kconst import BPF_EXIST, BPF_NOEXIST, XSK_TARGET

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

XDP_PACKET_HEADROOM = 256  # include/uapi/linux/bpf.h: the headroom of every UMEM chunk
COUNTERS = XSK_COUNTERS  # rx_packets, rx_bytes, XDP_STATISTICS (struct xdp_statistics), tx
XSK_BULK = 1 << 30  # a poll's frames toward a socket: one xsk_flush, however many
TX_BUDGET = 32  # net/xdp/xsk.c: TX_BATCH_SIZE, __xsk_generic_xmit's descriptors per call


def socket_of_target(target: int) -> int:
    return XSK_TARGET - target


@dataclass(eq=False)
class XskSocket:
    """``struct xdp_sock`` with its ``xsk_buff_pool``: the rings as counts of descriptors, the
    UMEM's chunks by owner (fill ring, RX ring, the kernel's free list, userspace)."""

    name: str
    dev: str
    queue: int
    index: int
    mode: str = "copy"  # copy | zerocopy
    frames: int = 4096
    frame_size: int = 4096
    fill_size: int = 2048
    rx_size: int = 2048
    tx_size: int = 2048
    comp_size: int = 2048
    reader_pps: float | None = None
    need_wakeup: bool = True
    # state
    fill: int = 0  # fill ring: chunks userspace gave and the kernel has not taken
    free_list: int = 0  # chunks back in the pool after a failed receive (xp_free)
    user: int = 0  # chunks userspace holds (the fill ring had no room for them)
    rx: int = 0  # RX ring: descriptors the reader has not consumed
    pending: list[list[int]] = field(default_factory=list)  # [start ps, frames] not yet read
    reader_free_ps: int = 0  # when the reader is done with what it has been given
    fill_prod: int = 0  # ring indices (free-running u32s in the kernel): what was produced
    fill_cons: int = 0  # ... and consumed; the RX ring's producer is ``rx_packets``
    rx_cons: int = 0
    rx_need_wakeup: bool = False  # XDP_RING_NEED_WAKEUP on the fill ring (zero-copy)
    wakeups: int = 0  # the reader's kicks (recvfrom/poll) while the flag was up
    stats: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    tx_chunks: int = 0  # chunks the writer owns for TX (those not on the fill ring at bind)
    writer: XskWriter | None = None
    sent: int = 0  # frames the writer's kicks have sent (set by the view's time)
    source: int | None = None  # the writer's source (index)

    def __post_init__(self) -> None:
        if not self.fill and not self.user:
            self.fill = min(self.frames, self.fill_size)  # xsk_populate_fill_ring
            self.user = self.frames - self.fill
            self.fill_prod = self.fill

    @property
    def rx_frame_size(self) -> int:
        """``__xsk_pool_get_rx_frame_size``: the chunk less its headroom."""
        return self.frame_size - XDP_PACKET_HEADROOM

    def reader_ps(self) -> int:
        """Time (ps) the reader spends per descriptor; 0: no reader."""
        return round(1e12 / self.reader_pps) if self.reader_pps else 0

    def advance(self, t: int) -> None:
        """The reader up to ``t`` (ns): each descriptor it finished goes back to the fill
        ring (``xsk_ring_cons__release``, then ``xsk_ring_prod__submit`` on the fill ring)."""
        s = self.reader_ps()
        if not s or not self.pending:
            return
        now = t * 1000
        done = 0
        while self.pending:
            start, n = self.pending[0]
            k = min(n, (now - start) // s) if now > start else 0
            if k <= 0:
                break
            done += k
            if k == n:
                self.pending.pop(0)
            else:
                self.pending[0] = [start + k * s, n - k]
                break
        if done:
            self.rx -= done
            self.rx_cons += done
            self.user += done
            self.refill()

    def set_reader(self, pps: float | None, t: int) -> None:
        """The reader changes speed (or stops) at ``t`` (ns): what it had read by then is
        read; the descriptors still in the RX ring wait for the new one."""
        self.advance(t)
        self.reader_pps = pps
        self.pending = []
        self.reader_free_ps = t * 1000
        s = self.reader_ps()
        if s and self.rx:
            self.pending = [[t * 1000, self.rx]]
            self.reader_free_ps = t * 1000 + self.rx * s

    def refill(self) -> None:
        """The reader puts the chunks it holds on the fill ring, as many as fit; with
        ``need_wakeup`` it kicks the driver when the flag asks for it."""
        give = min(self.user, self.fill_size - self.fill)
        if give <= 0:
            return
        self.fill += give
        self.fill_prod += give
        self.user -= give
        if self.rx_need_wakeup:
            self.wakeups += 1
            self.rx_need_wakeup = False

    def receive(self, m: int, t: int) -> tuple[int, int]:
        """One poll's ``m`` frames that passed ``xsk_rcv_check``, at ``t`` (ns), then
        ``xsk_flush``: returns (frames received, errno of the others or 0). The frames that
        fail are the last ones, all for the same reason (see the module docstring)."""
        self.advance(t)
        have = self.free_list + self.fill  # xsk_buff_alloc: free list first, then fill ring
        room = self.rx_size - self.rx  # xskq_prod_reserve_desc
        ok = min(m, have, room)
        from_free = min(ok, self.free_list)
        self.free_list -= from_free
        self.fill -= ok - from_free
        self.fill_cons += ok - from_free
        fail = m - ok
        err = 0
        if fail:
            if have <= room:  # the chunk is allocated before the RX ring is looked at
                err = Errno.ENOMEM
                self.stats["rx_dropped"] += fail
                self.stats["rx_fill_ring_empty_descs"] += fail
                if self.mode == "zerocopy" and self.need_wakeup:
                    self.rx_need_wakeup = True
            else:
                err = Errno.ENOBUFS
                self.stats["rx_ring_full"] += fail
                if not self.free_list:  # one chunk goes round: fill -> xp_free -> free list
                    self.fill -= 1
                    self.fill_cons += 1
                    self.free_list += 1
        if ok:
            self.rx += ok
            self.stats["rx_packets"] += ok
            s = self.reader_ps()
            if s:  # xsk_flush publishes them: the reader takes them from then on
                start = max(t * 1000, self.reader_free_ps)
                self.pending.append([start, ok])
                self.reader_free_ps = start + ok * s
        return ok, int(err)

    def at(self, t: int, sent: int = 0) -> XskSocket:
        """A copy as it is at ``t`` (ns): the reader's progress since the last poll, and the
        writer's (``sent``: the frames its kicks have sent by then)."""
        other = copy.copy(self)
        other.sent = sent
        other.pending = [list(p) for p in self.pending]
        other.stats = dict(self.stats)
        other.advance(t)
        return other

    def tx_state(self) -> dict[str, int]:
        """The TX side as the writer's kicks left it (all 0 without a writer)."""
        if self.writer is None:
            return dict.fromkeys(
                ("kicks", "backlog", "comp", "written", "not_written", "eagain", "drained"), 0
            )
        return self.writer.state(self.sent)

    def owners(self) -> dict[str, int]:
        """The UMEM's chunks by owner (kernel: the pool's free list)."""
        tx = self.tx_state()
        return {
            "fill": self.fill,
            "kernel": self.free_list,
            "rx": self.rx,
            "user": self.user + self.tx_chunks - tx["backlog"] - tx["comp"],
            "tx": tx["backlog"],
            "comp": tx["comp"],
        }


@dataclass(frozen=True)
class XskWriter:
    """The socket's TX side: userspace's writer (xdpsock's ``tx_only`` loop, paced) and the
    kernel's copy-mode transmit, ``xsk_sendmsg`` -> ``__xsk_generic_xmit``.

    Every ``period_ps`` the writer reaps the completion ring (the chunks are its own again),
    puts ``batch`` descriptors on the TX ring -- as many as the ring has room for and it has
    free chunks; the others are not written -- and kicks the kernel with one ``sendto``
    (in copy mode the TX ring's ``need_wakeup`` flag is always up). The kernel then takes
    descriptors while there are any: after ``TX_BUDGET`` of them it stops with EAGAIN; each
    needs a completion-ring slot reserved first (``xsk_cq_reserve_addr_locked``: none left,
    EAGAIN); each is built into an skb and handed to ``__dev_direct_xmit`` -> ``veth_xmit``,
    which gives it to the peer at once: the skb is freed, and its completion published
    (``xsk_destruct_skb``), before ``sendto`` returns. A call that ends on an empty TX ring
    counts ``tx_ring_empty_descs``.

    The completion ring is empty at every kick (reaped just before), so a kick sends
    ``min(backlog + batch, cap)``, ``cap = min(TX_BUDGET, comp, limit)``: after ``k`` kicks
    from a backlog ``b0``, ``S(k) = min(k cap, b0 + k batch)`` frames have left. The whole
    TX side is arithmetic over the kicks, one function for both modes: the frames leave at
    their kick's time (:meth:`at`, the source's pacing) and the rings at any instant follow
    from how many have left (:meth:`state`). A change of batch or rate (``writer``) starts a
    new writer from the old one's state (``base``: frames sent by then)."""

    batch: int
    period_ps: int  # between kicks: batch / the writer's rate
    cap: int  # frames one kick can send: min(TX_BUDGET, comp ring, limit)
    limit: int  # min(TX ring size, the chunks the writer owns)
    count: int | None = None  # the source's count: the writer stops after it
    base: int = 0  # frames sent before this writer took over
    b0: int = 0  # ... the TX ring's backlog then
    carried: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)  # kicks, nw, eagain, drained, comp

    @classmethod
    def of(cls, xs: XskSocket, batch: int, pps: float, count: int | None) -> XskWriter:
        limit = min(xs.tx_size, xs.tx_chunks)
        cap = max(0, min(TX_BUDGET, xs.comp_size, limit))
        period = max(1, round(batch * 1e12 / pps)) if pps > 0 else 1 << 62
        return cls(batch, period, cap, limit, count)

    def changed(self, sent: int, batch: int, pps: float) -> XskWriter:
        """The writer from now on (``sent`` frames have left): a new batch or rate."""
        st = self.state(sent)
        period = max(1, round(batch * 1e12 / pps)) if pps > 0 else 1 << 62
        carried = (st["kicks"], st["not_written"], st["eagain"], st["drained"], st["comp"])
        return XskWriter(
            batch, period, self.cap, self.limit, self.count, sent, st["backlog"], carried
        )

    @property
    def mean_pps(self) -> float:
        return min(self.batch, self.cap) * 1e12 / self.period_ps

    def at(self, n: npt.NDArray[np.int64]) -> IntArray:
        """When sent frame ``n`` leaves (ns past this writer's first kick): its kick's time,
        the first kick ``k`` with ``S(k + 1) > n - base``."""
        if not self.cap:
            return np.full(len(n), 1 << 62, np.int64)
        m = n - self.base
        k = np.maximum(m // self.cap, np.where(m >= self.b0, (m - self.b0) // self.batch, 0))
        out: IntArray = (k * self.period_ps) // 1000
        return out

    def count_until(self, x: npt.NDArray[np.int64]) -> IntArray:
        """Frames sent (counted from the source's first) at or before ``x`` ns past this
        writer's first kick."""
        k = np.where(x >= 0, (x * 1000 + 999) // self.period_ps + 1, 0)
        out: IntArray = self.base + np.minimum(k * self.cap, self.b0 + k * self.batch)
        return out

    def state(self, sent: int) -> dict[str, int]:
        """The TX side once ``sent`` frames have left: the kicks so far, the TX ring's backlog,
        the completion ring (the last kick's, not yet reaped), the descriptors never written,
        and the ``sendto`` answers (EAGAIN: descriptors left; drained: the ring left empty)."""
        kicks0, nw0, eagain0, drained0, comp0 = self.carried
        b, cap, b0 = self.batch, self.cap, self.b0
        m = sent - self.base
        if self.count is not None and sent >= self.count:
            m = self.count - self.base
        if not cap or m <= 0:
            return {"kicks": kicks0, "backlog": b0, "comp": comp0, "written": sent + b0,
                    "not_written": nw0, "eagain": eagain0, "drained": drained0}  # fmt: skip

        def sent_by(k: int) -> int:
            return min(k * cap, b0 + k * b)

        k = max(-(-m // cap), -(-(m - b0) // b) if m > b0 else 0)
        top = max(b0, self.limit - cap)  # the backlog the TX ring can hold at a kick's end
        backlog = min(b0 + k * b - sent_by(k), top)
        wrote = sent_by(k) + backlog - b0
        if not top:
            eagain = 0
        elif b > cap or (b == cap and b0 > 0):
            eagain = k
        else:
            eagain = min(k, (b0 - 1) // (cap - b)) if b0 > 0 and b < cap else 0
        return {
            "kicks": kicks0 + k,
            "backlog": backlog,
            "comp": sent_by(k) - sent_by(k - 1),
            "written": self.base + sent_by(k) + backlog,
            "not_written": nw0 + k * b - wrote,
            "eagain": eagain0 + eagain,
            "drained": drained0 + k - eagain,
        }


@dataclass
class XskMap:
    """``BPF_MAP_TYPE_XSKMAP``: key -> socket (by name)."""

    name: str
    max_entries: int
    map_id: int
    entries: dict[int, str] = field(default_factory=dict)
    type: str = "xskmap"

    def update(self, key: int, sock: str, flags: int = 0) -> None:
        """``xsk_map_update_elem``: flags > BPF_EXIST -> EINVAL; key out of range -> E2BIG;
        a socket at the key and BPF_NOEXIST -> EEXIST; none and BPF_EXIST -> ENOENT (the same
        socket again is no change)."""
        if flags > BPF_EXIST:
            raise KernelError(Errno.EINVAL, "")
        if not 0 <= key < self.max_entries:
            raise KernelError(Errno.E2BIG, "")
        old = self.entries.get(key)
        if old == sock:
            return
        if old is not None and flags == BPF_NOEXIST:
            raise KernelError(Errno.EEXIST, "")
        if old is None and flags == BPF_EXIST:
            raise KernelError(Errno.ENOENT, "")
        self.entries[key] = sock

    def delete(self, key: int) -> None:
        """``xsk_map_delete_elem``: out of range -> EINVAL; an empty slot is no error."""
        if not 0 <= key < self.max_entries:
            raise KernelError(Errno.EINVAL, "")
        self.entries.pop(key, None)

    def lookup(self, key: int) -> str | None:
        """``__xsk_map_lookup_elem``: the socket ``bpf_redirect_map`` finds."""
        return self.entries.get(key) if 0 <= key < self.max_entries else None


def check_errors(
    by_index: Mapping[int, XskSocket],
    dev: str,
    target: IntArray,
    queue: IntArray,
    size: IntArray,
) -> IntArray:
    """``xsk_rcv_check`` for every entry redirected to a socket: bound to another device or
    queue -> EINVAL (``xsk_dev_queue_valid``); longer than the chunk's room -> ENOSPC."""
    err = np.zeros(len(target), np.int64)
    for tgt in np.unique(target[target <= XSK_TARGET]).tolist():
        xs = by_index.get(socket_of_target(int(tgt)))
        rows = target == tgt
        if xs is None:
            continue
        err[rows & (size > xs.rx_frame_size)] = Errno.ENOSPC
        err[rows & ((xs.dev != dev) | (queue != xs.queue))] = Errno.EINVAL
    return err


def rcv_cost(by_index: Mapping[int, XskSocket], target: IntArray, size: IntArray) -> FloatArray:
    """CPU ns per frame of ``xsk_rcv`` on the polling CPU: the RX descriptor, and in copy mode
    the chunk's allocation and the copy (``__xsk_rcv``'s memcpy)."""
    cost = np.zeros(len(target))
    for tgt in np.unique(target[target <= XSK_TARGET]).tolist():
        xs = by_index.get(socket_of_target(int(tgt)))
        if xs is None:
            continue
        rows = target == tgt
        cost[rows] = costs.XSK_RCV
        if xs.mode == "copy":
            cost[rows] += costs.XSK_COPY + costs.XSK_COPY_BYTE * size[rows]
    return cost


def receive_rows(
    by_index: Mapping[int, XskSocket],
    target: IntArray,
    size: IntArray,
    rows: Rows,
    t: int,
    shape: PollShape,
    window: tuple[int, int],
) -> tuple[list[tuple[int, Rows]], int]:
    """``xsk_rcv`` for rows that passed ``xsk_rcv_check`` (``target``: each entry's socket):
    exact mode's rows are one poll, in order; fast mode's are a step's polls, each of which
    runs the same rule at its time (``shape``: frames per poll toward each socket and the
    polls' times, else spread evenly over ``window``). Returns the rows by errno (0: received)
    and the flushes (polls that received at least one frame)."""
    out: list[tuple[int, Rows]] = []
    flushes = 0
    tgt_of = target[rows.entry]
    many = len(np.unique(tgt_of)) > 1
    for tgt in np.unique(tgt_of).tolist():
        xs = by_index.get(socket_of_target(int(tgt)))
        part = rows.where(tgt_of == tgt) if many else rows
        if xs is None or not part.total:
            continue
        if part.ordered:
            ok, err = xs.receive(part.total, t)
            flushes += ok > 0
            got = part.head(ok)
            out.append((0, got))
            if err:
                out.append((err, part.minus(got)))
            xs.stats["rx_bytes"] += got.bytes(size)
            continue
        counts, times = _polls(part.total, int(tgt), shape, window)
        tot = {0: 0, int(Errno.ENOMEM): 0, int(Errno.ENOBUFS): 0}
        for k, when in zip(counts.tolist(), times.tolist(), strict=True):
            if k:
                ok, err = xs.receive(k, when)
                tot[0] += ok
                flushes += ok > 0
                if err:
                    tot[err] += k - ok
        got = part.head(tot[0])
        xs.stats["rx_bytes"] += got.bytes(size)
        out.append((0, got))
        rest = part.minus(got)
        for err in (Errno.ENOMEM, Errno.ENOBUFS):
            if tot[err]:
                bad = rest.head(tot[err])
                out.append((int(err), bad))
                rest = rest.minus(bad)
    return out, flushes


def _polls(
    total: int, tgt: int, shape: PollShape, window: tuple[int, int]
) -> tuple[IntArray, IntArray]:
    """Fast mode: the frames each of the step's polls sent to a socket, and when."""
    per_poll = shape.classes.get(tgt)
    if per_poll is not None and int(per_poll.sum()) == total:
        counts = per_poll.astype(np.int64)
    else:
        n = max(shape.polls, 1)
        counts = np.full(n, total // n, np.int64)
        counts[: total % n] += 1
    if shape.times is not None and len(shape.times) == len(counts):
        return counts, shape.times.astype(np.int64)
    t0, t1 = window
    span = max(t1 - t0, 1)
    times = t0 + ((np.arange(len(counts)) + 1) * span // len(counts)).astype(np.int64)
    return counts, times


def count_enospc(
    by_index: Mapping[int, XskSocket], target: IntArray, err: IntArray, rows: Rows
) -> None:
    """``xsk_rcv_check``: a frame longer than the chunk's room is the socket's ``rx_dropped``."""
    bad = err[rows.entry] == Errno.ENOSPC
    if not bad.any():
        return
    tg = target[rows.entry]
    for tgt in np.unique(tg[bad]).tolist():
        xs = by_index.get(socket_of_target(int(tgt)))
        if xs is not None:
            xs.stats["rx_dropped"] += int(rows.count[bad & (tg == tgt)].sum())


def flush_records(
    by_index: Mapping[int, XskSocket], target: IntArray, parts: list[tuple[int, Rows]]
) -> list[tuple[str, int, int, int]]:
    """Exact mode, one poll: per socket (name, frames redirected to it, frames it received,
    errno of the others or 0), in socket order."""
    acc: dict[int, list[int]] = {}
    for code, part in parts:
        if not part.total:
            continue
        for tgt in np.unique(target[part.entry]).tolist():
            row = acc.setdefault(socket_of_target(int(tgt)), [0, 0, 0])
            n = int(part.count[target[part.entry] == tgt].sum())
            row[0] += n
            if code:
                row[2] = code
            else:
                row[1] += n
    return [(by_index[i].name, a, b, e) for i, (a, b, e) in sorted(acc.items()) if i in by_index]
