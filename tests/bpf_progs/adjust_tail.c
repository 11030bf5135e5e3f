/* bpf_xdp_adjust_tail by a packet-chosen amount (shrink, grow, too far both ways); the
 * helper's return value is the program's return (as 0..4, or 5 for -EINVAL). */
#include "t_common.h"

SEC("xdp")
int adjust_tail(struct xdp_md *ctx)
{
	NEED(16)
	int delta = (int)(*(__u16 *)(data + 14) % 8000) - 4000;
	long ret = bpf_xdp_adjust_tail(ctx, delta);

	if (ret)
		return ret == -22 ? 5 : 6;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + 14 <= data_end)
		((__u8 *)data)[13] ^= 0x5a;
	return XDP_TX;
}
