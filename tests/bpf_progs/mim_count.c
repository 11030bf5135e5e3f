/* An object that declares a map-in-map and a prog array (BTF __array(values, ...)) beside a
 * plain counter, as katran-like objects do: the counting program loads and runs as in the
 * kernel. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, 8);
	__type(key, __u32);
	__array(values, struct inner);
} outer SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, int (void *));
} jumps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

SEC("xdp")
int mim_count(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 k = data + 64 <= end;
	__u64 *v = bpf_map_lookup_elem(&seen, &k);

	if (v)
		__sync_fetch_and_add(v, 1);
	return k ? XDP_PASS : XDP_DROP;
}

char _license[] SEC("license") = "GPL";
