/* 32-bit comparisons (JMP32 with -mcpu=v3): signed and unsigned, against registers and
 * immediates, on values taken from the packet. */
#include "t_common.h"

SEC("xdp")
int jmp32(struct xdp_md *ctx)
{
	NEED(32)
	__u32 *w = data;
	__u32 a = w[2], b = w[3];
	__s32 sa = (__s32)w[4], sb = (__s32)w[5];
	__u32 r = 0;

	if (a < b)
		r |= 1;
	if (a >= 0x80000000u)
		r |= 2;
	if (sa < sb)
		r |= 4;
	if (sa > -5)
		r |= 8;
	if ((a & b) != 0)
		r |= 16;
	if (sa <= 0)
		r |= 32;
	if (a == (b ^ 0x01010101))
		r |= 64;
	w[0] = r;
	return r & 3;
}
