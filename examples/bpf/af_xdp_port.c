/* Hand one UDP port to userspace with AF_XDP, as an xdpsock-style application does: a UDP
 * frame to port 4242 goes to the AF_XDP socket of the queue it arrived on
 * (bpf_redirect_map(&xsks_map, rx_queue_index, XDP_PASS): a queue without a socket passes
 * it), everything else up the stack. */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 64);
} xsks_map SEC(".maps");

SEC("xdp")
int xdp_sock_port(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	__u32 index = ctx->rx_queue_index;

	if ((void *)(udp + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5)
		return XDP_PASS;
	if (ip->protocol != IPPROTO_UDP || udp->dest != bpf_htons(4242))
		return XDP_PASS;
	if (!bpf_map_lookup_elem(&xsks_map, &index))
		return XDP_PASS;
	return bpf_redirect_map(&xsks_map, index, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
