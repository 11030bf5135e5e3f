/* 64- and 32-bit arithmetic on packet-controlled operands: division and modulo (by zero
 * too), shifts, negation, byte swaps; the results overwrite the packet. */
#include "t_common.h"

SEC("xdp")
int alu_edge(struct xdp_md *ctx)
{
	NEED(64)
	__u64 *q = data;
	__u32 *w = data;
	__u64 a = q[1], b = q[2];
	__u32 c = w[6], d = w[7];
	__u8 s = ((__u8 *)data)[40];

	q[0] = a / (b & 0xff);            /* b & 0xff may be 0 */
	q[1] = a % (b >> 60);
	w[4] = c / (d & 7);
	w[5] = c % (d & 3);
	q[3] = a << (s & 63);
	q[4] = (__s64)a >> (s & 63);
	w[10] = c >> (s & 31);
	w[11] = (__s32)c >> (s & 31);
	q[6] = -a + (b * c);
	w[14] = bpf_htonl(c) ^ (__u32)bpf_htons((__u16)d);
	w[15] = (c * d) - (c | d) + (c & ~d);
	return (q[0] + q[1] + c) & 3;
}
