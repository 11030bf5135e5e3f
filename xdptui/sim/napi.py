"""NAPI (``net/core/dev.c``): interrupts, the CPUs' poll lists and the polls, as one loop over
the instances' state as arrays -- the rule written once.

The rules, each once:

- RX ring (the driver's ``*_clean_rx_irq`` side): frames reach their queue at their own times;
  a frame that finds the ring full is dropped (``rx_dropped``). Arrivals are taken in when the
  queue is polled (or someone looks), which gives the same ring whenever it happens.
- ``____napi_schedule``: an interrupt puts the instance at the tail of its CPU's poll list and
  raises the softirq if the CPU is idle; the CPU starts when it is free (``busy_until``).
- ``net_rx_action`` / ``napi_poll``: the CPU polls the head of its list; a poll takes
  min(weight, waiting) frames from the ring's head and lasts what its frames, its bulk flushes
  and the poll itself cost. A poll that used its whole budget goes back to the list's tail.
- ``napi_complete_done`` and interrupt moderation (``rx-usecs``): a poll that took fewer than
  its weight completes; the next interrupt fires at the first frame waiting or to come, but not
  within ``rx-usecs`` of the last interrupt (``_arm``).

A queue's frames are positions in its own sequence (the entries of its source's table that land
on it, in table order, repeated): frame ``p`` is source frame ``(p // m) L + tab[p % m]``,
arriving at that frame's pacing time. A ring holds runs of positions (drops cut them), so what
a poll takes -- its cost, how many frames go to each bulk queue -- is a difference of prefix
sums. Fast mode runs :func:`run_cpus` over a whole step; the events of one CPU depend only on
that CPU's instances.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from xdptui.sim import jit
from xdptui.sim.bond.bond_main import rr_below
from xdptui.sim.dev import rings
from xdptui.sim.dev.nic import gcra, gcra_sent
from xdptui.sim.dev.rings import (
    W_CB,
    W_CJ,
    W_S,
    W_TAIL,
    X_PORT,
    X_TXTOOK,
    wire_offer,
)
from xdptui.sim.dev.veth import backlog_room, process_queue_after

IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]  # table positions and instances: narrow

NEVER = 1 << 62

ARMED = 0
IRQ_PENDING = 1
SCHEDULED = 2

# a source's pacing (``Source.emitted_until`` / ``arrival_of``), one row each
S_ORIGIN, S_N0, S_MILLI, S_CAP, S_L, S_MQ, S_MR, S_A, S_AR, S_WIDTH = range(10)
# an instance: its configuration, then its state
# (``I_PM``: the period of its cost prefix in ``pre``, 1 when every frame costs the same;
# ``I_LFL``: where its labels' rows start in ``lfl``: ps a flush, frames a bulk, and where the
# label's prefix count starts in ``lab``)
# (``I_TXR``: the transmit ring its XDP_TX frames go to, ``I_TXPRE``: where their prefix
# count starts in ``lab``; a balance-rr bond's frames (prefix ``I_RRPRE``): which slave ids
# are this port (bits of ``I_RRMASK``), packets_per_slave, the slaves, the other slave's ring
# for this CPU and the ps a bulk flush toward it costs)
# (``I_MFED``: a veth queue several instances feed: its positions count the frames offered to
# it, whichever sender's, and each feed is logged: ``feed``)
# (``I_XPRE``: the prefix count of its frames redirected into another port of its card, onto
# that port's ring ``I_XTXR`` for this CPU)
# (``I_BACKLOG``: a veth's queue that is the CPU's backlog, whose ``I_PROC`` frames at the
# head are in ``process_queue``: ``veth.backlog_room``, ``veth.process_queue_after``)
(I_SRC, I_M, I_TAB, I_PRE, I_PM, I_NLAB, I_LFL, I_CPU, I_W, I_ITR, I_R, I_POLL_PS, I_FEED,
 I_FPRE, I_CARD, I_TXR, I_TXPRE, I_RRPRE, I_RRMASK, I_RRPPS, I_RRCNT, I_RRTXR, I_RRFL,
 I_MFED, I_XPRE, I_XTXR, I_BACKLOG, I_RUNNING, I_STATE, I_IRQ_AT, I_IRQ_SEQ, I_LAST_IRQ, I_ARR,
 I_OCC, I_RHEAD, I_RLEN, I_TAKEN, I_DROPPED, I_MISSED, I_PEAK, I_POLLS, I_IRQS, I_LASTP,
 I_RRHERE, I_PROC, I_WIDTH) = range(46)  # fmt: skip
L_WIDTH = 3  # an instance's label in ``lfl``: ps a flush, frames a bulk, its prefix count
I_CONF = I_RUNNING  # the configuration columns come first
# a card (``Card``) whose ports' arrivals NAPI's loop admits: its configuration (its feeds,
# rows ``K_F0`` on in ``feeds``; how many ports it has; ps of DMA per frame received and
# sent; the burst allowance in ps; its sending ports' wires, rows ``K_PORT0`` on in
# ``rings``' port table), then its state (its TAT, the port its DMA arbiter serves first)
K_F0, K_NF, K_NPORTS, K_S, K_C, K_TAU, K_PORT0, K_NPORT, K_TAT, K_RR, K_WIDTH = range(11)
# a feed: a port of a card one source feeds (the source, its table length, where its table
# positions start in ``qmap``, the port's number on the card, its queues and the instance of
# its queue 0), then its state (the next source frame to admit; while admitting, the last to
# admit and when the next one arrives). ``qmap`` holds a table position's queue and its rank
# in the queue's sequence as one word, ``rank * queues + queue``.
F_SRC, F_L, F_QBASE, F_PORT, F_NQ, F_INST0, F_NEXT, F_END, F_AT, F_WIDTH = range(10)
# a CPU (``C_RR``: its balance-rr counter, ``bond.rr_counter``)
C_BUSY, C_RUN_AT, C_RUN_SEQ, C_PHEAD, C_PLEN, C_BUSY_NS, C_RR, C_WIDTH = range(8)
# a poll record (fast mode reads these after a run; ``P_RRH``: a balance-rr bond's frames
# it sent out here)
P_T, P_INST, P_K, P_SEG, P_NSEG, P_DUR, P_RRH, P_WIDTH = range(8)
# a feed into a veth queue several instances feed (``I_MFED``): the sender, the veth's
# instance, where the frames start in the sender's sequence toward it, how many came and how
# many its ring took (``glob[2]``: how many a run logged)
FL_FROM, FL_TO, FL_X, FL_NEW, FL_TOOK, FL_WIDTH = range(6)
# the loop's scratch (``run_cpus``' ``work``, ``work_rows`` of them): a card's frames of one
# instant (``card_instant``), then a CPU group's heap (time, order raised, CPU). The loop
# allocates nothing: it is compiled without numba's reference counting (``jit``)
WK_FRAMES, WK_HEAP_T, WK_HEAP_SEQ, WK_HEAP_CPU, WK_WIDTH = 0, 4, 5, 6, 7
RUNCAP = 256  # runs of positions a poll takes at most; a ring holds ``runs.shape[1]``, a
# power of two (a slot is an index masked, not divided)


# ---------------------------------------------------------------- pacing (traffic.Source)


def emitted_until(src: IntArray, s: int, t: int) -> int:
    """Frames source ``s`` has sent by time ``t`` (``Source.emitted_until``) in int64:
    floor(milli (t - origin) / 1e12), the product split so it cannot overflow."""
    n0 = src[s, S_N0]
    milli = src[s, S_MILLI]
    if t <= src[s, S_ORIGIN] or milli <= 0:
        return n0  # type: ignore[no-any-return]
    dt = t - src[s, S_ORIGIN]
    hi = dt // 1_000_000
    lo = dt % 1_000_000
    x = src[s, S_MQ] * lo + src[s, S_MR] * hi
    n = n0 + src[s, S_MQ] * hi + x // 1_000_000
    n += ((x % 1_000_000) * 1_000_000 + src[s, S_MR] * lo) // 1_000_000_000_000
    cap = src[s, S_CAP]
    if cap >= 0 and n > cap:
        n = cap
    return n  # type: ignore[no-any-return]


def arrival_of(src: IntArray, s: int, n: int) -> int:
    """When source frame ``n`` arrives (``Source.arrival_of``): ceil(k 1e12 / milli) past the
    origin, k = n - n0 + 1, split as k = kh 1e6 + kl against 1e18 = A milli + Ar."""
    milli = src[s, S_MILLI]
    cap = src[s, S_CAP]
    if milli <= 0 or n < src[s, S_N0] or (cap >= 0 and n >= cap):
        return NEVER
    k = n - src[s, S_N0] + 1
    kh = k // 1_000_000
    kl = k % 1_000_000
    num = kh * src[s, S_AR] + kl * 1_000_000_000_000
    return src[s, S_ORIGIN] + kh * src[s, S_A] + (num + milli - 1) // milli  # type: ignore[no-any-return]


def queue_frames(
    ins: IntArray, tab: Int32Array, src: IntArray, i: int, n: int, known: int = 0
) -> int:
    """How many of the source's first ``n`` frames land on instance ``i``'s queue. ``known``:
    a count it is at least (the frames already arrived, checked before it is used), so the
    search gallops on from there: a poll's few new frames cost a few probes, not a search of
    the whole cycle."""
    m = ins[i, I_M]
    L = src[ins[i, I_SRC], S_L]
    base = ins[i, I_TAB]
    c = n // L
    r = n % L
    lo = 0  # the queue's table entries [0, lo) lie below r
    if known > 0 and known // m == c:
        j = known % m
        if j > 0 and tab[base + j - 1] < r:
            lo = j
    hi = lo  # doubling steps until an entry at or above r (or the end)
    step = 1
    while hi < m and tab[base + hi] < r:
        lo = hi + 1
        hi += step
        step *= 2
    if hi > m:
        hi = m
    while lo < hi:
        mid = (lo + hi) // 2
        if tab[base + mid] < r:
            lo = mid + 1
        else:
            hi = mid
    return c * m + lo  # type: ignore[no-any-return]


def position_time(ins: IntArray, tab: Int32Array, src: IntArray, i: int, p: int) -> int:
    """When the queue's frame ``p`` arrives (NEVER: it never will)."""
    s = ins[i, I_SRC]
    m = ins[i, I_M]
    if s < 0 or m <= 0:
        return NEVER
    n = (p // m) * src[s, S_L] + tab[ins[i, I_TAB] + p % m]
    return arrival_of(src, s, n)


def prefix_sum(lab: IntArray, base: int, a: int, b: int) -> int:
    """Sum over positions [a, b) of a prefix count stored after its period at ``base``
    (``napi_tables.Tables.add_prefix``)."""
    return _range_sum(lab, base + 1, lab[base], a, b)


def runs_sum(lab: IntArray, base: int, segs: IntArray, ns: int, nseg: int) -> int:
    """A prefix count (``prefix_sum``) over a poll's runs of positions ``segs[ns : ns + nseg]``."""
    n = 0
    for j in range(nseg):
        n += prefix_sum(lab, base, segs[ns + j, 0], segs[ns + j, 1])
    return n


def _range_sum(pre: IntArray, base: int, m: int, a: int, b: int) -> int:
    """Sum of a per-position value over positions [a, b) of a sequence repeating every ``m``,
    from its prefix sums ``pre[base : base + m + 1]``."""
    total = pre[base + m]
    if m == 1:  # every position the same
        return (b - a) * total  # type: ignore[no-any-return]
    return (b // m - a // m) * total + pre[base + b % m] - pre[base + a % m]  # type: ignore[no-any-return]


# ---------------------------------------------------------------- the RX ring


def push(ins: IntArray, runs: IntArray, i: int, start: int, n: int) -> None:
    """Positions [start, start + n) join the tail of instance ``i``'s ring (``I_LASTP``: the
    last position that did)."""
    k = ins[i, I_RLEN]
    wrap = runs.shape[1] - 1
    last = (ins[i, I_RHEAD] + k - 1) & wrap
    if k > 0 and runs[i, last, 1] == start:
        runs[i, last, 1] = start + n
    else:
        slot = (ins[i, I_RHEAD] + k) & wrap
        runs[i, slot, 0] = start
        runs[i, slot, 1] = start + n
        ins[i, I_RLEN] = k + 1
    ins[i, I_OCC] += n
    ins[i, I_LASTP] = start + n - 1
    if ins[i, I_OCC] > ins[i, I_PEAK]:
        ins[i, I_PEAK] = ins[i, I_OCC]


def admit(
    ins: IntArray, runs: IntArray, tab: Int32Array, src: IntArray, cards: IntArray,
    feeds: IntArray, qmap: Int32Array, wire: IntArray, wb: IntArray, i: int, t: int,
    work: IntArray,
) -> None:  # fmt: skip
    """Arrivals up to ``t`` into the ring in order; those that find it full are dropped (on
    a card the loop runs, every port's arrivals at once: ``card_admit``)."""
    if ins[i, I_CARD] >= 0:
        card_admit(ins, runs, src, cards, feeds, qmap, wire, wb, ins[i, I_CARD], t, work)
        return
    s = ins[i, I_SRC]
    if s < 0:
        return
    a = queue_frames(ins, tab, src, i, emitted_until(src, s, t), ins[i, I_ARR])
    new = a - ins[i, I_ARR]
    if new <= 0:
        return
    if ins[i, I_RUNNING] == 0:  # frames reaching a device that is down are lost
        ins[i, I_ARR] = a
        return
    room = backlog_room(ins[i, I_R], ins[i, I_OCC], ins[i, I_PROC])
    took = new if new < room else room
    if took > 0:
        push(ins, runs, i, ins[i, I_ARR], took)
    if new > took:
        ins[i, I_DROPPED] += new - took
    ins[i, I_ARR] = a


def card_admit(
    ins: IntArray, runs: IntArray, src: IntArray, cards: IntArray, feeds: IntArray,
    qmap: Int32Array, wire: IntArray, wb: IntArray, k: int, t: int, work: IntArray,
) -> None:  # fmt: skip
    """A card's arrivals up to ``t`` in arrival order (``Exact.admit``): one source's frame
    by frame (``card_frames``), several sources' instant by instant (``card_instant``); the
    frames its ports sent take their DMA in time order among them (``card_charge``)."""
    f0 = cards[k, K_F0]
    nf = cards[k, K_NF]
    tat = cards[k, K_TAT]
    for f in range(f0, f0 + nf):
        feeds[f, F_END] = emitted_until(src, feeds[f, F_SRC], t)
    if nf == 1:  # one source: its frames in order
        tat = card_frames(ins, runs, src, cards, feeds, qmap, wire, wb, k, tat)
    else:
        for f in range(f0, f0 + nf):
            feeds[f, F_AT] = feed_at(src, feeds, f)
        scratch = work[: 4 * nf, WK_FRAMES : WK_FRAMES + 4]
        while True:
            at = NEVER
            for f in range(f0, f0 + nf):
                if feeds[f, F_AT] < at:
                    at = feeds[f, F_AT]
            if at >= NEVER:
                break
            if cards[k, K_NPORT] > 0:
                tat = card_charge(wire, wb, cards, k, at * 1000, tat)
            tat = card_instant(ins, runs, src, cards, feeds, qmap, k, at, tat, scratch)
    if cards[k, K_NPORT] > 0:
        tat = card_charge(wire, wb, cards, k, 1000 * t, tat)
    cards[k, K_TAT] = tat


def card_instant(
    ins: IntArray, runs: IntArray, src: IntArray, cards: IntArray, feeds: IntArray,
    qmap: Int32Array, k: int, at: int, tat: int, fr: IntArray,
) -> int:  # fmt: skip
    """The frames reaching card ``k``'s ports at the nanosecond ``at`` (``exact_admit``): one
    whose ring is full is refused (``rx_dropped``) and takes no part; the card has DMA for
    the first g of the others (``nic.gcra``, times alone decide g). When that is some and not
    all and they come from several ports, the arbiter grants them port by port from the port
    it serves first, and the next such instant starts at the port after it (``arbitrate``).
    A granted frame its ring has no room left for takes nothing: its ring's frames are
    refused and the grants made again without them; a frame not granted is missed
    (``rx_missed_errors``). Returns the card's TAT."""
    f0 = cards[k, K_F0]
    nf = cards[k, K_NF]
    nports = cards[k, K_NPORTS]
    rr = cards[k, K_RR]
    a = at * 1000
    m = 0  # the instant's frames, port by port from rr: (instance, position, port, live)
    for step in range(nports):
        port = (rr + step) % nports
        for f in range(f0, f0 + nf):
            if feeds[f, F_PORT] != port:
                continue
            while feeds[f, F_AT] == at and m < len(fr):
                n = feeds[f, F_NEXT]
                feeds[f, F_NEXT] = n + 1
                feeds[f, F_AT] = feed_at(src, feeds, f)
                L = feeds[f, F_L]
                nq = feeds[f, F_NQ]
                v = qmap[feeds[f, F_QBASE] + n % L]
                i = feeds[f, F_INST0] + v % nq
                p = (n // L) * ins[i, I_M] + v // nq
                ins[i, I_ARR] = p + 1
                if ins[i, I_RUNNING] == 0:  # a device that is down: lost
                    continue
                if ins[i, I_OCC] >= ins[i, I_R]:  # its ring is full: no part in the DMA
                    ins[i, I_DROPPED] += 1
                    continue
                fr[m, 0] = i
                fr[m, 1] = p
                fr[m, 2] = port
                fr[m, 3] = 1
                m += 1
    s = cards[k, K_S]
    tau = cards[k, K_TAU]
    while True:
        live = 0
        lo = nports
        hi = -1
        for j in range(m):
            if fr[j, 3]:
                live += 1
                lo = min(lo, fr[j, 2])
                hi = max(hi, fr[j, 2])
        g = 0
        after = tat
        for _ in range(live):
            took = gcra(after, a, s, tau)
            if took < 0:
                break
            after = took
            g += 1
        # the first g live frames are granted: does one find its ring full?
        full = -1
        seen = 0
        for j in range(m):
            if not fr[j, 3] or seen >= g:
                continue
            seen += 1
            i = fr[j, 0]
            ahead = 0  # granted before it at this instant, on its ring
            for jj in range(j):
                if fr[jj, 3] == 2 and fr[jj, 0] == i:
                    ahead += 1
            if ins[i, I_OCC] + ahead >= ins[i, I_R]:
                full = i
                break
            fr[j, 3] = 2  # granted, for now
        for j in range(m):
            if fr[j, 3] == 2:
                fr[j, 3] = 1
        if full < 0:
            break
        for j in range(m):
            if fr[j, 3] and fr[j, 0] == full:
                fr[j, 3] = 0
                ins[full, I_DROPPED] += 1
    seen = 0
    for j in range(m):
        if not fr[j, 3]:
            continue
        i = fr[j, 0]
        if seen < g:
            push(ins, runs, i, fr[j, 1], 1)
        elif ins[i, I_OCC] >= ins[i, I_R]:
            ins[i, I_DROPPED] += 1
        else:
            ins[i, I_MISSED] += 1
        seen += 1
    if 0 < g < live and lo != hi:
        cards[k, K_RR] = (rr + 1) % nports
    return after


def feed_at(src: IntArray, feeds: IntArray, f: int) -> int:
    """When feed ``f``'s next frame to admit arrives (NEVER: none is due)."""
    if feeds[f, F_NEXT] >= feeds[f, F_END]:
        return NEVER
    return arrival_of(src, feeds[f, F_SRC], feeds[f, F_NEXT])


def card_frames(
    ins: IntArray, runs: IntArray, src: IntArray, cards: IntArray, feeds: IntArray,
    qmap: Int32Array, wire: IntArray, wb: IntArray, k: int, tat: int,
) -> int:  # fmt: skip
    """Card ``k``'s one feed's frames due, one by one in order: a frame whose ring is full is
    dropped before any DMA (``rx_dropped``); one that arrives more than the burst allowance
    behind the card's DMA is missed (``rx_missed_errors``); the rest take a descriptor and
    the card's DMA (``nic.gcra``). Returns the card's TAT."""
    f = cards[k, K_F0]
    s = feeds[f, F_SRC]
    n = feeds[f, F_NEXT]
    n1 = feeds[f, F_END]
    L = feeds[f, F_L]
    base = feeds[f, F_QBASE]
    sps = cards[k, K_S]
    tau = cards[k, K_TAU]
    sending = cards[k, K_NPORT] > 0
    nq = feeds[f, F_NQ]
    i0 = feeds[f, F_INST0]
    while n < n1:
        v = qmap[base + n % L]
        i = i0 + v % nq
        p = (n // L) * ins[i, I_M] + v // nq
        ins[i, I_ARR] = p + 1
        if ins[i, I_RUNNING] == 0:  # a device that is down: lost
            pass
        elif ins[i, I_OCC] >= ins[i, I_R]:
            ins[i, I_DROPPED] += 1
        else:
            a = arrival_of(src, s, n) * 1000
            if sending:
                tat = card_charge(wire, wb, cards, k, a, tat)
            took = gcra(tat, a, sps, tau)
            if took < 0:
                ins[i, I_MISSED] += 1
            else:
                tat = took
                push(ins, runs, i, p, 1)
        n += 1
    feeds[f, F_NEXT] = n1
    return tat


def card_charge(wire: IntArray, wb: IntArray, cards: IntArray, k: int, upto: int, tat: int) -> int:
    """The DMA of the frames card ``k``'s ports sent by ``upto`` (ps) and it has not charged
    yet, one after the other in time order (``nic.gcra_sent``), each at the nanosecond it
    left (rounded up, as exact mode's departures are). Returns the card's TAT."""
    wrap = wb.shape[1] - 1  # (a power of two)
    c = cards[k, K_C]
    w0 = cards[k, K_PORT0]
    while True:
        best = NEVER
        bw = -1
        for w in range(w0, w0 + cards[k, K_NPORT]):
            if wire[w, W_CB] < wire[w, W_TAIL]:
                b = wire[w, W_CB] & wrap
                d = wb[w, b, 1] + wire[w, W_CJ] * wb[w, b, 3]
                d = (d + 999) // 1000 * 1000
                if d < best:
                    best = d
                    bw = w
        if bw < 0 or best > upto:
            return tat
        tat = gcra_sent(tat, best, c)
        wire[bw, W_CJ] += 1
        if wire[bw, W_CJ] == wb[bw, wire[bw, W_CB] & wrap, 2]:
            wire[bw, W_CB] += 1
            wire[bw, W_CJ] = 0


def card_keeps_up(src: IntArray, cards: IntArray, feeds: IntArray, k: int, t0: int) -> bool:
    """Whether card ``k`` keeps up with its one source from ``t0`` on, so that ``gcra``
    misses nothing and its ports' rings can take their arrivals queue by queue (``admit``):
    its ports send nothing, its source's frames never come closer together than the card's
    DMA per frame (ceil(j x) - ceil((j - 1) x) >= floor(x) ns, x = 1e12 / milli), and the
    card is free when the first frame after ``t0`` arrives. Then before every frame
    ``tat <= a``, so ``a < tat - tau`` never holds, and after the last frame it took
    ``tat = a + s``."""
    if cards[k, K_NPORT] > 0 or cards[k, K_NF] != 1:
        return False  # what its ports send takes its DMA too; several sources interleave
    s = feeds[cards[k, K_F0], F_SRC]
    milli = src[s, S_MILLI]
    if milli <= 0:
        return True  # nothing arrives
    if 1000 * (1_000_000_000_000 // milli) < cards[k, K_S]:
        return False
    first = arrival_of(src, s, emitted_until(src, s, t0))
    return first >= NEVER or cards[k, K_TAT] <= first * 1000


def card_tat(
    ins: IntArray, tab: Int32Array, src: IntArray, cards: IntArray, feeds: IntArray,
    idx: IntArray, k: int,
) -> int:  # fmt: skip
    """Card ``k``'s TAT after a step its rings took queue by queue (``card_keeps_up``): the
    DMA of the last frame any of its queues ``idx`` took (``I_LASTP``), else as it was."""
    last = -1
    for i in idx:
        p = ins[i, I_LASTP]
        if p >= 0:
            n = (p // ins[i, I_M]) * src[ins[i, I_SRC], S_L] + tab[ins[i, I_TAB] + p % ins[i, I_M]]
            last = max(last, n)
    if last < 0:
        return cards[k, K_TAT]  # type: ignore[no-any-return]
    s = feeds[cards[k, K_F0], F_SRC]
    return arrival_of(src, s, last) * 1000 + cards[k, K_S]  # type: ignore[no-any-return]


# ---------------------------------------------------------------- interrupts and poll lists


def arm(ins: IntArray, tab: Int32Array, src: IntArray, glob: IntArray, i: int, t: int) -> None:
    """``napi_complete_done`` then the driver's moderation: the next interrupt fires at the
    first frame waiting or to come, not within ``rx-usecs`` of the last one, not before ``t``
    (a device that is down takes none)."""
    if ins[i, I_RUNNING] == 0:
        return
    first = t if ins[i, I_OCC] > 0 else position_time(ins, tab, src, i, ins[i, I_ARR])
    if first >= NEVER:
        return
    at = max(first, ins[i, I_LAST_IRQ] + ins[i, I_ITR], t)
    ins[i, I_STATE] = IRQ_PENDING
    ins[i, I_IRQ_AT] = at
    glob[0] += 1
    ins[i, I_IRQ_SEQ] = glob[0]


def schedule(
    ins: IntArray, cpu: IntArray, plist: IntArray, glob: IntArray, i: int, c: int, t: int
) -> None:
    """``____napi_schedule``: onto the tail of the CPU's poll list; the softirq runs when the
    CPU is free."""
    ins[i, I_STATE] = SCHEDULED
    cap = plist.shape[1]
    plist[c, (cpu[c, C_PHEAD] + cpu[c, C_PLEN]) % cap] = i
    cpu[c, C_PLEN] += 1
    if cpu[c, C_RUN_AT] < 0:
        cpu[c, C_RUN_AT] = max(t, cpu[c, C_BUSY])
        glob[0] += 1
        cpu[c, C_RUN_SEQ] = glob[0]


def rearm_all(
    ins: IntArray, tab: Int32Array, src: IntArray, glob: IntArray, idx: IntArray, t: int
) -> None:
    """After any change (a command, a timer): every instance not on a poll list is re-armed at
    ``t`` from the traffic as it now is (``Exact.rearm_all``). An interrupt already due at the
    same time keeps its place among the CPU's events."""
    for k in range(len(idx)):
        i = idx[k]
        if ins[i, I_STATE] == SCHEDULED:
            continue
        was_pending = ins[i, I_STATE] == IRQ_PENDING
        old_at = ins[i, I_IRQ_AT]
        old_seq = ins[i, I_IRQ_SEQ]
        ins[i, I_STATE] = ARMED
        arm(ins, tab, src, glob, i, t)
        if was_pending and ins[i, I_STATE] == IRQ_PENDING and ins[i, I_IRQ_AT] == old_at:
            ins[i, I_IRQ_SEQ] = old_seq


# ---------------------------------------------------------------- the poll


def take(ins: IntArray, runs: IntArray, segs: IntArray, ns: int, i: int, k: int) -> int:
    """The ``k`` frames at the ring's head, as runs of positions into ``segs[ns:]``; returns
    how many runs."""
    got = 0
    out = 0
    while got < k:
        h = ins[i, I_RHEAD]
        a = runs[i, h, 0]
        b = runs[i, h, 1]
        n = b - a
        use = n if n <= k - got else k - got
        segs[ns + out, 0] = a
        segs[ns + out, 1] = a + use
        out += 1
        got += use
        if use == n:
            ins[i, I_RHEAD] = (h + 1) & (runs.shape[1] - 1)
            ins[i, I_RLEN] -= 1
        else:
            runs[i, h, 0] = a + use
    held = ins[i, I_OCC]
    ins[i, I_OCC] = held - k
    if ins[i, I_BACKLOG]:
        ins[i, I_PROC] = process_queue_after(ins[i, I_PROC], held, k)
    return out


def label_frames(
    ins: IntArray, lab: IntArray, lfl: IntArray, segs: IntArray, ns: int, nseg: int, i: int,
    label: int,
) -> int:  # fmt: skip
    """Of the frames a poll of instance ``i`` took (its runs ``segs[ns : ns + nseg]``), those
    toward bulk queue ``label``: its prefix count (``prefix_sum``)."""
    return runs_sum(lab, lfl[ins[i, I_LFL] + L_WIDTH * label + 2], segs, ns, nseg)


def poll_ps(
    ins: IntArray, pre: IntArray, lab: IntArray, lfl: IntArray, segs: IntArray, ns: int, nseg: int,
    i: int,
) -> int:  # fmt: skip
    """What the poll costs (ps): the poll, each frame's path, and ceil(k / 16) bulk flushes
    toward each target it sends k frames to (``bq_enqueue`` / ``__dev_flush``; a cpumap
    entry's queue holds 8: ``cpu_map_enqueue``). ``lfl`` holds (ps per flush, frames per bulk)
    per label."""
    ps = ins[i, I_POLL_PS]
    for j in range(nseg):
        ps += _range_sum(pre, ins[i, I_PRE], ins[i, I_PM], segs[ns + j, 0], segs[ns + j, 1])
    for label in range(ins[i, I_NLAB]):
        cnt = label_frames(ins, lab, lfl, segs, ns, nseg, i, label)
        size = lfl[ins[i, I_LFL] + L_WIDTH * label + 1]
        bulks = (cnt + size - 1) // size
        ps += bulks * lfl[ins[i, I_LFL] + L_WIDTH * label]
    return ps  # type: ignore[no-any-return]


def rr_ids(a: int, b: int, pps: int, cnt: int, mask: int) -> int:
    """How many counter values v in [a, b) give a slave id among the bits of ``mask``
    (``bond_main.rr_below``)."""
    out = 0
    for s in range(cnt):
        if (mask >> s) & 1:
            out += rr_below(b, pps, cnt, s) - rr_below(a, pps, cnt, s)
    return out


def transmit(
    ins: IntArray, cpu: IntArray, lab: IntArray, segs: IntArray, txr: IntArray, wire: IntArray,
    wb: IntArray, ns: int, nseg: int, i: int, t: int,
) -> int:  # fmt: skip
    """The poll's frames that leave through its card's ports, at the poll's time: XDP_TX onto
    the ring paired with the queue (``NetDev.xdp_tx``), and a balance-rr bond's frames
    (``bond_xdp_xmit_roundrobin_slave_get``): the CPU's counter, pre-incremented per frame,
    picks slave id (counter / packets_per_slave) % slaves; this port's go out here, the other
    slave's into its ring for this CPU in bulks of 16 (``xdp_master_redirect``, ``bq_enqueue``,
    ``__dev_flush``), and its frames redirected into another port of the card onto that
    port's ring for this CPU (``ndo_xdp_xmit``; the label's flushes are in ``poll_ps``).
    Returns the ps the balance-rr flushes cost."""
    here = runs_sum(lab, ins[i, I_TXPRE], segs, ns, nseg) if ins[i, I_TXPRE] >= 0 else 0
    other = 0
    if ins[i, I_RRPRE] >= 0:
        n = runs_sum(lab, ins[i, I_RRPRE], segs, ns, nseg)
        c = ins[i, I_CPU]
        c0 = cpu[c, C_RR]
        mine = rr_ids(c0 + 1, c0 + n + 1, ins[i, I_RRPPS], ins[i, I_RRCNT], ins[i, I_RRMASK])
        cpu[c, C_RR] = c0 + n
        ins[i, I_RRHERE] = mine
        here += mine
        other = n - mine
    at = 1000 * t
    r = ins[i, I_TXR]
    if here > 0 and r >= 0:
        w = txr[r, X_PORT]
        got = wire_offer(txr, wire, wb, w, r, here, at, wire[w, W_S])
        txr[r, X_TXTOOK] += got
    if ins[i, I_XPRE] >= 0:  # redirected into another port of the card (its flushes: the
        n = runs_sum(lab, ins[i, I_XPRE], segs, ns, nseg)  # label's, ``poll_ps``)
        r = ins[i, I_XTXR]
        if n > 0:
            w = txr[r, X_PORT]
            wire_offer(txr, wire, wb, w, r, n, at, wire[w, W_S])
    r = ins[i, I_RRTXR]
    if other > 0 and r >= 0:
        w = txr[r, X_PORT]
        wire_offer(txr, wire, wb, w, r, other, at, wire[w, W_S])
        return (other + 15) // 16 * ins[i, I_RRFL]  # type: ignore[no-any-return]
    return 0


def poll(
    ins: IntArray, runs: IntArray, tab: Int32Array, src: IntArray, cards: IntArray,
    feeds: IntArray, qmap: Int32Array, pre: IntArray, lab: IntArray, lfl: IntArray,
    glob: IntArray, cpu: IntArray, segs: IntArray, txr: IntArray, wire: IntArray, wb: IntArray,
    ns: int, i: int, t: int, work: IntArray,
) -> tuple[int, int, int]:  # fmt: skip
    """One ``napi_poll`` of instance ``i`` at ``t``: arrivals taken in, min(weight, waiting)
    frames from the head, what they send (``transmit``); a poll short of its weight
    completes and re-arms the interrupt. Returns (frames, runs written to ``segs``, duration
    in ns)."""
    admit(ins, runs, tab, src, cards, feeds, qmap, wire, wb, i, t, work)
    k = ins[i, I_OCC]
    if k > ins[i, I_W]:
        k = ins[i, I_W]
    nseg = take(ins, runs, segs, ns, i, k) if k > 0 else 0
    dur_ps = poll_ps(ins, pre, lab, lfl, segs, ns, nseg, i)
    if ins[i, I_TXPRE] >= 0 or ins[i, I_RRPRE] >= 0 or ins[i, I_XPRE] >= 0:
        dur_ps += transmit(ins, cpu, lab, segs, txr, wire, wb, ns, nseg, i, t)
    dur = (dur_ps + 500) // 1000
    if dur < 1:
        dur = 1
    ins[i, I_TAKEN] += k
    ins[i, I_POLLS] += 1
    if k < ins[i, I_W]:  # napi_complete_done
        ins[i, I_STATE] = ARMED
        arm(ins, tab, src, glob, i, t + dur)
    return k, nseg, dur


# ---------------------------------------------------------------- a veth peer's ring


def feed(
    ins: IntArray, runs: IntArray, lab: IntArray, segs: IntArray, ns: int, nseg: int, i: int,
    j: int, flog: IntArray, glob: IntArray,
) -> int:  # fmt: skip
    """Instance ``i``'s poll sent frames into veth instance ``j``'s ``ptr_ring``
    (``veth_xdp_xmit`` at the poll's ``xdp_do_flush``, or ``veth_xmit`` skb by skb from
    generic XDP): each takes a slot while one is free, the rest are the sender's drops. The
    veth's frames are positions in its own sequence: the sender's frames that reach it, in
    order (prefix counts at ``I_FPRE``), so the sender's positions [a, b) are the veth's
    [H(a), H(b)). A veth several instances feed (``I_MFED``, every frame alike to it) counts
    the frames offered to it instead, each feed logged in ``flog``. Returns the frames the
    ring took."""
    base = ins[i, I_FPRE]
    got = 0
    for k in range(nseg):
        a = segs[ns + k, 0]
        x0 = prefix_sum(lab, base, 0, a)
        new = prefix_sum(lab, base, a, segs[ns + k, 1])
        if new <= 0:
            continue
        room = backlog_room(ins[j, I_R], ins[j, I_OCC], ins[j, I_PROC])
        took = new if new < room else room
        if ins[j, I_MFED] > 0:
            n = glob[2]
            flog[n, FL_FROM] = i
            flog[n, FL_TO] = j
            flog[n, FL_X] = x0
            flog[n, FL_NEW] = new
            flog[n, FL_TOOK] = took
            glob[2] = n + 1
            x0 = ins[j, I_ARR]
        if took > 0:
            push(ins, runs, j, x0, took)
            got += took
        ins[j, I_DROPPED] += new - took
        ins[j, I_ARR] += new
    return got


# ---------------------------------------------------------------- the CPUs


def next_event(
    ins: IntArray, cpu: IntArray, cpu_first: IntArray, cpu_inst: IntArray, c: int
) -> tuple[int, int, int]:
    """CPU ``c``'s next event: its softirq (-1) or an instance's interrupt (the instance),
    earliest first, ties in the order they were raised; (NEVER, NEVER, -2) when none."""
    best_t = NEVER
    best_seq = NEVER
    best = -2
    t_r = cpu[c, C_RUN_AT]
    if t_r >= 0:
        best_t = t_r
        best_seq = cpu[c, C_RUN_SEQ]
        best = -1
    for j in range(cpu_first[c], cpu_first[c + 1]):
        i = cpu_inst[j]
        if ins[i, I_STATE] == IRQ_PENDING:
            t_i = ins[i, I_IRQ_AT]
            if t_i < best_t or (t_i == best_t and ins[i, I_IRQ_SEQ] < best_seq):
                best_t = t_i
                best_seq = ins[i, I_IRQ_SEQ]
                best = i
    return best_t, best_seq, best


def sift_down(h_t: IntArray, h_seq: IntArray, h_cpu: IntArray, k: int) -> None:
    """Restore the heap below ``k`` (smallest (time, seq) at the root)."""
    n = len(h_t)
    while True:
        m = k
        for ch in (2 * k + 1, 2 * k + 2):
            if ch < n and (h_t[ch] < h_t[m] or (h_t[ch] == h_t[m] and h_seq[ch] < h_seq[m])):
                m = ch
        if m == k:
            return
        h_t[k], h_t[m] = h_t[m], h_t[k]
        h_seq[k], h_seq[m] = h_seq[m], h_seq[k]
        h_cpu[k], h_cpu[m] = h_cpu[m], h_cpu[k]
        k = m


def run_cpus(
    t_end: int, cpus: IntArray, gstart: IntArray, cpu_first: IntArray, cpu_inst: IntArray,
    ins: IntArray, cpu: IntArray, plist: IntArray, runs: IntArray, tab: Int32Array, src: IntArray,
    cards: IntArray, feeds: IntArray, qmap: Int32Array, pre: IntArray, lab: IntArray,
    lfl: IntArray, glob: IntArray, polls: IntArray, segs: IntArray, txr: IntArray,
    wire: IntArray, wb: IntArray, work: IntArray, flog: IntArray,
) -> int:  # fmt: skip
    """Every event of the CPUs ``cpus`` up to ``t_end``, in time order (ties in the order they
    were raised): their instances' interrupts and their softirqs' polls (``net_rx_action``);
    then their rings take in what arrived by ``t_end``. The CPUs go group by group
    (``cpus[gstart[g]:gstart[g + 1]]``): a CPU on its own, or the CPUs of a card's queues,
    whose arrivals share its DMA, together. Polls are written to ``polls`` and their runs to
    ``segs``; returns how many. When those are full it stops early with ``glob[1]`` set (the
    state is consistent: call again to go on). ``work``: scratch rows (``work_rows``);
    ``flog``: the feeds of veths several instances feed (``feed``; as many rows as ``segs``:
    a feed is one of a poll's runs)."""
    n_polls = 0
    n_segs = 0
    cap = plist.shape[1]
    glob[1] = 0
    glob[2] = 0
    for g in range(len(gstart) - 1):
        # the group's CPUs in a heap by their next event (time, then the order raised)
        size = gstart[g + 1] - gstart[g]
        h_t = work[:size, WK_HEAP_T]
        h_seq = work[:size, WK_HEAP_SEQ]
        h_cpu = work[:size, WK_HEAP_CPU]
        for k in range(size):
            h_cpu[k] = cpus[gstart[g] + k]
            h_t[k], h_seq[k], _ = next_event(ins, cpu, cpu_first, cpu_inst, h_cpu[k])
        for k in range(size // 2 - 1, -1, -1):
            sift_down(h_t, h_seq, h_cpu, k)
        while True:
            # the group's next event: a softirq or an instance's interrupt. Only the CPU an
            # event ran on changes its next one (a veth peer it schedules leaves its own
            # CPU's key early, never late): the root's key, checked, is the group's next.
            c = h_cpu[0]
            best_t, best_seq, best = next_event(ins, cpu, cpu_first, cpu_inst, c)
            if size > 1 and (best_t != h_t[0] or best_seq != h_seq[0]):  # (alone: no heap)
                h_t[0] = best_t
                h_seq[0] = best_seq
                sift_down(h_t, h_seq, h_cpu, 0)
                continue
            if best == -2 or best_t > t_end:
                break
            t = best_t
            if best >= 0:  # the interrupt: onto the poll list
                ins[best, I_LAST_IRQ] = t
                ins[best, I_IRQS] += 1
                schedule(ins, cpu, plist, glob, best, c, t)
                if size > 1 or cpu_first[c + 1] - cpu_first[c] > 1 or cpu[c, C_RUN_AT] != t:
                    continue
                # alone on a free CPU: its softirq, raised now, is the next event
            cpu[c, C_RUN_AT] = -1
            if cpu[c, C_PLEN] == 0:
                continue
            if n_polls >= len(polls) or n_segs + RUNCAP >= len(segs):
                cpu[c, C_RUN_AT] = t  # not run yet: the next call starts with it
                glob[1] = 1
                return n_polls
            i = plist[c, cpu[c, C_PHEAD]]
            cpu[c, C_PHEAD] = (cpu[c, C_PHEAD] + 1) % cap
            cpu[c, C_PLEN] -= 1
            if ins[i, I_STATE] == SCHEDULED:
                k, nseg, dur = poll(
                    ins, runs, tab, src, cards, feeds, qmap, pre, lab, lfl, glob, cpu, segs, txr,
                    wire, wb, n_segs, i, t, work,
                )  # fmt: skip
                polls[n_polls, P_T] = t
                polls[n_polls, P_INST] = i
                polls[n_polls, P_K] = k
                polls[n_polls, P_SEG] = n_segs
                polls[n_polls, P_NSEG] = nseg
                polls[n_polls, P_DUR] = dur
                polls[n_polls, P_RRH] = ins[i, I_RRHERE]
                n_polls += 1
                n_segs += nseg
                cpu[c, C_BUSY] = t + dur
                cpu[c, C_BUSY_NS] += dur
                j = ins[i, I_FEED]
                got = 0
                if j >= 0:
                    got = feed(ins, runs, lab, segs, n_segs - nseg, nseg, i, j, flog, glob)
                if got > 0 and ins[j, I_STATE] != SCHEDULED:
                    # __veth_xdp_flush: the peer's NAPI onto this CPU's list, at the poll's end
                    schedule(ins, cpu, plist, glob, j, c, t)
                if ins[i, I_STATE] == SCHEDULED:  # a full poll: back to the tail
                    plist[c, (cpu[c, C_PHEAD] + cpu[c, C_PLEN]) % cap] = i
                    cpu[c, C_PLEN] += 1
            if cpu[c, C_PLEN] > 0 and cpu[c, C_RUN_AT] < 0:
                cpu[c, C_RUN_AT] = max(t, cpu[c, C_BUSY])
                glob[0] += 1
                cpu[c, C_RUN_SEQ] = glob[0]
        for kc in range(gstart[g], gstart[g + 1]):  # what arrived by t_end waits in the rings
            cc = cpus[kc]
            for j in range(cpu_first[cc], cpu_first[cc + 1]):
                admit(ins, runs, tab, src, cards, feeds, qmap, wire, wb, cpu_inst[j], t_end, work)
    return n_polls


def sort_polls(
    polls: IntArray, segs: IntArray, ins: IntArray, lab: IntArray, lfl: IntArray,
    bounds: IntArray, dest: IntArray, labels: IntArray, taken: IntArray,
) -> int:  # fmt: skip
    """A run's poll records instance by instance, each instance's in time order (a counting
    sort in place: instance ``i``'s from ``bounds[i]`` to ``bounds[i + 1]``, ``bounds``
    zeroed by the caller, ``dest`` scratch of one slot a record); beside each, the frames it
    sent toward each of its instance's labels (``labels``: ``label_frames``); and the runs
    of positions each instance took, those that meet made one (``taken``: start, end,
    instance; returns how many)."""
    n = len(polls)
    for p in range(n):
        bounds[polls[p, P_INST] + 1] += 1
    for i in range(1, len(bounds)):
        bounds[i] += bounds[i - 1]
    for p in range(n):  # (``bounds[i]`` runs ahead as ``i``'s are placed, then is put back)
        i = polls[p, P_INST]
        q = bounds[i]
        bounds[i] = q + 1
        dest[p] = q
        for label in range(ins[i, I_NLAB]):
            labels[q, label] = label_frames(
                ins, lab, lfl, segs, polls[p, P_SEG], polls[p, P_NSEG], i, label
            )  # fmt: skip
    for p in range(n):  # each record to its place, a cycle of the permutation at a time
        while dest[p] != p:
            q = dest[p]
            for c in range(P_WIDTH):
                x = polls[q, c]
                polls[q, c] = polls[p, c]
                polls[p, c] = x
            dest[p] = dest[q]
            dest[q] = q
    for i in range(len(bounds) - 1, 0, -1):
        bounds[i] = bounds[i - 1]
    bounds[0] = 0
    nr = 0
    for q in range(n):
        i = polls[q, P_INST]
        ns = polls[q, P_SEG]
        for j in range(polls[q, P_NSEG]):
            a = segs[ns + j, 0]
            b = segs[ns + j, 1]
            if nr > 0 and taken[nr - 1, 2] == i and taken[nr - 1, 1] == a:
                taken[nr - 1, 1] = b
            else:
                taken[nr, 0] = a
                taken[nr, 1] = b
                taken[nr, 2] = i
                nr += 1
    return nr


def work_rows(n_cpus: int, n_feeds: int) -> IntArray:
    """Scratch for ``run_cpus`` over ``n_cpus`` CPUs and cards of ``n_feeds`` feeds at most."""
    return np.zeros((max(n_cpus, 4 * n_feeds, 1), WK_WIDTH), np.int64)


def compile_rules() -> None:
    """Compile the loop and what it calls (on first use; cached on disk), without numba's
    reference counting (it allocates nothing). The small rules a poll calls are compiled into
    their callers; a card's admission and a poll's transmit stay calls of their own, each once
    a poll at most, so the loop compiles in seconds, not a minute."""
    import sys

    rings.compile_rules()  # (``wire_offer`` calls its module's ``wire_pop``)
    inline = (
        "gcra", "gcra_sent", "emitted_until", "arrival_of", "queue_frames", "position_time",
        "_range_sum", "prefix_sum", "runs_sum", "push", "feed_at", "admit", "arm", "schedule",
        "take", "label_frames", "poll_ps", "rr_below", "rr_ids", "poll", "feed", "next_event",
        "sift_down", "backlog_room", "process_queue_after",
    )  # fmt: skip
    calls = (
        "wire_offer", "card_charge", "card_frames", "card_instant", "card_admit", "transmit",
        "rearm_all", "run_cpus", "sort_polls",
    )  # fmt: skip
    jit.compile_functions(sys.modules[__name__], (*inline, *calls), inline=inline, nrt=False)
