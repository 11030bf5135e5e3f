/* Map-in-map as katran uses it: an outer BPF_MAP_TYPE_ARRAY_OF_MAPS of two slots whose
 * inner arrays count packets per IP protocol, the slot chosen by a bit of the source MAC.
 * libbpf puts inner_a in slot 0 at load (the outer map's initial .values); slot 1 stays
 * empty until user space puts a map there (bpftool map update ... value name inner_b).
 * mim_hash does the same through a BPF_MAP_TYPE_HASH_OF_MAPS whose inner hash maps the
 * program fills itself. */
#include "t_common.h"

struct proto_counts {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u64);
};

struct proto_counts inner_a SEC(".maps"), inner_b SEC(".maps");

/* Same key and value, another max_entries: not compatible with the slots' template. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 128);
	__type(key, __u32);
	__type(value, __u64);
} inner_small SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct proto_counts);
} mim_slots SEC(".maps") = {
	.values = { [0] = &inner_a },
};

struct flow_counts {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
};

struct flow_counts inner_h SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, 4);
	__type(key, __u32);
	__array(values, struct flow_counts);
} mim_by_key SEC(".maps") = {
	.values = { [1] = &inner_h },
};

SEC("xdp")
int mim_proto(struct xdp_md *ctx)
{
	NEED(34)
	__u8 *p = data;
	__u32 slot = p[11] & 1;
	__u32 proto = p[23];
	__u64 *count;
	void *inner;

	inner = bpf_map_lookup_elem(&mim_slots, &slot);
	if (!inner)
		return XDP_DROP;
	count = bpf_map_lookup_elem(inner, &proto);
	if (!count)
		return XDP_ABORTED;
	__sync_fetch_and_add(count, 1);
	p[0] = slot;
	return slot ? XDP_TX : XDP_PASS;
}

SEC("xdp")
int mim_hash(struct xdp_md *ctx)
{
	NEED(34)
	__u8 *p = data;
	__u32 key = p[11] & 1;
	__u32 flow = p[23] & 15;
	__u64 one = 1, *count;
	void *inner;

	inner = bpf_map_lookup_elem(&mim_by_key, &key);
	if (!inner)
		return XDP_DROP;
	count = bpf_map_lookup_elem(inner, &flow);
	if (count) {
		*count += 1;
		p[0] = (__u8)*count;
		return XDP_PASS;
	}
	p[0] = (__u8)bpf_map_update_elem(inner, &flow, &one, BPF_NOEXIST);
	return XDP_TX;
}
