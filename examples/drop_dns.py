"""Example user programs for xdptui (see the README's "Programs")."""

import numpy as np


def drop_dns(ctx):  # type: ignore[no-untyped-def]
    """XDP_DROP UDP to port 53, XDP_PASS the rest."""
    dns = (ctx.proto == 17) & (ctx.dst_port == 53)
    return np.where(dns, 1, 2)


def to_eth1(ctx):  # type: ignore[no-untyped-def]
    """bpf_redirect(ifindex 3, 0): in a topology whose second device is eth1."""
    return ctx.redirect(3)
