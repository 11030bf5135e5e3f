/* Map updates from the program with every flag, on an array and a hash, and deletes; the
 * return codes go into the packet. */
#include "t_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 8);
} arr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 4);
} h SEC(".maps");

SEC("xdp")
int map_flags(struct xdp_md *ctx)
{
	NEED(24)
	__u8 *p = data;
	__u32 k = p[14] % 12, v = p[15], fl = p[16] % 4;

	p[0] = (__u8)bpf_map_update_elem(&arr, &k, &v, fl);
	p[1] = (__u8)bpf_map_update_elem(&h, &k, &v, fl);
	if (p[17] & 1)
		p[2] = (__u8)bpf_map_delete_elem(&h, &k);
	if (p[17] & 2)
		p[3] = (__u8)bpf_map_delete_elem(&arr, &k);
	return XDP_PASS;
}
