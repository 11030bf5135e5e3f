/* bpf_csum_diff over packet words with seeds, folded, written back; a bad size too. */
#include "t_common.h"

static __always_inline __u16 fold(__u64 s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return ~s;
}

SEC("xdp")
int csum(struct xdp_md *ctx)
{
	NEED(64)
	__u32 *w = data;
	__u32 seed = w[15];
	__s64 a = bpf_csum_diff(w + 4, 8, w + 6, 8, seed);
	__s64 b = bpf_csum_diff(0, 0, w + 2, 20, 0);
	__s64 c = bpf_csum_diff(w + 8, 12, 0, 0, seed);
	__s64 d = bpf_csum_diff(w, 6, w, 4, 0);

	w[0] = (__u32)a;
	w[1] = (__u32)b;
	w[12] = (__u32)c;
	w[13] = (__u32)d;
	((__u16 *)data)[28] = fold((__u32)a);
	return XDP_TX;
}
