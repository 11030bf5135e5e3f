/* bpf_xdp_adjust_meta: reserve metadata (a packet-chosen size, valid or not), write it,
 * then move the head too so the metadata moves with it. */
#include "t_common.h"

SEC("xdp")
int adjust_meta(struct xdp_md *ctx)
{
	NEED(16)
	__u8 n = ((__u8 *)data)[14];
	long ret = bpf_xdp_adjust_meta(ctx, -(int)(n % 72));
	void *meta;

	if (ret)
		return ret == -22 ? 5 : ret == -13 ? 6 : 7;
	data = (void *)(long)ctx->data;
	meta = (void *)(long)ctx->data_meta;
	if (meta + 4 <= data)
		*(__u32 *)meta = 0x01020304;
	if (n & 0x80) {
		if (bpf_xdp_adjust_head(ctx, 8))
			return 8;
	}
	return XDP_PASS;
}
