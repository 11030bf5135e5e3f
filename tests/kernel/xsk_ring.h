// SPDX-License-Identifier: MIT
//
// What the AF_XDP programs of tests/kernel (xsk_sock.c, xsk_tx.c) share: the socket family and
// level where old headers lack them, die() for a failed call, and a ring of the socket mapped
// from its XDP_MMAP_OFFSETS (producer, consumer, flags and descriptors). Define XSK_PROG (the
// program's name, for die's messages) before including it.
#ifndef XSK_RING_H
#define XSK_RING_H

#include <errno.h>
#include <linux/if_xdp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif

static void die(const char *what)
{
	fprintf(stderr, XSK_PROG ": %s: %s (errno %d)\n", what, strerror(errno), errno);
	exit(1);
}

struct ring {
	uint32_t *producer, *consumer, *flags;
	void *desc;
	uint32_t mask;
};

static void map_ring(int fd, struct ring *r, const struct xdp_ring_offset *off, uint32_t n,
		     size_t desc_size, off_t pgoff, const char *what)
{
	size_t len = off->desc + n * desc_size;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, pgoff);

	if (p == MAP_FAILED)
		die(what);
	r->producer = (uint32_t *)(p + off->producer);
	r->consumer = (uint32_t *)(p + off->consumer);
	r->flags = (uint32_t *)(p + off->flags);
	r->desc = p + off->desc;
	r->mask = n - 1;
}

#endif
