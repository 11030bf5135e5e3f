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
