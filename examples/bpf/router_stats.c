/* fwd_devmap's router with per-CPU counters: decrement the IPv4 TTL (incremental checksum),
 * rewrite the MACs, redirect through the devmap slot the destination's last two bits pick, and
 * count packets and bytes per slot in a per-CPU array. Every counter is an add no frame reads
 * back, so the verdict is a function of the frame: xdptui runs it once per flow and adds each
 * poll's frames to the polling CPU's counters. */
#include "common.h"

struct counters {
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 4);
} tx_port SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct counters);
	__uint(max_entries, 4);
} slot_stats SEC(".maps");

static const unsigned char router_mac[ETH_ALEN] = {0x02, 0, 0, 0, 0, 0xfe};

SEC("xdp")
int xdp_router_stats(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct counters *c;
	__u32 csum, slot;

	if ((void *)(ip + 1) > data_end)
		return XDP_PASS;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	if (ip->ttl <= 1)
		return XDP_PASS; /* let the stack send the ICMP time exceeded */
	csum = ip->check;
	csum += bpf_htons(0x0100);
	ip->check = (__u16)(csum + (csum >= 0xffff));
	ip->ttl--;
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, router_mac, ETH_ALEN);
	slot = bpf_ntohl(ip->daddr) & 3;
	c = bpf_map_lookup_elem(&slot_stats, &slot);
	if (c) {
		c->packets++;
		c->bytes += data_end - data;
	}
	return bpf_redirect_map(&tx_port, slot, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
