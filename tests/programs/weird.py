"""User programs for the tests, written against the documented API."""

import numpy as np


def return_seven(ctx):
    """An action code the kernel does not know: bpf_warn_invalid_xdp_action -> ABORTED."""
    return np.full(len(ctx), 7)


def drop_even_ports(ctx):
    return np.where(ctx.src_port % 2 == 0, 1, 2)


def redirect_nowhere(ctx):
    return ctx.redirect(999)


def wrong_shape(ctx):
    return np.zeros(3)


def key_by_port_parity(ctx):
    """bpf_redirect_map(tx_ports, src_port % 2, 0)."""
    return ctx.redirect_map("tx_ports", ctx.src_port.astype("int64") % 2, 0)


def key_by_port_mod4(ctx):
    """bpf_redirect_map(tx_ports, src_port % 4, 0)."""
    return ctx.redirect_map("tx_ports", ctx.src_port.astype("int64") % 4, 0)


def verdict_by_port_mod8(ctx):
    """src_port % 8: 0 XDP_DROP, 1 XDP_ABORTED, 2 XDP_TX, 3 XDP_PASS, 4-7
    bpf_redirect_map(tx_ports, src_port % 8 - 4, 0)."""
    m = ctx.src_port.astype("int64") % 8
    redirected = ctx.redirect_map("tx_ports", np.maximum(m - 4, 0), 0)
    return np.select([m == 0, m == 1, m == 2, m == 3], [1, 0, 3, 2], redirected)


def redirect_odd_ports(ctx):
    """bpf_redirect(4, 0) for odd source ports, XDP_DROP for even ones: the program changes
    the array ``ctx.redirect`` returned, as any array of its own."""
    out = ctx.redirect(4)
    out[ctx.src_port % 2 == 0] = 1
    return out
