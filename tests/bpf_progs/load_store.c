/* bpf_xdp_load_bytes / bpf_xdp_store_bytes at packet-chosen offsets (in range or not). */
#include "t_common.h"

SEC("xdp")
int load_store(struct xdp_md *ctx)
{
	NEED(20)
	__u8 buf[16];
	__u32 off = *(__u16 *)(data + 14) % 1600;
	long r1, r2;

	__builtin_memset(buf, 0x11, sizeof(buf));
	r1 = bpf_xdp_load_bytes(ctx, off, buf, sizeof(buf));
	buf[0] ^= 0xff;
	r2 = bpf_xdp_store_bytes(ctx, (off / 2) & 0xffff, buf, 12);
	if (r1 && r2)
		return 5;
	if (r1)
		return 6;
	if (r2)
		return 7;
	return XDP_TX;
}
