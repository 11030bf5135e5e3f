/* bpf_xdp_adjust_head by a packet-chosen amount, then write the new first bytes. */
#include "t_common.h"

SEC("xdp")
int adjust_head(struct xdp_md *ctx)
{
	NEED(16)
	int delta = (int)(*(__u16 *)(data + 14) % 800) - 400;
	long ret = bpf_xdp_adjust_head(ctx, delta);

	if (ret)
		return ret == -22 ? 5 : 6;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + 4 > data_end)
		return 7;
	*(__u32 *)data = 0xdeadbeef;
	return XDP_TX;
}
