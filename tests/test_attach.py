"""dev_xdp_attach's rules as ``ip link`` meets them: modes, -force, refusals, xdp off."""

from __future__ import annotations

from conftest import sim_of

HOST = """
name: attach
cpus: 2
devices:
  eth0: {type: nic, driver: ice, queues: 2}
  lo0: {type: nic, driver: generic, queues: 1}
traffic:
  - {name: g, to: eth0, rate: 1Mpps}
"""


def xdp(sim, dev: str = "eth0") -> tuple[str, str] | None:  # type: ignore[no-untyped-def]
    view = sim.frame().device(dev).xdp
    return None if view is None else (view.program, view.mode)


def test_plain_xdp_picks_native_when_the_driver_has_ndo_bpf():
    sim = sim_of(HOST)
    assert sim.submit("ip link set dev eth0 xdp obj xdp_drop").ok
    assert xdp(sim) == ("xdp_drop", "native")


def test_plain_xdp_falls_back_to_generic_without_ndo_bpf():
    sim = sim_of(HOST)
    assert sim.submit("ip link set dev lo0 xdp obj xdp_drop").ok
    assert xdp(sim, "lo0") == ("xdp_drop", "generic")


def test_loading_over_a_program_without_force_is_ebusy_and_changes_nothing():
    sim = sim_of(HOST)
    sim.submit("ip link set dev eth0 xdp obj xdp_drop")
    res = sim.submit("ip link set dev eth0 xdp obj xdp_pass")
    assert (res.ok, res.errno, res.reply) == (
        False,
        "EBUSY",
        "Error: XDP program already attached.",
    )
    assert xdp(sim) == ("xdp_drop", "native")


def test_force_replaces_the_program():
    sim = sim_of(HOST)
    sim.submit("ip link set dev eth0 xdp obj xdp_drop")
    assert sim.submit("ip -force link set dev eth0 xdp obj xdp_pass").ok
    assert xdp(sim) == ("xdp_pass", "native")


def test_native_and_generic_cannot_be_active_together():
    sim = sim_of(HOST)
    sim.submit("ip link set dev eth0 xdpgeneric obj xdp_drop")
    res = sim.submit("ip link set dev eth0 xdpdrv obj xdp_pass")
    assert res.errno == "EEXIST"
    assert res.reply == "Error: Native and generic XDP can't be active at the same time."
    assert xdp(sim) == ("xdp_drop", "generic")


def test_xdpdrv_on_a_driver_without_ndo_bpf_is_eopnotsupp():
    sim = sim_of(HOST)
    res = sim.submit("ip link set dev lo0 xdpdrv obj xdp_drop")
    assert res.errno == "EOPNOTSUPP"
    assert res.reply == "Error: Underlying driver does not support XDP in native mode."
    assert xdp(sim, "lo0") is None


def test_xdpoffload_is_refused_without_an_offload_capable_driver():
    sim = sim_of(HOST)
    res = sim.submit("ip link set dev eth0 xdpoffload obj xdp_drop")
    assert not res.ok and res.errno == "EINVAL"
    assert xdp(sim) is None


def test_xdp_off_without_mode_leaves_a_generic_program_on_a_native_capable_device():
    # dev_xdp_mode(): no mode flag on a device with ndo_bpf means native; the generic
    # program stays until "xdpgeneric off".
    sim = sim_of(HOST)
    sim.submit("ip link set dev eth0 xdpgeneric obj xdp_drop")
    assert sim.submit("ip link set dev eth0 xdp off").ok
    assert xdp(sim) == ("xdp_drop", "generic")
    assert sim.submit("ip link set dev eth0 xdpgeneric off").ok
    assert xdp(sim) is None


def test_unknown_device_and_program_get_clear_answers():
    sim = sim_of(HOST)
    res = sim.submit("ip link set dev eth9 up")
    assert res.errno == "ENODEV" and res.reply.startswith('Cannot find device "eth9"')
    assert "did you mean 'eth0'" in res.reply
    res = sim.submit("ip link set dev eth0 xdp obj xdp_dorp")
    assert res.errno == "ENOENT" and "did you mean 'xdp_drop'" in res.reply


def test_program_params_are_checked():
    sim = sim_of(HOST)
    res = sim.submit("ip link set dev eth0 xdp obj redirect")
    assert res.errno == "EINVAL" and "needs param dev" in res.reply
    res = sim.submit("ip link set dev eth0 xdp obj redirect param dve=lo0")
    assert res.errno == "EINVAL" and "did you mean 'dev'" in res.reply
    res = sim.submit("ip link set dev eth0 xdp obj redirect param dev=nope")
    assert res.errno == "ENODEV"
    assert xdp(sim) is None


def test_a_flag_param_is_0_1_true_or_false():
    sim = sim_of(HOST + "maps:\n  ports: {type: devmap, max_entries: 2}\n")
    cmd = "ip -force link set dev eth0 xdp obj redirect_map_multi param map=ports"
    res = sim.submit(cmd + " param exclude_ingress=maybe")
    assert res.errno == "EINVAL"
    assert res.reply == ("Error: redirect_map_multi: param exclude_ingress is 0, 1, true or false.")
    assert sim.submit(cmd + " param exclude_ingress=FALSE").ok


def test_syntax_errors_answer_like_iproute2():
    sim = sim_of(HOST)
    res = sim.submit("ip link set dev eth0 bogus")
    assert res.reply == 'Error: either "dev" is duplicate, or "bogus" is a garbage.'
    res = sim.submit("ip link set dev")
    assert res.reply == 'Command line is not complete. Try option "help"'
    res = sim.submit("ipp link show")
    assert not res.ok and "did you mean 'ip'" in res.reply


def test_every_command_lands_in_the_event_log_with_its_errno():
    sim = sim_of(HOST)
    sim.submit("ip link set dev eth0 xdp obj xdp_drop")
    sim.submit("ip link set dev eth0 xdp obj xdp_drop")
    log = [(e.cmd, e.ok, e.errno) for e in sim.frame().events if e.origin == "user"]
    assert log == [
        ("ip link set dev eth0 xdp obj xdp_drop", True, None),
        ("ip link set dev eth0 xdp obj xdp_drop", False, "EBUSY"),
    ]


def test_ip_link_show_prints_xdp_mode_and_id():
    sim = sim_of(HOST)
    sim.submit("ip link set dev eth0 xdp obj xdp_drop")
    sim.submit("ip link set dev lo0 xdp obj xdp_pass")
    out = sim.submit("ip link show").reply.splitlines()
    assert " xdp/id:1 " in out[0]
    assert " xdpgeneric/id:2 " in out[1]


def test_mtu_changes_and_the_xdp_buffer_limit():
    sim = sim_of(HOST)
    assert sim.submit("ip link set dev eth0 mtu 9000").ok
    res = sim.submit("ip link set dev eth0 xdp obj xdp_drop")
    assert (res.errno, res.reply) == ("EINVAL", "Error: MTU too large for XDP.")
    assert sim.submit("ip link set dev eth0 mtu 1500").ok
    assert sim.submit("ip link set dev eth0 xdp obj xdp_drop").ok
    res = sim.submit("ip link set dev eth0 mtu 9000")
    assert res.errno == "EINVAL" and sim.frame().device("eth0").mtu == 1500


def test_ring_sizes_round_up_to_the_driver_multiple():
    sim = sim_of(HOST)
    res = sim.submit("ethtool -G eth0 rx 100")
    assert res.ok and res.reply == "Requested Rx descriptor count rounded up to 128"
    assert sim.frame().device("eth0").queues[0].ring_size == 128


def test_pktgen_retunes_rate_size_and_flows_live():
    sim = sim_of(HOST.replace("rate: 1Mpps}", "rate: 1Mpps, flows: 4}"))
    sim.run_until(1_000_000)
    res = sim.submit("pktgen eth0 rate 2Mpps size 128 flows 16")
    assert res.ok and "g: 2Mpps to eth0" in res.reply
    emitted = sim.frame().sources[0].emitted
    assert emitted == 1000
    sim.run_until(2_000_000)
    assert sim.frame().sources[0].emitted == emitted + 2000  # 2 Mpps for 1 ms
    before = dict(sim.world.devices["eth0"].counters)
    assert sim.submit("pktgen eth0 stop").ok
    sim.run_until(3_000_000)  # no new frames; the last interrupt polls what was waiting
    after = sim.world.devices["eth0"].counters
    assert after["rx_packets"] == 3000
    assert after["rx_bytes"] - before["rx_bytes"] == 128 * (3000 - before["rx_packets"])
    assert sim.frame().sources[0].emitted == emitted + 2000
