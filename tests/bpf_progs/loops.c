/* A bounded loop whose trip count comes from the packet: a 16-bit ones' complement sum of
 * up to 40 words, folded, written back. */
#include "t_common.h"

SEC("xdp")
int loops(struct xdp_md *ctx)
{
	NEED(96)
	__u16 *w = data;
	__u32 n = ((__u8 *)data)[15] % 41;
	__u32 sum = 0;
	__u32 i;

	for (i = 0; i < n && i < 40; i++)
		sum += w[8 + i];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	w[0] = (__u16)~sum;
	w[1] = (__u16)i;
	return XDP_TX;
}
