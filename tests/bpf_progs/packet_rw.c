/* Loads and stores of every size at variable (checked) packet offsets, plus a swap of
 * 8-byte words through the stack. */
#include "t_common.h"

SEC("xdp")
int packet_rw(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 off;
	__u64 tmp[2];

	if (data + 32 > data_end)
		return XDP_PASS;
	off = ((__u8 *)data)[14] & 0x3f;
	if (data + off + 16 > data_end)
		return XDP_DROP;
	__builtin_memcpy(tmp, data + off, 16);
	*(__u64 *)(data + 16) = tmp[1];
	*(__u32 *)(data + 24) = (__u32)tmp[0];
	*(__u16 *)(data + 28) = (__u16)(tmp[0] >> 32);
	*(__u8 *)(data + 30) = off;
	return XDP_TX;
}
