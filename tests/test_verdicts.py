"""Each XDP verdict on a NIC, counted where the kernel counts it."""

from __future__ import annotations

from pathlib import Path

from conftest import counters, sim_of

NIC = """
name: verdicts
cpus: 4
devices:
  eth0: {{type: nic, driver: ice, speed: 100G, queues: 4, xdp: {prog}}}
traffic:
  - {{name: g, to: eth0, rate: 1Mpps, size: 64, flows: 16, src_ip: 198.18.0.1-198.18.0.16,
     src_port: 1000-1015, count: 5000}}
"""


def run(prog: str, ns: int = 10_000_000) -> dict[str, int]:
    sim = sim_of(NIC.format(prog=prog))
    sim.run_until(ns)
    return counters(sim, "eth0") | {
        "_exc": sum(x.count for x in sim.frame().tracepoints.xdp_exception)
    }


def test_xdp_drop_counts_every_frame_as_drop():
    c = run("xdp_drop")
    assert c["rx_packets"] == 5000
    assert c["xdp_drop"] == 5000
    assert c["tx_packets"] == 0 and c["_exc"] == 0


def test_xdp_pass_sends_every_frame_to_the_stack():
    c = run("xdp_pass")
    assert c["xdp_pass"] == 5000 and c["xdp_drop"] == 0


def test_xdp_tx_sends_frames_back_out_of_the_port():
    c = run("xdp_tx")
    assert c["xdp_tx"] == 5000
    assert c["tx_packets"] == 5000
    assert c["tx_bytes"] == 5000 * 64
    assert c["xdp_tx_errors"] == 0


def test_xdp_aborted_fires_xdp_exception_and_drops():
    sim = sim_of(NIC.format(prog="xdp_aborted"))
    sim.run_until(10_000_000)
    c = counters(sim, "eth0")
    assert c["xdp_aborted"] == 5000
    exc = sim.frame().tracepoints.xdp_exception
    assert [(x.dev, x.action, x.count) for x in exc] == [("eth0", "XDP_ABORTED", 5000)]


def test_unknown_action_code_is_treated_as_aborted():
    sim = sim_of(NIC.format(prog="weird.py:return_seven"))
    sim.run_until(10_000_000)
    c = counters(sim, "eth0")
    assert c["xdp_aborted"] == 5000
    assert c["xdp_drop"] == c["xdp_pass"] == 0
    exc = sim.frame().tracepoints.xdp_exception
    assert [(x.action, x.count) for x in exc] == [("XDP_UNKNOWN", 5000)]


def test_user_program_verdict_per_flow():
    # 16 flows, ports 1000..1015: half of them even; frames cycle over the flows evenly.
    c = run("weird.py:drop_even_ports")
    assert c["xdp_drop"] == 2500
    assert c["xdp_pass"] == 2500


def test_drop_port_drops_only_its_port():
    sim = sim_of("""
        name: dp
        cpus: 2
        devices:
          eth0: {type: nic, driver: ice, queues: 2, xdp: {program: drop_port, params: {port: 53}}}
        traffic:
          - {name: dns, to: eth0, rate: 1Mpps, dst_port: 53, count: 300}
          - {name: web, to: eth0, rate: 1Mpps, dst_port: 80, count: 700}
    """)
    sim.run_until(5_000_000)
    c = counters(sim, "eth0")
    assert (c["xdp_drop"], c["xdp_pass"]) == (300, 700)


def test_program_with_wrong_result_shape_is_refused():
    sim = sim_of(NIC.format(prog="xdp_drop"))
    reply = sim.submit("ip -force link set dev eth0 xdp obj weird.py:wrong_shape")
    assert not reply.ok and reply.errno == "EINVAL"
    assert "one integer action per row" in reply.reply
    # refused: the old program still runs
    assert sim.world.devices["eth0"].prog.prog.name == "xdp_drop"  # type: ignore[union-attr]


def test_readme_example_program_runs_as_documented():
    sim = sim_of("""
        name: example
        cpus: 2
        devices:
          eth0: {type: nic, driver: ice, queues: 2}
          eth1: {type: nic, driver: ice, xdp: xdp_pass}
        traffic:
          - {name: dns, to: eth0, rate: 1Mpps, dst_port: 53, count: 100, start: 3ms}
          - {name: web, to: eth0, rate: 1Mpps, dst_port: 80, count: 300, start: 3ms}
    """)
    root = Path(__file__).resolve().parent.parent
    res = sim.submit(f"ip link set dev eth0 xdp obj {root}/examples/drop_dns.py:drop_dns")
    assert res.ok, res.reply  # attaching on ice re-allocates rings: the link is back by 3 ms
    sim.run_until(8_000_000)
    c = counters(sim, "eth0")
    assert (c["xdp_drop"], c["xdp_pass"]) == (100, 300)
    assert sim.submit(f"ip -force link set dev eth0 xdp obj {root}/examples/drop_dns.py:to_eth1").ok
