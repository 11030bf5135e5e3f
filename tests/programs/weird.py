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
