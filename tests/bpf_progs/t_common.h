/* Test programs for the kernel comparison: results go into the packet (data_out) or maps. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define NEED(n)                                                                    \
	void *data = (void *)(long)ctx->data;                                      \
	void *data_end = (void *)(long)ctx->data_end;                              \
	if (data + (n) > data_end)                                                 \
		return XDP_PASS;

char _license[] SEC("license") = "GPL";
