"""Switching granularity at any instant: fast mode's ring counts become exact mode's
descriptors (and back) without moving a counter; fast mode's grid boundaries."""

from __future__ import annotations

import copy

from xdptui.sim.dev.nic import Nic
from xdptui.sim.dev.rings import ARMED
from xdptui.sim.dev.tun import Tun
from xdptui.sim.exact_io import ExactIO
from xdptui.sim.fast import Fast, FastIO
from xdptui.sim.state import State


def switch_mode(st: State, exact: bool) -> None:
    """Change granularity at ``st.now`` (fast mode committed to it): rings become descriptors
    or counts, TX rings keep what they hold; no counter moves."""
    t = st.now
    w = st.world
    if exact == st.is_exact:
        return
    if exact:
        for dev in w.devices.values():
            for rxq in dev.rxq:
                rxq.to_exact(st.fast.facts.queue_order(dev, rxq), st.dp.classes.of_entry, t)
                rxq.state = ARMED
            if isinstance(dev, Nic):  # the queued frames leave from t on, ring after ring
                dev.wire_free_ps = min(dev.wire_free_ps, 1000 * t)
                dev.wire_batches = []
            if isinstance(dev, Nic | Tun):
                for ring in dev.tx:
                    st.exact.refill(dev, ring, t)
        ex = st.exact
        ex.now = t
        ex.heap = []
        for cpu in ex.cpus:
            cpu.poll_list.clear()
            cpu.run_at = -1
            cpu.busy_until = t
        ex.admitted = dict.fromkeys(w.devices, t)
        st.is_exact = True
        st.dp.io = ExactIO(ex)
        ex.rearm_all(t)
    else:
        st.exact.run(t)
        st.exact.settle(t)
        for card in w.cards.values():  # what left by now; fast mode charges the rest as sent
            st.exact.charge_due(card, t)
        st.exact.tx_due = {}
        for card in w.cards.values():  # (exact mode's: its departures are gone)
            card.freed = []
        for dev in w.devices.values():
            for rxq in dev.rxq:
                rxq.to_fast()
                rxq.state = ARMED
            if isinstance(dev, Nic | Tun):
                for ring in dev.tx:
                    ring.to_fast()
        st.is_exact = False
        st.committed = t
        st.fast.cpu_debt[:] = 0.0  # exact mode's CPUs were free at t
        st.fast.napi.forget()
        st.fast.grid.restart(t)
        st.dp.io = FastIO(st.fast)


def last_boundary(fast: Fast, committed: int, t: int) -> int:
    """The last fast-mode grid boundary at or before ``t`` (never before ``committed``)."""
    g = copy.copy(fast.grid)
    end = committed
    while g.next <= t:
        if g.next > end:
            end = g.next
        g.advance()
    return end
