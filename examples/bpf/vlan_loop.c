/* Walk up to four VLAN tags (802.1Q or 802.1ad) in a bounded loop, then drop IPv4 on
 * VLAN 100 at any depth, pass the rest. The loop stays a loop (no unrolling): the
 * verifier checks that it terminates. */
#include "common.h"

#define MAX_TAGS 4

SEC("xdp")
int xdp_vlan_loop(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct vlan_hdr *tag = (void *)(eth + 1);
	__be16 proto;
	int seen100 = 0;
	int i;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	proto = eth->h_proto;
#pragma clang loop unroll(disable)
	for (i = 0; i < MAX_TAGS; i++) {
		if (!is_vlan(proto))
			break;
		if ((void *)(tag + 1) > data_end)
			return XDP_DROP;
		if ((bpf_ntohs(tag->tci) & 0x0fff) == 100)
			seen100 = 1;
		proto = tag->proto;
		tag++;
	}
	if (is_vlan(proto))
		return XDP_ABORTED; /* more tags than we walk */
	if (seen100 && proto == bpf_htons(ETH_P_IP))
		return XDP_DROP;
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
