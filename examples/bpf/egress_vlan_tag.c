/* A devmap egress program (SEC("xdp/devmap")): runs on frames a devmap sends out, after
 * the redirect; here it stamps the egress ifindex into the last byte of the source MAC. */
#include "common.h"

SEC("xdp/devmap")
int xdp_egress_stamp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	eth->h_source[5] = (unsigned char)ctx->egress_ifindex;
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
