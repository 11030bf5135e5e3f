"""Hashes: Toeplitz RSS against Microsoft's verification vectors, bond xmit hashes by hand."""

from __future__ import annotations

import ipaddress

import numpy as np
import pytest

from xdptui.model.topology import XMIT_HASH_POLICIES
from xdptui.sim.hashing import (
    DEFAULT_RSS_KEY,
    FlowHeaders,
    bond_eth_hash,
    bond_vlan_srcmac_hash,
    bond_xmit_hash,
    default_reta,
    rss_queue,
    toeplitz_hash,
)

SRC_MAC = 0x001122334455  # 00:11:22:33:44:55
DST_MAC = 0x002233445566  # 00:22:33:44:55:66
SRC_IP = 0xC6120001  # 198.18.0.1
DST_IP = 0x0A000001  # 10.0.0.1


def ip(text: str) -> int:
    return int(ipaddress.IPv4Address(text))


def one_flow(**kw: object) -> FlowHeaders:
    fields: dict[str, object] = {
        "src_mac": SRC_MAC,
        "dst_mac": DST_MAC,
        "src_ip": SRC_IP,
        "dst_ip": DST_IP,
        "proto": 17,
        "src_port": 1024,
        "dst_port": 80,
    }
    fields.update(kw)
    return FlowHeaders.make(**fields)  # type: ignore[arg-type]


# ------------------------------------------------------------------ RSS

# Microsoft "Verifying the RSS Hash Calculation", IPv4 table:
# (source, source port, destination, destination port, IPv4-only hash, IPv4-with-TCP hash)
RSS_VECTORS = [
    ("66.9.149.187", 2794, "161.142.100.80", 1766, 0x323E8FC2, 0x51CCC178),
    ("199.92.111.2", 14230, "65.69.140.83", 4739, 0xD718262A, 0xC626B0EA),
    ("24.19.198.95", 12898, "12.22.207.184", 38024, 0xD2D0A5DE, 0x5C2B394A),
    ("38.27.205.30", 48228, "209.142.163.6", 2217, 0x82989176, 0xAFC7327F),
    ("153.39.163.191", 44251, "202.188.127.2", 1303, 0x5D1809C5, 0x10E828A2),
]


def test_default_rss_key_is_the_microsoft_verification_key() -> None:
    assert len(DEFAULT_RSS_KEY) == 40
    assert DEFAULT_RSS_KEY[:4] == bytes([0x6D, 0x5A, 0x56, 0xDA])
    assert DEFAULT_RSS_KEY[-4:] == bytes([0xBE, 0xAC, 0x01, 0xFA])


@pytest.mark.parametrize(("src", "sport", "dst", "dport", "h2", "h4"), RSS_VECTORS)
def test_toeplitz_matches_microsoft_verification_vectors(
    src: str, sport: int, dst: str, dport: int, h2: int, h4: int
) -> None:
    s = np.array([ip(src)], dtype=np.uint32)
    d = np.array([ip(dst)], dtype=np.uint32)
    assert toeplitz_hash(s, d)[0] == h2
    assert toeplitz_hash(s, d, np.array([sport]), np.array([dport]))[0] == h4


def test_toeplitz_is_vectorized_over_a_batch_of_flows() -> None:
    src = np.array([ip(r[0]) for r in RSS_VECTORS], dtype=np.uint32)
    sport = np.array([r[1] for r in RSS_VECTORS], dtype=np.uint16)
    dst = np.array([ip(r[2]) for r in RSS_VECTORS], dtype=np.uint32)
    dport = np.array([r[3] for r in RSS_VECTORS], dtype=np.uint16)
    h4 = toeplitz_hash(src, dst, sport, dport)
    assert h4.dtype == np.uint32
    assert h4.tolist() == [r[5] for r in RSS_VECTORS]
    assert toeplitz_hash(src, dst).tolist() == [r[4] for r in RSS_VECTORS]


def test_toeplitz_needs_both_ports_or_neither() -> None:
    with pytest.raises(ValueError, match="both"):
        toeplitz_hash([1], [2], [3], None)


def test_rss_queue_indexes_reta_with_hash_modulo_size() -> None:
    reta = default_reta(128, 4)
    assert reta.tolist() == [i % 4 for i in range(128)]
    hashes = np.array([0, 1, 5, 127, 128, 0x51CCC178], dtype=np.uint32)
    # 0x51ccc178 % 128 = 0x78 = 120 -> 120 % 4 = 0
    assert rss_queue(hashes, reta).tolist() == [0, 1, 1, 3, 0, 0]
    custom = np.array([7, 3, 5])
    assert rss_queue(np.array([0, 1, 2, 3, 4], dtype=np.uint32), custom).tolist() == [
        7,
        3,
        5,
        7,
        3,
    ]


# ------------------------------------------------------------------ bond hashes


def test_bond_layer2_hash_worked_example() -> None:
    # kernel-semantics 1.12: 0x66 ^ 0x55 ^ 0x0800 = 0x0833 = 2099; 2099 % 2 = 1.
    h = bond_xmit_hash("layer2", one_flow())
    assert h.dtype == np.uint32
    assert h.tolist() == [0x0833]
    assert int(h[0]) == 2099
    assert int(h[0]) % 2 == 1
    assert bond_eth_hash([SRC_MAC], [DST_MAC], [0x0800]).tolist() == [2099]


def test_bond_layer3_4_hash_of_udp_flow_by_hand() -> None:
    # 198.18.0.1:1024 -> 10.0.0.1:80 UDP.
    # ports word: bswap16(1024 = 0x0400) = 0x0004, bswap16(80 = 0x0050) = 0x5000
    #   -> 0x0004 | 0x5000 << 16 = 0x50000004
    # saddr c6.12.00.01 read LE = 0x010012c6, daddr 0a.00.00.01 read LE = 0x0100000a
    # h = 0x50000004 ^ 0x0100000a ^ 0x010012c6 = 0x500012c8
    # h ^= h >> 16 (0x5000)     -> 0x500042c8
    # h ^= h >> 8 (0x00500042)  -> 0x5050428a
    # h >> 1                    -> 0x28282145
    assert bond_xmit_hash("layer3+4", one_flow()).tolist() == [0x28282145]


def test_bond_layer2_3_hash_folds_eth_hash_with_addresses() -> None:
    # h = 0x0833 ^ 0x0100000a ^ 0x010012c6 = 0x00001aff
    # h ^= h >> 16 (0)      -> 0x1aff
    # h ^= h >> 8 (0x1a)    -> 0x1ae5 (low bit kept: no >> 1 for 2+3)
    assert bond_xmit_hash("layer2+3", one_flow()).tolist() == [0x1AE5]


def test_bond_encap_policies_equal_plain_ones_for_untunnelled_frames() -> None:
    rng = np.random.default_rng(7)
    n = 500
    flows = FlowHeaders.make(
        src_mac=rng.integers(0, 1 << 48, n, dtype=np.uint64),
        dst_mac=rng.integers(0, 1 << 48, n, dtype=np.uint64),
        src_ip=rng.integers(0, 1 << 32, n, dtype=np.uint64),
        dst_ip=rng.integers(0, 1 << 32, n, dtype=np.uint64),
        proto=rng.choice([1, 2, 6, 17], n),
        src_port=rng.integers(0, 1 << 16, n),
        dst_port=rng.integers(0, 1 << 16, n),
        frag=rng.random(n) < 0.1,
        ethertype=rng.choice([0x0800, 0x0806], n),
    )
    assert np.array_equal(bond_xmit_hash("encap2+3", flows), bond_xmit_hash("layer2+3", flows))
    assert np.array_equal(bond_xmit_hash("encap3+4", flows), bond_xmit_hash("layer3+4", flows))


def test_bond_vlan_srcmac_hash_xors_vendor_device_and_tag() -> None:
    # vendor 00:11:22 = 0x001122, device 33:44:55 = 0x334455 -> 0x335577
    assert bond_xmit_hash("vlan+srcmac", one_flow()).tolist() == [0x335577]
    # skb path with accelerated tag 100 = 0x64: 0x335577 ^ 0x64 = 0x335513
    assert bond_xmit_hash("vlan+srcmac", one_flow(), vlan=[100]).tolist() == [0x335513]
    assert bond_vlan_srcmac_hash([SRC_MAC], [100]).tolist() == [0x335513]
    # destination MAC, addresses and ports play no part
    other = one_flow(dst_mac=0x0A0B0C0D0E0F, src_ip=1, dst_port=9)
    assert bond_xmit_hash("vlan+srcmac", other).tolist() == [0x335577]


def test_bond_layer3_4_hashes_only_addresses_for_fragments() -> None:
    # ports word 0: h = 0x000012cc; ^ >> 16 -> 0x12cc; ^ >> 8 (0x12) -> 0x12de; >> 1 -> 0x096f
    frag = one_flow(frag=True)
    assert bond_xmit_hash("layer3+4", frag).tolist() == [0x096F]
    other_ports = one_flow(frag=True, src_port=5555, dst_port=6666)
    assert bond_xmit_hash("layer3+4", other_ports).tolist() == [0x096F]


def test_bond_layer3_4_uses_zero_ports_word_for_igmp() -> None:
    igmp = one_flow(proto=2, src_port=4321, dst_port=1234)
    assert bond_xmit_hash("layer3+4", igmp).tolist() == [0x096F]


@pytest.mark.parametrize("policy", ["layer2+3", "layer3+4", "encap2+3", "encap3+4"])
def test_bond_non_ip_frames_fall_back_to_unfolded_layer2_hash(policy: str) -> None:
    arp = one_flow(ethertype=0x0806)
    # 0x66 ^ 0x55 ^ 0x0806 = 0x0835, no folding, no >> 1
    assert bond_xmit_hash(policy, arp).tolist() == [0x0835]


def test_bond_layer3_4_uses_icmp_echo_id_word() -> None:
    # echo request, id 0x1234 (the src_port field): word = type 8 | code 0 << 8 | id << 16
    #   = 0x12340008
    # h = 0x12340008 ^ 0x0100000a ^ 0x010012c6 = 0x123412c4
    # h ^= h >> 16 (0x1234)     -> 0x123400f0
    # h ^= h >> 8 (0x00123400)  -> 0x122634f0
    # h >> 1                    -> 0x09131a78
    icmp = one_flow(proto=1, src_port=0x1234, dst_port=0)
    assert bond_xmit_hash("layer3+4", icmp).tolist() == [0x09131A78]
    # the dst_port field is not part of an echo request
    assert bond_xmit_hash("layer3+4", one_flow(proto=1, src_port=0x1234, dst_port=99)).tolist() == [
        0x09131A78
    ]


def test_bond_icmp_id_zero_hashes_as_id_one() -> None:
    # skb_flow_get_icmp_tci: a zero echo id is stored as 1, so word = 0x00010008
    zero = bond_xmit_hash("layer3+4", one_flow(proto=1, src_port=0))
    one = bond_xmit_hash("layer3+4", one_flow(proto=1, src_port=1))
    assert zero.tolist() == one.tolist()


def test_bond_hash_of_one_flow_equals_same_flow_in_large_batch() -> None:
    rng = np.random.default_rng(1234)
    n = 10_000
    batch = FlowHeaders.make(
        src_mac=rng.integers(0, 1 << 48, n, dtype=np.uint64),
        dst_mac=rng.integers(0, 1 << 48, n, dtype=np.uint64),
        src_ip=rng.integers(0, 1 << 32, n, dtype=np.uint64),
        dst_ip=rng.integers(0, 1 << 32, n, dtype=np.uint64),
        proto=rng.choice([1, 2, 6, 17], n),
        src_port=rng.integers(0, 1 << 16, n),
        dst_port=rng.integers(0, 1 << 16, n),
        frag=rng.random(n) < 0.05,
        ethertype=rng.choice([0x0800, 0x0800, 0x0806], n),
    )
    vlans = rng.integers(0, 4096, n)
    for i in (0, 4321, n - 1):
        single = batch.take([i])
        for policy in XMIT_HASH_POLICIES:
            assert (
                bond_xmit_hash(policy, single, vlan=vlans[i : i + 1])[0]
                == (bond_xmit_hash(policy, batch, vlan=vlans)[i])
            ), policy
        assert (
            toeplitz_hash(single.src_ip, single.dst_ip, single.src_port, single.dst_port)[0]
            == (toeplitz_hash(batch.src_ip, batch.dst_ip, batch.src_port, batch.dst_port)[i])
        )


def test_bond_xmit_hash_rejects_unknown_policy() -> None:
    with pytest.raises(ValueError, match="xmit_hash_policy"):
        bond_xmit_hash("layer5", one_flow())


def test_flow_headers_are_read_only_and_equal_length() -> None:
    flows = one_flow()
    assert len(flows) == 1
    assert not flows.src_port.flags.writeable
    with pytest.raises(ValueError, match="entries"):
        FlowHeaders(
            src_mac=np.zeros(2, dtype=np.uint64),
            dst_mac=np.zeros(2, dtype=np.uint64),
            ethertype=np.zeros(2, dtype=np.uint16),
            vlan=np.zeros(2, dtype=np.uint16),
            src_ip=np.zeros(2, dtype=np.uint32),
            dst_ip=np.zeros(3, dtype=np.uint32),
            proto=np.zeros(2, dtype=np.uint8),
            src_port=np.zeros(2, dtype=np.uint16),
            dst_port=np.zeros(2, dtype=np.uint16),
            frag=np.zeros(2, dtype=np.bool_),
        )
