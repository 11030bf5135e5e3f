/* An IPv6 filter: drop hop limit <= 1, drop link-local sources off-link (fe80::/10 with
 * a global destination), drop everything from 2001:db8:bad::/48, pass ICMPv6 and the rest. */
#include "common.h"

SEC("xdp")
int xdp_ipv6_filter(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6 = (void *)(eth + 1);
	__u32 src0, dst0;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETH_P_IPV6))
		return XDP_PASS;
	if ((void *)(ip6 + 1) > data_end)
		return XDP_DROP;
	if (ip6->nexthdr == IPPROTO_ICMPV6)
		return XDP_PASS;
	if (ip6->hop_limit <= 1)
		return XDP_DROP;
	src0 = bpf_ntohl(ip6->saddr.in6_u.u6_addr32[0]);
	dst0 = bpf_ntohl(ip6->daddr.in6_u.u6_addr32[0]);
	if ((src0 & 0xffc00000) == 0xfe800000 && (dst0 & 0xe0000000) == 0x20000000)
		return XDP_DROP;
	if (src0 == 0x20010db8 && (bpf_ntohl(ip6->saddr.in6_u.u6_addr32[1]) >> 16) == 0x0bad)
		return XDP_DROP;
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
