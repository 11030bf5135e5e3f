/* Drop UDP and TCP packets to the destination ports listed in a hash map, pass the rest.
 * The map starts empty: whoever runs the program fills it (a topology's maps:, or
 * `bpftool map update name drop_ports key hex 35 00 value hex 01 00 00 00`). The key is the
 * port in host order (53 is `hex 35 00` on a little-endian host); a non-zero value drops. */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u16);
	__type(value, __u32);
} drop_ports SEC(".maps");

SEC("xdp")
int xdp_drop_ports_map(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u16 port;
	__u32 *drop;
	__u8 proto;
	void *l4;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > data_end || ip->ihl < 5)
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
		port = bpf_ntohs(udp->dest);
	} else if (proto == IPPROTO_TCP) {
		struct tcphdr *tcp = l4;

		if ((void *)(tcp + 1) > data_end)
			return XDP_DROP;
		port = bpf_ntohs(tcp->dest);
	} else {
		return XDP_PASS;
	}
	drop = bpf_map_lookup_elem(&drop_ports, &port);
	return drop && *drop ? XDP_DROP : XDP_PASS;
}

char _license[] SEC("license") = "GPL";
