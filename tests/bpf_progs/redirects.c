/* bpf_redirect with and without flags; bpf_redirect_map on a devmap and a devmap_hash with
 * keys present and missing, fallback actions and broadcast flags. */
#include "t_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 8);
} dm SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 8);
} dmh SEC(".maps");

SEC("xdp")
int redirects(struct xdp_md *ctx)
{
	NEED(20)
	__u8 *p = data;
	__u32 key = p[15] % 10;
	__u64 flags = p[16] & 0x1f;

	switch (p[14] % 4) {
	case 0:
		return bpf_redirect(key, p[17] & 1);
	case 1:
		return bpf_redirect_map(&dm, key, flags);
	case 2:
		return bpf_redirect_map(&dmh, key, flags);
	default:
		return bpf_redirect_map(&dm, key, flags | (p[17] & 0x20));
	}
}
