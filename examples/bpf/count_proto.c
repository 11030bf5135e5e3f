/* Count packets and bytes per IP protocol in a per-CPU array (IPv4 and IPv6). */
#include "common.h"

struct counters {
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct counters);
	__uint(max_entries, 256);
} proto_stats SEC(".maps");

SEC("xdp")
int xdp_count_proto(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct counters *c;
	__u32 key = 255; /* not IP */

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) <= data_end)
			key = ip->protocol;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) <= data_end)
			key = ip6->nexthdr;
	}
	c = bpf_map_lookup_elem(&proto_stats, &key);
	if (!c)
		return XDP_ABORTED;
	c->packets++;
	c->bytes += data_end - data;
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
