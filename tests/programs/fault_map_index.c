/* A program the kernel's verifier refuses: a payload byte (0..255) indexes a map value of one
 * u64, so the read may reach byte 2040 of an 8-byte value. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} vals SEC(".maps");

SEC("xdp")
int xdp_fault(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 zero = 0;
	__u64 *v;

	if (data + 64 > data_end)
		return XDP_PASS;
	v = bpf_map_lookup_elem(&vals, &zero);
	if (!v)
		return XDP_PASS;
	return v[*(__u8 *)(data + 42)] ? XDP_DROP : XDP_PASS; /* the first payload byte */
}

char _license[] SEC("license") = "GPL";
