// SPDX-License-Identifier: MIT
//
// xsk_tx: probe AF_XDP TX in copy mode (__xsk_generic_xmit) on a real kernel.
//
// One AF_XDP socket, set up with raw syscalls and <linux/if_xdp.h> only (no libbpf/libxdp),
// bound in XDP_COPY mode to queue QUEUE of DEV. Its UMEM is FRAMES chunks of CHUNK bytes; it
// has a TX ring of TX slots, a completion ring of COMP slots and a fill ring (required by
// bind, never used) of COMP slots. min(N, TX) valid 64-byte UDP/IPv4 frames are written into
// chunks 0, 1, 2, ... and posted as TX descriptors (some can be made invalid, see -L/-A).
// Then sendto(fd, NULL, 0, MSG_DONTWAIT, NULL, 0) is called repeatedly; after EACH call one
// JSON line is printed:
//   call, ret, errno (and its name), us (duration of the call), tx_prod, tx_cons (as
//   published by the kernel), tx_flags / need_wakeup (XDP_RING_NEED_WAKEUP bit of the TX
//   ring's flags word), cq_prod (completion ring producer the kernel published, read right
//   after the call returned), cq_cons (what we have reaped so far), cq_prod_later (cq
//   producer again after -s USEC, if given), XDP_STATISTICS, and the /proc/net/dev counters
//   of DEV and (-P) PEER.
// The loop stops after -k calls, or once -e consecutive calls made no progress (neither the
// TX consumer nor the cq producer moved) -- a call that finds the TX ring empty counts as
// one without progress, so -e 2 gives two calls on an empty (or stuck) ring.
//
// usage: xsk_tx [options]
//   -d DEV      device to bind to (default vs)       -P PEER  also report PEER's counters
//   -q QUEUE    queue id (default 0)
//   -F FRAMES   umem chunks (default 4096)           -c CHUNK chunk size (default 2048)
//   -t TX       TX ring slots (default 256)          -C COMP  completion ring slots (256)
//   -n N        frames to post (default 200; at most TX are posted)
//   -w          bind with XDP_USE_NEED_WAKEUP
//   -r          reap the completion ring after each sendto (after printing); default: never
//   -L LIST     comma list of descriptor indices given len = CHUNK + 1 (invalid)
//   -A LIST     comma list of descriptor indices given addr = FRAMES * CHUNK (past the end)
//   -b BUDGET   setsockopt(SOL_XDP, XDP_MAX_TX_BUDGET = 9) to BUDGET after bind; the result
//               (and getsockopt of the same) is printed as a "budget" JSON line
//   -S BYTES    SO_SNDBUFFORCE to BYTES before bind (the copy-mode skbs are charged to the
//               socket's send buffer until freed; default sndbuf: net.core.wmem_default)
//   -k CALLS    at most CALLS sendto calls (default 1000)
//   -e EXTRA    stop after EXTRA consecutive calls without progress (default 2)
//   -s USEC     after each call, sleep USEC and read the cq producer again (cq_prod_later)
//   -D          the final line also lists the addresses on the completion ring that were
//               not reaped (cq_addrs, oldest first; chunk index = addr / CHUNK)
//   -W BATCH    writer loop instead (xdpsock's tx_only, as xdptui models its writer): -k times,
//               reap every completion, write min(BATCH, TX room, own chunks) fresh
//               descriptors, one sendto; then one {"writer":...} line with the totals
//   -p          print {"ready":...} after posting and wait for a line on stdin before the
//               first sendto (the runner changes link states meanwhile)
// Before the calls: a {"sndbuf": N} line (SO_SNDBUF as the kernel reports it), with -b a
// {"budget":...} line (setsockopt/getsockopt results), and the {"ready":...} line.
// A final {"final":...} line repeats the state 100 ms after the last call.
#define _GNU_SOURCE
#include <errno.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define XSK_PROG "xsk_tx"
#include "xsk_ring.h"

#ifndef XDP_MAX_TX_BUDGET
#define XDP_MAX_TX_BUDGET 9
#endif

static uint32_t load(uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static int in_list(const char *list, uint32_t i)
{
	const char *p = list;

	while (p && *p) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);

		if (end == p)
			break;
		if (v == i)
			return 1;
		p = *end == ',' ? end + 1 : end;
	}
	return 0;
}

static uint16_t csum16(const void *data, size_t len)
{
	const uint8_t *b = data;
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)b[i] << 8 | b[i + 1];
	if (len & 1)
		sum += (uint32_t)b[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* A 64-byte Ethernet/IPv4/UDP frame (no FCS): 02:00:00:00:00:01 -> ff:ff:ff:ff:ff:ff,
 * 10.11.0.1:1000 -> 10.11.0.2:9 (discard), 22 bytes of payload carrying the sequence number. */
static void build_frame(uint8_t *f, uint32_t seq)
{
	static const uint8_t dst[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	static const uint8_t src[6] = {0x02, 0, 0, 0, 0, 0x01};
	uint8_t *ip = f + 14, *udp = ip + 20;
	uint16_t c;

	memset(f, 0, 64);
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	f[12] = 0x08, f[13] = 0x00;
	ip[0] = 0x45;
	ip[2] = 0, ip[3] = 50; /* total length 20 + 8 + 22 */
	ip[8] = 64;            /* ttl */
	ip[9] = 17;            /* UDP */
	ip[12] = 10, ip[13] = 11, ip[14] = 0, ip[15] = 1;
	ip[16] = 10, ip[17] = 11, ip[18] = 0, ip[19] = 2;
	c = csum16(ip, 20);
	ip[10] = c >> 8, ip[11] = c & 0xff;
	udp[0] = 1000 >> 8, udp[1] = 1000 & 0xff;
	udp[2] = 0, udp[3] = 9;
	udp[4] = 0, udp[5] = 30; /* udp length 8 + 22 */
	/* udp checksum 0: none (allowed for IPv4) */
	memcpy(udp + 8, &seq, sizeof(seq));
}

struct devstats {
	long long rx_packets, rx_dropped, tx_packets, tx_dropped;
};

/* /proc/net/dev is the reading task's network namespace (sysfs would be the mounter's). */
static struct devstats dev_stats(const char *dev)
{
	struct devstats s = {-1, -1, -1, -1};
	char line[512];
	FILE *f;

	if (!dev || !(f = fopen("/proc/net/dev", "r")))
		return s;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':'), *name = line;
		long long v[16];

		if (!colon)
			continue;
		*colon = 0;
		while (*name == ' ')
			name++;
		if (strcmp(name, dev))
			continue;
		/* rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes packets
		 * errs drop fifo colls carrier compressed */
		if (sscanf(colon + 1, "%lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld",
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9],
			   &v[10], &v[11]) == 12) {
			s.rx_packets = v[1], s.rx_dropped = v[3];
			s.tx_packets = v[9], s.tx_dropped = v[11];
		}
	}
	fclose(f);
	return s;
}

static void print_dev(const char *key, const char *dev)
{
	struct devstats s = dev_stats(dev);

	printf(", \"%s\": {\"rx_packets\": %lld, \"rx_dropped\": %lld, \"tx_packets\": %lld, "
	       "\"tx_dropped\": %lld}",
	       key, s.rx_packets, s.rx_dropped, s.tx_packets, s.tx_dropped);
}

static void print_stats(int fd)
{
	struct xdp_statistics st;
	socklen_t len = sizeof(st);

	memset(&st, 0, sizeof(st));
	if (getsockopt(fd, SOL_XDP, XDP_STATISTICS, &st, &len))
		die("XDP_STATISTICS");
	printf(", \"stats\": {\"rx_dropped\": %llu, \"rx_invalid_descs\": %llu, "
	       "\"tx_invalid_descs\": %llu, \"rx_ring_full\": %llu, "
	       "\"rx_fill_ring_empty_descs\": %llu, \"tx_ring_empty_descs\": %llu}",
	       (unsigned long long)st.rx_dropped, (unsigned long long)st.rx_invalid_descs,
	       (unsigned long long)st.tx_invalid_descs, (unsigned long long)st.rx_ring_full,
	       (unsigned long long)st.rx_fill_ring_empty_descs,
	       (unsigned long long)st.tx_ring_empty_descs);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	const char *dev = "vs", *peer = NULL, *bad_len = NULL, *bad_addr = NULL;
	uint32_t queue = 0, frames = 4096, chunk = 2048, txn = 256, comp = 256, n = 200;
	uint32_t max_calls = 1000, extra = 2, sleep_us = 0, sndbuf = 0;
	int wakeup = 0, reap = 0, pause_first = 0, set_budget = 0, dump = 0, opt, fd;
	uint32_t batch = 0;
	unsigned int budget = 0;
	struct xdp_mmap_offsets off;
	struct xdp_umem_reg mr;
	struct sockaddr_xdp sxdp;
	struct ring tx, cq;
	socklen_t len;
	uint8_t *umem;

	while ((opt = getopt(argc, argv, "d:P:q:F:c:t:C:n:wrL:A:b:S:k:e:s:pDW:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'P': peer = optarg; break;
		case 'q': queue = strtoul(optarg, NULL, 0); break;
		case 'F': frames = strtoul(optarg, NULL, 0); break;
		case 'c': chunk = strtoul(optarg, NULL, 0); break;
		case 't': txn = strtoul(optarg, NULL, 0); break;
		case 'C': comp = strtoul(optarg, NULL, 0); break;
		case 'n': n = strtoul(optarg, NULL, 0); break;
		case 'w': wakeup = 1; break;
		case 'r': reap = 1; break;
		case 'L': bad_len = optarg; break;
		case 'A': bad_addr = optarg; break;
		case 'b': set_budget = 1, budget = strtoul(optarg, NULL, 0); break;
		case 'S': sndbuf = strtoul(optarg, NULL, 0); break;
		case 'k': max_calls = strtoul(optarg, NULL, 0); break;
		case 'e': extra = strtoul(optarg, NULL, 0); break;
		case 's': sleep_us = strtoul(optarg, NULL, 0); break;
		case 'p': pause_first = 1; break;
		case 'D': dump = 1; break;
		case 'W': batch = strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: see the header of xsk_tx.c\n");
			return 2;
		}
	}

	fd = socket(AF_XDP, SOCK_RAW, 0);
	if (fd < 0)
		die("socket(AF_XDP)");
	umem = mmap(NULL, (size_t)frames * chunk, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (umem == MAP_FAILED)
		die("mmap of the umem");
	memset(&mr, 0, sizeof(mr)); /* tx_metadata_len (in the padding of old headers) = 0 */
	mr.addr = (uint64_t)(uintptr_t)umem;
	mr.len = (uint64_t)frames * chunk;
	mr.chunk_size = chunk;
	if (setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &mr, sizeof(mr)))
		die("XDP_UMEM_REG");
	if (setsockopt(fd, SOL_XDP, XDP_UMEM_FILL_RING, &comp, sizeof(comp)))
		die("XDP_UMEM_FILL_RING");
	if (setsockopt(fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &comp, sizeof(comp)))
		die("XDP_UMEM_COMPLETION_RING");
	if (setsockopt(fd, SOL_XDP, XDP_TX_RING, &txn, sizeof(txn)))
		die("XDP_TX_RING");
	len = sizeof(off);
	if (getsockopt(fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &len))
		die("XDP_MMAP_OFFSETS");
	map_ring(fd, &tx, &off.tx, txn, sizeof(struct xdp_desc), XDP_PGOFF_TX_RING, "mmap tx");
	map_ring(fd, &cq, &off.cr, comp, sizeof(uint64_t), XDP_UMEM_PGOFF_COMPLETION_RING,
		 "mmap cq");

	if (sndbuf && setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)))
		die("SO_SNDBUFFORCE");
	{
		int sb = 0;
		socklen_t sl = sizeof(sb);

		getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sb, &sl);
		printf("{\"sndbuf\": %d}\n", sb);
	}

	memset(&sxdp, 0, sizeof(sxdp));
	sxdp.sxdp_family = AF_XDP;
	sxdp.sxdp_ifindex = if_nametoindex(dev);
	sxdp.sxdp_queue_id = queue;
	sxdp.sxdp_flags = XDP_COPY | (wakeup ? XDP_USE_NEED_WAKEUP : 0);
	if (!sxdp.sxdp_ifindex)
		die("if_nametoindex");
	if (bind(fd, (struct sockaddr *)&sxdp, sizeof(sxdp)))
		die("bind");

	if (set_budget) {
		unsigned int got = 0;
		socklen_t glen = sizeof(got);
		int r = setsockopt(fd, SOL_XDP, XDP_MAX_TX_BUDGET, &budget, sizeof(budget));
		int e = r ? errno : 0;
		int g = getsockopt(fd, SOL_XDP, XDP_MAX_TX_BUDGET, &got, &glen);
		int ge = g ? errno : 0;

		printf("{\"budget\": %u, \"setsockopt\": %d, \"errno\": %d, \"errname\": \"%s\", "
		       "\"getsockopt\": %d, \"get_errno\": %d, \"get_errname\": \"%s\", "
		       "\"get_value\": %u}\n",
		       budget, r, e, e ? strerrorname_np(e) : "", g, ge,
		       ge ? strerrorname_np(ge) : "", got);
	}

	if (batch) { /* the writer loop: chunk j % FRAMES for descriptor j, freed in order */
		uint64_t written = 0, not_written = 0, eagain = 0, ebusy = 0, own = frames;
		struct xdp_desc *d = tx.desc;

		for (uint32_t k = 0; k < max_calls; k++) {
			uint32_t cqp = load(cq.producer), room, w;

			own += cqp - *cq.consumer; /* reap: the chunks are ours again */
			__atomic_store_n(cq.consumer, cqp, __ATOMIC_RELEASE);
			room = txn - (*tx.producer - load(tx.consumer));
			w = batch < room ? batch : room;
			w = w < own ? w : (uint32_t)own;
			for (uint32_t i = 0; i < w; i++, written++) {
				uint64_t addr = (written % frames) * chunk;
				struct xdp_desc *x = &d[(*tx.producer + i) & tx.mask];

				build_frame(umem + addr, (uint32_t)written);
				x->addr = addr, x->len = 64, x->options = 0;
			}
			__atomic_store_n(tx.producer, *tx.producer + w, __ATOMIC_RELEASE);
			own -= w, not_written += batch - w;
			if (sendto(fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0) {
				eagain += errno == EAGAIN;
				ebusy += errno == EBUSY;
			}
		}
		printf("{\"writer\": true, \"kicks\": %u, \"written\": %llu, \"not_written\": %llu, "
		       "\"eagain\": %llu, \"ebusy\": %llu, \"tx_prod\": %u, \"tx_cons\": %u, "
		       "\"cq_prod\": %u, \"cq_cons\": %u",
		       max_calls, (unsigned long long)written, (unsigned long long)not_written,
		       (unsigned long long)eagain, (unsigned long long)ebusy, load(tx.producer),
		       load(tx.consumer), load(cq.producer), *cq.consumer);
		print_stats(fd);
		print_dev("dev", dev);
		print_dev("peer", peer);
		printf("}\n");
		return 0;
	}

	/* post min(N, TX) descriptors, frame i in chunk i (mod FRAMES) */
	uint32_t posted = n < txn ? n : txn, prod = *tx.producer;
	struct xdp_desc *descs = tx.desc;

	for (uint32_t i = 0; i < posted; i++) {
		struct xdp_desc *d = &descs[(prod + i) & tx.mask];
		uint64_t addr = (uint64_t)(i % frames) * chunk;

		build_frame(umem + addr, i);
		d->addr = addr;
		d->len = 64;
		d->options = 0;
		if (bad_len && in_list(bad_len, i))
			d->len = chunk + 1;
		if (bad_addr && in_list(bad_addr, i))
			d->addr = (uint64_t)frames * chunk;
	}
	__atomic_store_n(tx.producer, prod + posted, __ATOMIC_RELEASE);

	printf("{\"ready\": true, \"posted\": %u, \"wakeup\": %d, \"tx_flags\": %u",
	       posted, wakeup, load(tx.flags));
	print_stats(fd);
	print_dev("dev", dev);
	print_dev("peer", peer);
	printf("}\n");
	fflush(stdout);
	if (pause_first) {
		char buf[64];

		if (!fgets(buf, sizeof(buf), stdin))
			return 1;
	}

	uint32_t stalled = 0, last_cons = load(tx.consumer), last_cq = load(cq.producer);

	for (uint32_t call = 1; call <= max_calls; call++) {
		double t0 = now_us();
		ssize_t ret = sendto(fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
		int err = ret < 0 ? errno : 0;
		double t1 = now_us();
		uint32_t cq_prod = load(cq.producer), tx_cons = load(tx.consumer);
		uint32_t flags = load(tx.flags);

		printf("{\"call\": %u, \"ret\": %zd, \"errno\": %d, \"errname\": \"%s\", "
		       "\"us\": %.1f, \"tx_prod\": %u, \"tx_cons\": %u, \"tx_flags\": %u, "
		       "\"need_wakeup\": %u, \"cq_prod\": %u, \"cq_cons\": %u",
		       call, ret, err, err ? strerrorname_np(err) : "", t1 - t0, load(tx.producer),
		       tx_cons, flags, flags & XDP_RING_NEED_WAKEUP, cq_prod, *cq.consumer);
		if (sleep_us) {
			usleep(sleep_us);
			printf(", \"cq_prod_later\": %u", load(cq.producer));
		}
		print_stats(fd);
		print_dev("dev", dev);
		print_dev("peer", peer);
		printf("}\n");
		fflush(stdout);
		if (reap) /* every published completion taken */
			__atomic_store_n(cq.consumer, load(cq.producer), __ATOMIC_RELEASE);

		if (tx_cons == last_cons && cq_prod == last_cq)
			stalled++;
		else
			stalled = 0;
		last_cons = tx_cons, last_cq = cq_prod;
		if (stalled >= extra)
			break;
	}

	usleep(100000);
	printf("{\"final\": true, \"tx_prod\": %u, \"tx_cons\": %u, \"tx_flags\": %u, "
	       "\"cq_prod\": %u, \"cq_cons\": %u",
	       load(tx.producer), load(tx.consumer), load(tx.flags), load(cq.producer),
	       *cq.consumer);
	print_stats(fd);
	print_dev("dev", dev);
	print_dev("peer", peer);
	if (dump) {
		uint32_t p = load(cq.producer);

		printf(", \"cq_addrs\": [");
		for (uint32_t c = *cq.consumer; c != p; c++)
			printf("%s%llu", c == *cq.consumer ? "" : ", ",
			       (unsigned long long)((uint64_t *)cq.desc)[c & cq.mask]);
		printf("]");
	}
	printf("}\n");
	return 0;
}
