/* Round robin: each frame goes to the next of two devmap slots, whatever its headers, counting
 * in a per-CPU array (each CPU alternates on its own, as a bond's balance-rr counter does). The
 * program reads the counter it advances, so its verdict is not a function of the frame:
 * xdptui runs it frame by frame in exact mode and samples it in fast mode. */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 2);
} rr_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} rr_next SEC(".maps");

SEC("xdp")
int xdp_rr_devmap(struct xdp_md *ctx)
{
	__u32 zero = 0;
	__u32 *next = bpf_map_lookup_elem(&rr_next, &zero);
	__u32 slot;

	if (!next)
		return XDP_ABORTED;
	slot = *next & 1;
	*next += 1;
	return bpf_redirect_map(&rr_ports, slot, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
