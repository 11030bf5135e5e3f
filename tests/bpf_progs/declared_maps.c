/* An object that declares a CPUMAP, an XSKMAP and a PROG_ARRAY (as xdp-tools' and the
 * AF_XDP examples' objects do for their other programs) but whose program uses only a hash:
 * it loads, and runs as the kernel runs it. */
#include "t_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
} cpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} jumps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u8);
	__type(value, __u64);
} seen SEC(".maps");

SEC("xdp")
int declared_maps(struct xdp_md *ctx)
{
	NEED(15)
	__u8 k = ((__u8 *)data)[14] & 31;
	__u64 *v = bpf_map_lookup_elem(&seen, &k);

	if (v)
		__sync_fetch_and_add(v, 1);
	else {
		__u64 one = 1;
		bpf_map_update_elem(&seen, &k, &one, BPF_NOEXIST);
	}
	return k & 1 ? XDP_DROP : XDP_PASS;
}
