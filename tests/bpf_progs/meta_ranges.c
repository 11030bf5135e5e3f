/* data_meta ranges: reserve metadata, check it against data before each read and write
 * (the verifier proves the range as it proves data's against data_end), and move it. */
#include "t_common.h"

SEC("xdp")
int meta_ranges(struct xdp_md *ctx)
{
	NEED(16)
	__u8 n = ((__u8 *)data)[14] & 31;
	void *meta;

	if (bpf_xdp_adjust_meta(ctx, -(int)(n & ~3)))
		return XDP_ABORTED;
	meta = (void *)(long)ctx->data_meta;
	data = (void *)(long)ctx->data;
	if (meta + 8 <= data) {
		((__u32 *)meta)[0] = 0xdeadbeef;
		((__u32 *)meta)[1] = n;
		return XDP_TX;
	}
	if (meta + 4 <= data) {
		*(__u32 *)meta = n;
		return XDP_DROP;
	}
	return XDP_PASS;
}
