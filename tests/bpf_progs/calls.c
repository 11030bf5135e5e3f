/* bpf-to-bpf calls: a global and a static noinline function, a callee using its own stack
 * frame, nested two deep. */
#include "t_common.h"

static __attribute__((noinline)) __u32 mix(__u32 a, __u32 b)
{
	volatile __u32 tmp[4] = {a, b, a ^ b, a + b};

	return tmp[0] * 31 + tmp[1] * 17 + tmp[2] - tmp[3];
}

__attribute__((noinline)) int classify(__u32 x)
{
	__u32 m = mix(x, x >> 3);

	return (m % 5) == 4 ? XDP_DROP : (int)(m % 4);
}

SEC("xdp")
int calls(struct xdp_md *ctx)
{
	NEED(24)
	__u32 *w = data;
	__u32 r = mix(w[3], w[4]);

	w[0] = r;
	return classify(w[5] ^ r);
}
