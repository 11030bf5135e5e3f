/* A tiny router: decrement the IPv4 TTL (updating the checksum incrementally, RFC 1624),
 * rewrite the MACs and redirect through a devmap chosen by the destination's last octet.
 * Packets whose slot is empty fall back to XDP_PASS (the low bits of the flags). */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 4);
} tx_port SEC(".maps");

static const unsigned char router_mac[ETH_ALEN] = {0x02, 0, 0, 0, 0, 0xfe};

SEC("xdp")
int xdp_fwd_devmap(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	__u32 csum;

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
	return bpf_redirect_map(&tx_port, bpf_ntohl(ip->daddr) & 3, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
