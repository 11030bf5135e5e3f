"""Fast mode's vhost sends: a step's polls of a tap written by vhost-net, cut the way
``handle_tx_copy`` cuts them (``xdptui.sim.dev.vhost_net``): a buffer too big for
``vhost_net_build_xdp`` goes alone and sends the batch before it. Exact mode makes the same
cuts poll by poll; here they are made over the frames a step serves, in the queue's order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from xdptui.sim.dev import vhost_net
from xdptui.sim.dev.tun import Tun
from xdptui.sim.fast_polls import even_sizes

if TYPE_CHECKING:
    from xdptui.sim.fast_shapes import Facts, Plan, Work

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def cut_sends(facts: Facts, work: Work, plan: Plan, full: BoolArray, keep: BoolArray) -> None:
    """Recut the polls of every vhost-written tap instance whose next frames include one
    ``vhost_net_build_xdp`` refuses: ``full`` instances (the writer never ran dry) as one
    stretch carrying ``done_idx``, the others poll by poll; ``keep``: the sizes are needed."""
    for i, dev in enumerate(work.devs):
        if not (isinstance(dev, Tun) and dev.writer == "vhost") or plan.served[i] <= 0:
            continue
        rxq = work.rxqs[i]
        n = int(plan.served[i])
        batched = _next_batched(facts, work, dev, i, n)
        if batched.all():
            continue
        if full[i]:
            cuts = None
        else:
            base = plan.sizes.get(i)
            if base is None:
                base = even_sizes(n, int(plan.polls[i]), n)
            cuts = np.cumsum(base)[:-1]
        sizes = vhost_net.sends(batched, rxq.vhost_done if full[i] else 0, cuts)
        plan.polls[i] = plan.bursts[i] = len(sizes)
        if keep[i]:
            plan.sizes[i] = sizes


def full_sends(facts: Facts, work: Work, i: int, n: int) -> IntArray | None:
    """The sends of a saturated vhost-written instance's next ``n`` frames (None: not one,
    or every frame batches and the polls are full budgets)."""
    dev = work.devs[i]
    if not (isinstance(dev, Tun) and dev.writer == "vhost") or n <= 0:
        return None
    batched = _next_batched(facts, work, dev, i, n)
    if batched.all():
        return None
    return vhost_net.sends(batched, work.rxqs[i].vhost_done)


def _next_batched(facts: Facts, work: Work, dev: Tun, i: int, n: int) -> BoolArray:
    """Whether each of the instance's next ``n`` frames is one a vhost batch takes: from the
    queue's own sequence where one source writes the tap, else its classes spread evenly."""
    w = facts.world
    xdp = facts.dp.compiled[dev.name].mode is not None
    order = facts.queue_order(dev, work.rxqs[i])
    if order is not None:
        period = dev.batched(w.entries.size[order], xdp)
        return np.resize(period, n)
    D = work.held[i] + work.arr[i]
    rep = facts.dp.classes.rep
    refused = float(D[~dev.batched(w.entries.size[rep], xdp)].sum()) / max(float(D.sum()), 1.0)
    j = np.arange(n)
    out: BoolArray = np.floor((j + 1) * refused) <= np.floor(j * refused)
    return out
