/* Encapsulate IPv4 in IPv4 (IPIP): grow the head by 20 bytes with bpf_xdp_adjust_head,
 * move the Ethernet header, write an outer header with its checksum, send it back out. */
#include "common.h"

static __always_inline __u16 csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

SEC("xdp")
int xdp_encap_ipip(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *inner = (void *)(eth + 1);
	struct ethhdr *neth;
	struct iphdr *outer;
	__u16 inner_len;
	__u32 sum = 0;
	__u16 *w;
	int i;

	if ((void *)(inner + 1) > data_end)
		return XDP_PASS;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	inner_len = bpf_ntohs(inner->tot_len);
	if (bpf_xdp_adjust_head(ctx, -(int)sizeof(struct iphdr)))
		return XDP_ABORTED;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	neth = data;
	eth = data + sizeof(struct iphdr);
	outer = (void *)(neth + 1);
	if ((void *)(outer + 1) > data_end || (void *)(eth + 1) > data_end)
		return XDP_ABORTED;
	__builtin_memcpy(neth, eth, sizeof(*eth));
	outer->version = 4;
	outer->ihl = 5;
	outer->tos = 0;
	outer->tot_len = bpf_htons(inner_len + sizeof(struct iphdr));
	outer->id = 0;
	outer->frag_off = bpf_htons(0x4000);
	outer->ttl = 64;
	outer->protocol = IPPROTO_IPIP;
	outer->check = 0;
	outer->saddr = bpf_htonl(0xc0a80001);
	outer->daddr = bpf_htonl(0xc0a80002);
	w = (__u16 *)outer;
#pragma clang loop unroll(full)
	for (i = 0; i < (int)sizeof(*outer) / 2; i++)
		sum += w[i];
	outer->check = csum_fold(sum);
	return XDP_TX;
}

char _license[] SEC("license") = "GPL";
