// Small XDP programs for the kernel-oracle scenarios (tests/kernel): each does one thing.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
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

/* cpumap: its entries are CPUs (key = cpu, value = queue size and an optional program) */
struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
} cpu_map SEC(".maps");

/* every frame to CPU 1 through cpu_map; no entry at 1: XDP_ABORTED (the flags' action) */
SEC("xdp")
int x_cpumap(struct xdp_md *ctx) { return bpf_redirect_map(&cpu_map, 1, 0); }

SEC("xdp/cpumap")
int c_pass(struct xdp_md *ctx) { return XDP_PASS; }

/* on the cpumap kthread: IPv4 UDP to port 9 is dropped, everything else passes */
SEC("xdp/cpumap")
int c_drop_udp9(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	struct udphdr *udp;

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	if (ip->protocol != IPPROTO_UDP || ip->ihl != 5)
		return XDP_PASS;
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end)
		return XDP_PASS;
	return udp->dest == bpf_htons(9) ? XDP_DROP : XDP_PASS;
}

char _license[] SEC("license") = "GPL";
