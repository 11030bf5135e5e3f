/* Drop UDP and TCP packets to one destination port (IPv4 and IPv6), pass the rest.
 * The port is a constant in .rodata, so a loader can change it before loading. */
#include "common.h"

volatile const __u16 drop_port = 53;

SEC("xdp")
int xdp_drop_port(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u8 proto;
	void *l4;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > data_end)
			return XDP_DROP;
		if (ip->ihl < 5)
			return XDP_DROP;
		proto = ip->protocol;
		l4 = (void *)ip + ip->ihl * 4;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > data_end)
			return XDP_DROP;
		proto = ip6->nexthdr;
		l4 = ip6 + 1;
	} else {
		return XDP_PASS;
	}
	if (proto == IPPROTO_UDP) {
		struct udphdr *udp = l4;

		if ((void *)(udp + 1) > data_end)
			return XDP_DROP;
		if (udp->dest == bpf_htons(drop_port))
			return XDP_DROP;
	} else if (proto == IPPROTO_TCP) {
		struct tcphdr *tcp = l4;

		if ((void *)(tcp + 1) > data_end)
			return XDP_DROP;
		if (tcp->dest == bpf_htons(drop_port))
			return XDP_DROP;
	}
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
