/* Headers declared with preserve_access_index, as vmlinux.h declares every type: each field
 * access carries a CO-RE relocation (field byte offset), and a bpf_core_field_exists check
 * another (field exists). Under the name libbpf gives no program type ("parse"): XDP. */
#include "t_common.h"
#include <bpf/bpf_core_read.h>

struct ethhdr___core {
	unsigned char h_dest[6];
	unsigned char h_source[6];
	__be16 h_proto;
} __attribute__((preserve_access_index));

struct iphdr___core {
	__u8 ihl : 4, version : 4;
	__u8 tos;
	__be16 tot_len;
	__be16 id;
	__be16 frag_off;
	__u8 ttl;
	__u8 protocol;
} __attribute__((preserve_access_index));

SEC("parse")
int core_headers(struct xdp_md *ctx)
{
	NEED(34)
	struct ethhdr___core *eth = data;
	struct iphdr___core *ip = data + 14;

	if (!bpf_core_field_exists(ip->ttl))
		return XDP_ABORTED;
	if (eth->h_proto != bpf_htons(0x0800))
		return XDP_PASS;
	eth->h_dest[0] = ip->ttl;
	eth->h_dest[1] = ip->protocol;
	return ip->ttl < 2 ? XDP_DROP : XDP_TX;
}
