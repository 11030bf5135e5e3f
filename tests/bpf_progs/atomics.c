/* Atomics on a map value shared by every packet: add, fetch-add, or, and, xor, xchg and
 * cmpxchg (-mcpu=v3). Fetched values go into the packet, so each packet sees the state its
 * predecessors left. */
#include "t_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64[6]);
	__uint(max_entries, 2);
} vals SEC(".maps");

SEC("xdp")
int atomics(struct xdp_md *ctx)
{
	NEED(48)
	__u64 *q = data;
	__u32 key = ((__u8 *)data)[5] & 1;
	__u64 *v = bpf_map_lookup_elem(&vals, &key);
	__u64 x = q[1];

	if (!v)
		return XDP_ABORTED;
	__sync_fetch_and_add(&v[0], 1);
	q[0] = __sync_fetch_and_add(&v[1], x & 0xffff);
	q[2] = __sync_fetch_and_or(&v[2], x);
	q[3] = __sync_fetch_and_xor(&v[3], x >> 3);
	q[4] = __sync_lock_test_and_set(&v[4], x);
	q[5] = __sync_val_compare_and_swap(&v[5], x & 0xf, x);
	__sync_fetch_and_and(&v[2], ~(x << 7));
	return XDP_TX;
}
