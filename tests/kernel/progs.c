// Small XDP programs for the kernel-oracle scenarios (tests/kernel): each does one thing.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
} dm SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
} dmh SEC(".maps");

SEC("xdp")
int x_tx(struct xdp_md *ctx) { return XDP_TX; }

SEC("xdp")
int x_pass(struct xdp_md *ctx) { return XDP_PASS; }

SEC("xdp")
int x_drop(struct xdp_md *ctx) { return XDP_DROP; }

SEC("xdp")
int x_abort(struct xdp_md *ctx) { return XDP_ABORTED; }

/* every frame to the device in slot 0 of dm */
SEC("xdp")
int x_redir(struct xdp_md *ctx) { return bpf_redirect_map(&dm, 0, XDP_DROP); }

/* every frame to every device in dm but the one it came in on */
SEC("xdp")
int x_bcast(struct xdp_md *ctx)
{
	return bpf_redirect_map(&dm, 0, BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS);
}

SEC("xdp/devmap")
int e_drop(struct xdp_md *ctx) { return XDP_DROP; }

SEC("xdp/devmap")
int e_pass(struct xdp_md *ctx) { return XDP_PASS; }

SEC("xdp/devmap")
int e_abort(struct xdp_md *ctx) { return XDP_ABORTED; }

char _license[] SEC("license") = "GPL";
