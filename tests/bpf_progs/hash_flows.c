/* Flow tracking in a hash map keyed by (saddr, daddr, ports): insert with BPF_NOEXIST,
 * count, delete when the last byte is 0xff. Later packets read what earlier ones wrote. */
#include "t_common.h"

struct flow {
	__u32 saddr, daddr;
	__u32 ports;
};

struct stats {
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct flow);
	__type(value, struct stats);
	__uint(max_entries, 64);
} flows SEC(".maps");

SEC("xdp")
int hash_flows(struct xdp_md *ctx)
{
	NEED(38)
	__u8 *p = data;
	struct flow f = {};
	struct stats *s, init = {1, 0};
	long err;

	__builtin_memcpy(&f.saddr, p + 26, 4);
	f.daddr = p[33] & 7;
	f.ports = p[37] & 3;
	s = bpf_map_lookup_elem(&flows, &f);
	if (s) {
		s->packets++;
		s->bytes += data_end - data;
		if (p[36] == 0xff) {
			bpf_map_delete_elem(&flows, &f);
			return XDP_DROP;
		}
		return XDP_PASS;
	}
	init.bytes = data_end - data;
	err = bpf_map_update_elem(&flows, &f, &init, BPF_NOEXIST);
	p[0] = (__u8)err;
	return err ? XDP_ABORTED : XDP_TX;
}
