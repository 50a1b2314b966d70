/* SPDX-License-Identifier: MIT */
/* The in-process way in: shared memory for libheapsnap.so in a command the recorder starts
 * (common/abi/shm.h has the layout), and the recorder's wake-up eventfd, written by a
 * thread of its own when a target bumps the memory's futex word. */
#ifndef HEAPSNAP_PRELOAD_SHM_H
#define HEAPSNAP_PRELOAD_SHM_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "abi/shm.h"

struct preload;

/* Creates the shared memory for NR_RINGS rings of RING_BYTES (a power of two), sampling at
 * SAMPLE_RATE bytes (0: every event), stacks as STACK_MODE up to MAX_STACK frames or, for
 * dwarf, windows of DWARF_BYTES. */
int preload__open(uint32_t nr_rings, uint32_t ring_bytes, uint64_t sample_rate, uint32_t stack_mode,
		  uint32_t max_stack, uint32_t dwarf_bytes, struct preload **out);
/* Maps memory a target's library made (injected): SHM_FD and WAKE_FD are duplicated; the
 * header, which the target wrote, is checked against the file's size. */
int preload__adopt(int shm_fd, int wake_fd, struct preload **out);
/* The library to preload: $HEAPSNAP_LIB, else next to the recorder (.output/), else
 * ../lib/heapsnap/ from its directory (make install). NULL when none is found. */
char *preload__find_lib(void);
/* In the child, before exec: the environment that loads the library and finds the memory. */
int preload__setenv(const struct preload *p, const char *lib);
/* A process that asked the recorder's socket for the shared memory (close_fds children):
 * its connection, and who it is as the kernel says (SO_PEERCRED; a pidfd where the kernel
 * gives one, SO_PEERPIDFD, so that a recycled pid cannot pass for it). */
struct preload_peer {
	int fd, pidfd;
	pid_t pid;
	uid_t uid;
};
/* The socket to add to an epoll set; -1 for memory adopted from an injected target. */
int preload__listen_fd(const struct preload *p);
/* Takes one waiting connection into PEER: 1, 0 if none waits, -errno. */
int preload__accept(struct preload *p, struct preload_peer *peer);
/* Whether PEER's process is still the one that connected (its pidfd; true without one). */
bool preload__peer_alive(const struct preload_peer *peer);
/* Hands PEER the memory's descriptor, then closes the connection either way. */
int preload__grant(struct preload *p, struct preload_peer *peer);
void preload__peer_close(struct preload_peer *peer);
struct hs_shm_hdr *preload__hdr(const struct preload *p);
uint8_t *preload__ring_data(const struct preload *p, uint32_t i);
void preload__geometry(const struct preload *p, uint32_t *nr_rings, uint32_t *ring_bytes);
int preload__wake_fd(const struct preload *p);
/* Reads the wake-ups away (the eventfd is level-triggered in the recorder's epoll set). */
void preload__ack(const struct preload *p);
/* Tells the targets the recorder is alive: a hook that finds no heartbeat for 2 s stops. */
void preload__heartbeat(struct preload *p, uint64_t now_ns);
/* Ring I's owner, 0 for none. */
uint64_t preload__owner(const struct preload *p, uint32_t i);
/* Marks ring I closing if its owner word still holds OWNER (its process is gone). */
bool preload__close(struct preload *p, uint32_t i, uint64_t owner);
/* Gives ring I, read to POS, back to the pool if its owner word still holds OWNER: its
 * thread exited, or its process is gone. False if a new thread took it meanwhile. */
bool preload__release(struct preload *p, uint32_t i, uint64_t owner, uint64_t pos);
/* Whether a thread of a target found every ring held and waits for the recorder to look for
 * rings of processes gone; preload__fed tells it the recorder has. */
bool preload__starved(const struct preload *p);
void preload__fed(struct preload *p);
/* The targets' own counters (drops, threads without a ring, sampled). */
void preload__counters(const struct preload *p, uint64_t *cnt);
/* The library's waiting message, if any, copied into BUF (NUL-ended), its slot freed. */
bool preload__take_note(struct preload *p, char *buf, size_t len);
/* Every hook passes straight through from now on; the library stays loaded. */
void preload__detach(struct preload *p);
void preload__free(struct preload *p);
#endif
