/* A parser with many paths: VLAN/QinQ, IPv4 with options, IPv6, fragments, TCP flags,
 * ICMP types, truncated headers; returns a code per path and stamps the path in byte 0. */
#include "t_common.h"
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <linux/tcp.h>

struct icmphdr {
	__u8 type;
	__u8 code;
	__u16 checksum;
	__u32 rest;
};

SEC("xdp")
int parse_deep(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	void *cur = eth + 1;
	__u16 proto;
	__u8 l4 = 0;

	if (cur > data_end)
		return XDP_DROP;
	proto = eth->h_proto;
	if (proto == bpf_htons(ETH_P_8021AD) || proto == bpf_htons(ETH_P_8021Q)) {
		if (cur + 4 > data_end)
			return XDP_DROP;
		proto = *(__u16 *)(cur + 2);
		cur += 4;
		if (proto == bpf_htons(ETH_P_8021Q)) {
			if (cur + 4 > data_end)
				return XDP_DROP;
			proto = *(__u16 *)(cur + 2);
			cur += 4;
		}
	}
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = cur;

		if ((void *)(ip + 1) > data_end)
			return XDP_ABORTED;
		if (ip->ihl < 5)
			return XDP_DROP;
		if (ip->frag_off & bpf_htons(0x3fff))
			return XDP_PASS;
		cur = (void *)ip + ip->ihl * 4;
		l4 = ip->protocol;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = cur;

		if ((void *)(ip6 + 1) > data_end)
			return XDP_ABORTED;
		cur = ip6 + 1;
		l4 = ip6->nexthdr;
	} else {
		return XDP_PASS;
	}
	if (l4 == IPPROTO_TCP) {
		struct tcphdr *tcp = cur;

		if ((void *)(tcp + 1) > data_end)
			return XDP_DROP;
		eth->h_dest[0] = 0x10 | (tcp->syn << 1) | tcp->fin;
		return tcp->rst ? XDP_DROP : XDP_TX;
	}
	if (l4 == IPPROTO_UDP) {
		struct udphdr *udp = cur;

		if ((void *)(udp + 1) > data_end)
			return XDP_DROP;
		eth->h_dest[0] = 0x20;
		return bpf_ntohs(udp->dest) < 1024 ? XDP_TX : XDP_PASS;
	}
	if (l4 == IPPROTO_ICMP || l4 == 58) {
		struct icmphdr *icmp = cur;

		if ((void *)(icmp + 1) > data_end)
			return XDP_DROP;
		eth->h_dest[0] = 0x30 | (icmp->type & 0xf);
		return icmp->type == 8 || icmp->type == 128 ? XDP_TX : XDP_PASS;
	}
	return XDP_PASS;
}
