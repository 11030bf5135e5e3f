/* bpf_check_mtu: the receiving device (ifindex 0, lo under BPF_PROG_TEST_RUN) and a device
 * that does not exist, with a packet-chosen length difference and mtu_len given or not; the
 * return value and the MTU it wrote go into the packet. A section named like xdp-tutorial's
 * (not "xdp"): iproute2 and bpftool's "type xdp" load it as XDP all the same. */
#include "t_common.h"

SEC("xdp_check_mtu")
int check_mtu(struct xdp_md *ctx)
{
	NEED(24)
	__u8 *p = data;
	__u32 mtu_len = (p[14] & 1) ? 1400 + p[15] : 0;
	__s32 diff = (__s32)(__s8)p[16] * 512;
	__u32 ifindex = (p[17] & 3) == 3 ? 0xfffff : 0;
	__u64 flags = (p[17] & 0x7c) == 0x40 ? 1 : 0;
	long ret = bpf_check_mtu(ctx, ifindex, &mtu_len, diff, flags);

	p[18] = (__u8)ret;
	p[19] = (__u8)(ret >> 8);
	__builtin_memcpy(p + 20, &mtu_len, 4);
	return XDP_PASS;
}
