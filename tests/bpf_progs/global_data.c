/* Global data: a .rodata constant, a .data counter and a .bss array written per packet. */
#include "t_common.h"

volatile const __u32 step = 3;
__u64 packets = 7;
__u32 last_len[4];

SEC("xdp")
int global_data(struct xdp_md *ctx)
{
	NEED(14)
	__u32 len = data_end - data;

	packets += step;
	last_len[len & 3] = len;
	((__u8 *)data)[0] = (__u8)packets;
	return len & 1 ? XDP_PASS : XDP_DROP;
}
