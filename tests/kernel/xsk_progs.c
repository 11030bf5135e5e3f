// XDP programs for the AF_XDP scenarios of xsk_run.py (tests/kernel): each does one thing.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* AF_XDP sockets by key; the scenarios use queue 0, so key 0 */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

/* every frame to the socket of its rx queue; no socket there: XDP_PASS (the flags' action) */
SEC("xdp")
int x_xsk(struct xdp_md *ctx) { return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS); }

char _license[] SEC("license") = "GPL";
