/* Grow the frame by an outer IPv4 header's 20 bytes (bpf_xdp_adjust_head) and redirect it to
 * ifindex 3: the redirect's size check (xdp_ok_fwd_dev) must see the grown frame. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_encap_redirect(struct xdp_md *ctx)
{
	void *data, *data_end;

	if (bpf_xdp_adjust_head(ctx, -20))
		return XDP_ABORTED;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + 34 > data_end)
		return XDP_ABORTED;
	__builtin_memcpy(data, data + 20, 14); /* the Ethernet header moves to the front */
	return bpf_redirect(3, 0);
}

char _license[] SEC("license") = "GPL";
