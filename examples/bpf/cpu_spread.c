/* Spread flows over CPUs with a cpumap, as samples/bpf/xdp_redirect_cpu does: an IPv4 UDP or
 * TCP frame goes to CPU 2 + (source port % 4), anything else up the stack here. A cpumap
 * entry program (SEC("xdp/cpumap"), run by the target CPU's kthread) drops DNS replies to port
 * 53 before any skb is built. */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
	__uint(max_entries, 8);
} cpu_map SEC(".maps");

static __always_inline struct udphdr *l4(void *data, void *data_end)
{
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);

	if ((void *)(udp + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5)
		return 0;
	if (ip->protocol != IPPROTO_UDP && ip->protocol != IPPROTO_TCP)
		return 0;
	return udp; /* the ports are at the same place in TCP */
}

SEC("xdp")
int xdp_cpu_spread(struct xdp_md *ctx)
{
	struct udphdr *udp = l4((void *)(long)ctx->data, (void *)(long)ctx->data_end);

	if (!udp)
		return XDP_PASS;
	return bpf_redirect_map(&cpu_map, 2 + bpf_ntohs(udp->source) % 4, XDP_PASS);
}

SEC("xdp/cpumap")
int xdp_cpu_drop_dns(struct xdp_md *ctx)
{
	struct udphdr *udp = l4((void *)(long)ctx->data, (void *)(long)ctx->data_end);

	if (udp && udp->dest == bpf_htons(53))
		return XDP_DROP;
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
