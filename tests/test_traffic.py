"""pktgen-like flow tables and the per-entry frame counts."""

from __future__ import annotations

import numpy as np
import pytest

from xdptui.model.topology import Range, TrafficSpec
from xdptui.sim.hashing import toeplitz_hash
from xdptui.sim.traffic import (
    MAX_TABLE_ENTRIES,
    build_flow_table,
    frames_per_entry,
)


def spec(**kw: object) -> TrafficSpec:
    return TrafficSpec(name="t", to="eth0", **kw)  # type: ignore[arg-type]


def rng(seed: int = 1) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_table_has_lcm_of_flows_and_sizes_entries() -> None:
    table = build_flow_table(spec(flows=4, sizes=(64, 128, 256), src_port=Range(1000, 1003)), rng())
    assert len(table) == 12
    assert len(table.headers) == 12
    # entry j is flow j % 4 (src port 1000 + j % 4) with size sizes[j % 3]
    assert table.headers.src_port.tolist() == [1000 + j % 4 for j in range(12)]
    assert table.size.tolist() == [(64, 128, 256)[j % 3] for j in range(12)]
    assert table.size.dtype == np.int64


def test_sequential_flows_step_through_each_range_and_wrap() -> None:
    table = build_flow_table(
        spec(
            flows=5,
            src_port=Range(1000, 1002),
            dst_ip=Range(0x0A000001, 0x0A000002),
            src_mac=Range(0x001122334455, 0x001122334456),
        ),
        rng(),
    )
    assert table.headers.src_port.tolist() == [1000, 1001, 1002, 1000, 1001]
    assert table.headers.dst_ip.tolist() == [0x0A000001, 0x0A000002] * 2 + [0x0A000001]
    assert table.headers.src_mac.tolist() == [0x001122334455, 0x001122334456] * 2 + [0x001122334455]
    assert table.headers.dst_port.tolist() == [80] * 5  # single-value range


def test_random_flows_are_seeded_and_stay_in_range() -> None:
    s = spec(flows=64, random=True, src_port=Range(1000, 1999), src_ip=Range(1, 0xFFFFFFFF))
    a = build_flow_table(s, rng(42))
    b = build_flow_table(s, rng(42))
    c = build_flow_table(s, rng(43))
    assert np.array_equal(a.headers.src_port, b.headers.src_port)
    assert np.array_equal(a.headers.src_ip, b.headers.src_ip)
    assert not np.array_equal(a.headers.src_port, c.headers.src_port)
    assert a.headers.src_port.min() >= 1000
    assert a.headers.src_port.max() <= 1999
    assert a.headers.src_port.tolist() != list(range(1000, 1064))


def test_table_larger_than_cap_is_refused() -> None:
    # lcm(65537, 17) = 1114129 > 2^20 (both prime)
    with pytest.raises(ValueError, match=r"lcm\(65537, 17\) = 1114129"):
        build_flow_table(spec(flows=65537, sizes=tuple(range(64, 81))), rng())
    with pytest.raises(ValueError, match="limit"):
        build_flow_table(spec(flows=MAX_TABLE_ENTRIES + 1), rng())
    assert len(build_flow_table(spec(flows=MAX_TABLE_ENTRIES), rng())) == MAX_TABLE_ENTRIES


def test_proto_sets_ipv4_ethertype_and_protocol_number() -> None:
    for proto, number in (("udp", 17), ("tcp", 6), ("icmp", 1), ("igmp", 2)):
        table = build_flow_table(spec(proto=proto), rng())
        assert table.headers.ethertype.tolist() == [0x0800]
        assert table.headers.proto.tolist() == [number]
        assert table.headers.frag.tolist() == [False]
    with pytest.raises(ValueError, match="proto"):
        build_flow_table(spec(proto="sctp"), rng())


def test_vlan_is_spec_vlan_or_zero() -> None:
    assert build_flow_table(spec(flows=2), rng()).headers.vlan.tolist() == [0, 0]
    assert build_flow_table(spec(flows=2, vlan=100), rng()).headers.vlan.tolist() == [100, 100]


def test_rss_hash_covers_ports_for_tcp_udp_and_addresses_otherwise() -> None:
    for proto in ("udp", "tcp"):
        t = build_flow_table(spec(flows=8, proto=proto, src_port=Range(1, 8)), rng())
        h = t.headers
        assert np.array_equal(t.rss_hash, toeplitz_hash(h.src_ip, h.dst_ip, h.src_port, h.dst_port))
    for proto in ("icmp", "igmp"):
        t = build_flow_table(spec(flows=8, proto=proto, src_ip=Range(1, 8)), rng())
        h = t.headers
        assert np.array_equal(t.rss_hash, toeplitz_hash(h.src_ip, h.dst_ip))
    assert t.rss_hash.dtype == np.uint32


def test_gso_share_is_spread_evenly_and_exactly() -> None:
    none = build_flow_table(spec(flows=1000, gso=0.0), rng())
    assert not none.gso.any()
    every = build_flow_table(spec(flows=1000, gso=1.0), rng())
    assert every.gso.all()
    quarter = build_flow_table(spec(flows=1000, gso=0.25), rng())
    assert quarter.gso.tolist() == [j % 4 == 3 for j in range(1000)]
    assert int(quarter.gso.sum()) == 250
    # one flow, one size: the table is stretched so the share can exist at all
    single = build_flow_table(spec(flows=1, gso=0.1), rng())
    assert len(single) == 20 and int(single.gso.sum()) == 2
    # GSO only flags the entry; sizes are kept as given
    assert quarter.size.tolist() == [64] * 1000


def test_flow_table_arrays_are_read_only() -> None:
    table = build_flow_table(spec(flows=3), rng())
    assert not table.size.flags.writeable
    assert not table.gso.flags.writeable
    assert not table.rss_hash.flags.writeable


@pytest.mark.parametrize(
    ("start", "stop", "length"),
    [(0, 0, 1), (0, 1, 5), (0, 17, 5), (3, 4, 5), (7, 100, 12), (12, 24, 12), (999, 12345, 7)],
)
def test_frames_per_entry_matches_brute_force_count(start: int, stop: int, length: int) -> None:
    brute = np.zeros(length, dtype=np.int64)
    for n in range(start, stop):
        brute[n % length] += 1
    got = frames_per_entry(start, stop, length)
    assert got.dtype == np.int64
    assert got.tolist() == brute.tolist()
    assert int(got.sum()) == stop - start


def test_frames_per_entry_handles_frame_numbers_beyond_int32() -> None:
    start = 10**12 + 3
    got = frames_per_entry(start, start + 1000, 65536)
    assert int(got.sum()) == 1000
    assert got[start % 65536] == 1


def test_frames_per_entry_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        frames_per_entry(5, 4, 3)
    with pytest.raises(ValueError):
        frames_per_entry(0, 4, 0)
