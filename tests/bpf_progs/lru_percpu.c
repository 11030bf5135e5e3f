/* LRU hash and per-CPU hash updates from the program (no eviction: room for every key). */
#include "t_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u16);
	__type(value, __u64);
	__uint(max_entries, 1024);
} lru SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__type(key, __u8);
	__type(value, __u32);
	__uint(max_entries, 300);
} pch SEC(".maps");

SEC("xdp")
int lru_percpu(struct xdp_md *ctx)
{
	NEED(20)
	__u8 *p = data;
	__u16 k = (p[12] << 8 | p[13]) & 0x1ff;
	__u8 k2 = p[19];
	__u64 v = data_end - data;
	__u32 one = 1, *c;

	bpf_map_update_elem(&lru, &k, &v, BPF_ANY);
	c = bpf_map_lookup_elem(&pch, &k2);
	if (c)
		*c += p[18];
	else
		bpf_map_update_elem(&pch, &k2, &one, BPF_NOEXIST);
	return XDP_PASS;
}
