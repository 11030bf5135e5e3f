// The userspace side of the AF_XDP scenarios of xsk_run.py (tests/kernel): one AF_XDP socket in
// copy mode, set up with raw syscalls and <linux/if_xdp.h> only (no libxdp, no libbpf xsk.h).
//
//   xsk_sock DEV QUEUE FRAMES CHUNK HEADROOM FILL RX MAP KEY READER BIND
//
// FRAMES chunks of CHUNK bytes are registered as the umem (XDP_UMEM_REG, HEADROOM bytes of umem
// headroom), the fill ring has FILL slots and gets min(FRAMES, FILL) chunks before the socket
// is bound (XDP_COPY) to (DEV, QUEUE) -- unless BIND is 0 -- and put at KEY of the XSKMAP pinned
// at MAP (KEY -1: in no map). The rx ring has RX slots, the completion ring FILL.
// Then "ready" is printed; READER "never" leaves the rx ring alone, "recycle" takes every
// descriptor off it and gives its chunk back to the fill ring, printing how many it has taken
// so far each time it took some. A line (or EOF) on stdin ends the run: the socket's
// XDP_STATISTICS and its rings' positions are printed as one JSON line.
#include <errno.h>
#include <linux/bpf.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define XSK_PROG "xsk_sock"
#include "xsk_ring.h"

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

/* BPF_OBJ_GET of the pinned XSKMAP, then BPF_MAP_UPDATE_ELEM key -> this socket's fd */
static void map_insert(const char *path, uint32_t key, int fd)
{
	union bpf_attr attr;
	int mfd;

	memset(&attr, 0, sizeof(attr));
	attr.pathname = (uint64_t)(uintptr_t)path;
	mfd = sys_bpf(BPF_OBJ_GET, &attr);
	if (mfd < 0)
		die("BPF_OBJ_GET of the xskmap");
	memset(&attr, 0, sizeof(attr));
	attr.map_fd = mfd;
	attr.key = (uint64_t)(uintptr_t)&key;
	attr.value = (uint64_t)(uintptr_t)&fd;
	if (sys_bpf(BPF_MAP_UPDATE_ELEM, &attr) < 0)
		die("BPF_MAP_UPDATE_ELEM of the xskmap");
	close(mfd);
}

/* Every descriptor of the rx ring back to the fill ring as its chunk; how many. */
static uint32_t recycle(struct ring *rx, struct ring *fq, uint64_t chunk)
{
	uint32_t prod = __atomic_load_n(rx->producer, __ATOMIC_ACQUIRE);
	uint32_t cons = *rx->consumer, fprod = *fq->producer, n = prod - cons;
	struct xdp_desc *descs = rx->desc;
	uint64_t *addrs = fq->desc;

	for (; cons != prod; cons++, fprod++)
		addrs[fprod & fq->mask] = descs[cons & rx->mask].addr & ~(chunk - 1);
	__atomic_store_n(fq->producer, fprod, __ATOMIC_RELEASE);
	__atomic_store_n(rx->consumer, cons, __ATOMIC_RELEASE);
	return n;
}

int main(int argc, char **argv)
{
	if (argc != 12) {
		fprintf(stderr, "usage: xsk_sock DEV QUEUE FRAMES CHUNK HEADROOM FILL RX MAP KEY "
				"READER BIND\n");
		return 2;
	}
	const char *dev = argv[1], *map = argv[8], *reader = argv[10];
	uint32_t queue = atoi(argv[2]), frames = atoi(argv[3]), chunk = atoi(argv[4]);
	uint32_t headroom = atoi(argv[5]), fill = atoi(argv[6]), rxn = atoi(argv[7]);
	int key = atoi(argv[9]), bind_it = atoi(argv[11]);
	int recycling = strcmp(reader, "recycle") == 0;
	struct xdp_statistics st;
	struct xdp_mmap_offsets off;
	struct xdp_umem_reg mr;
	struct sockaddr_xdp sxdp;
	struct ring fq, rx;
	socklen_t len;
	uint64_t received = 0;
	uint32_t i, prefill = frames < fill ? frames : fill;
	void *umem;
	int fd;

	fd = socket(AF_XDP, SOCK_RAW, 0);
	if (fd < 0)
		die("socket(AF_XDP)");
	umem = mmap(NULL, (size_t)frames * chunk, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (umem == MAP_FAILED)
		die("mmap of the umem");
	memset(&mr, 0, sizeof(mr)); /* the padding is read as tx_metadata_len by newer kernels */
	mr.addr = (uint64_t)(uintptr_t)umem;
	mr.len = (uint64_t)frames * chunk;
	mr.chunk_size = chunk;
	mr.headroom = headroom;
	if (setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &mr, sizeof(mr)))
		die("XDP_UMEM_REG");
	if (setsockopt(fd, SOL_XDP, XDP_UMEM_FILL_RING, &fill, sizeof(fill)))
		die("XDP_UMEM_FILL_RING");
	if (setsockopt(fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &fill, sizeof(fill)))
		die("XDP_UMEM_COMPLETION_RING");
	if (setsockopt(fd, SOL_XDP, XDP_RX_RING, &rxn, sizeof(rxn)))
		die("XDP_RX_RING");
	len = sizeof(off);
	if (getsockopt(fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &len))
		die("XDP_MMAP_OFFSETS");
	map_ring(fd, &fq, &off.fr, fill, sizeof(uint64_t), XDP_UMEM_PGOFF_FILL_RING, "mmap fq");
	map_ring(fd, &rx, &off.rx, rxn, sizeof(struct xdp_desc), XDP_PGOFF_RX_RING, "mmap rx");

	for (i = 0; i < prefill; i++)
		((uint64_t *)fq.desc)[i & fq.mask] = (uint64_t)i * chunk;
	__atomic_store_n(fq.producer, prefill, __ATOMIC_RELEASE);

	if (bind_it) {
		memset(&sxdp, 0, sizeof(sxdp));
		sxdp.sxdp_family = AF_XDP;
		sxdp.sxdp_ifindex = if_nametoindex(dev);
		sxdp.sxdp_queue_id = queue;
		sxdp.sxdp_flags = XDP_COPY;
		if (!sxdp.sxdp_ifindex)
			die("if_nametoindex");
		if (bind(fd, (struct sockaddr *)&sxdp, sizeof(sxdp)))
			die("bind");
	}
	if (key >= 0)
		map_insert(map, key, fd);
	printf("ready\n");
	fflush(stdout);

	for (;;) {
		struct pollfd pfd = {.fd = 0, .events = POLLIN};

		if (recycling) {
			uint32_t n = recycle(&rx, &fq, chunk);

			received += n;
			if (n) { /* the sender waits for it before its next burst */
				printf("%llu\n", (unsigned long long)received);
				fflush(stdout);
			}
		}
		if (poll(&pfd, 1, recycling ? 0 : -1) > 0)
			break;
		if (recycling)
			usleep(20);
	}
	if (recycling)
		received += recycle(&rx, &fq, chunk);

	len = sizeof(st);
	memset(&st, 0, sizeof(st));
	if (getsockopt(fd, SOL_XDP, XDP_STATISTICS, &st, &len))
		die("XDP_STATISTICS");
	printf("{\"rx_dropped\": %llu, \"rx_invalid_descs\": %llu, \"tx_invalid_descs\": %llu, "
	       "\"rx_ring_full\": %llu, \"rx_fill_ring_empty_descs\": %llu, "
	       "\"tx_ring_empty_descs\": %llu, \"rx_ring\": %u, \"received\": %llu, "
	       "\"fill_consumer\": %u, \"prefill\": %u}\n",
	       (unsigned long long)st.rx_dropped, (unsigned long long)st.rx_invalid_descs,
	       (unsigned long long)st.tx_invalid_descs, (unsigned long long)st.rx_ring_full,
	       (unsigned long long)st.rx_fill_ring_empty_descs,
	       (unsigned long long)st.tx_ring_empty_descs,
	       __atomic_load_n(rx.producer, __ATOMIC_ACQUIRE) - *rx.consumer,
	       (unsigned long long)received, __atomic_load_n(fq.consumer, __ATOMIC_ACQUIRE),
	       prefill);
	return 0;
}
