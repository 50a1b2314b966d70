/* SPDX-License-Identifier: MIT */
/* A target in another PID namespace: the pids and tids its library writes in events are its
 * namespace's (getpid() there); the recorder reads /proc by the host's. This translates. */
#ifndef HEAPSNAP_NSPID_H
#define HEAPSNAP_NSPID_H
#include <stdint.h>
#include <sys/types.h>

struct nspid;

/* NULL in *OUT (and 0) when HOST shares our PID namespace: nothing to translate. */
int nspid__open(pid_t host, struct nspid **out);
/* The host's pid of process NS_PID of the target's namespace: the target or one of its
 * descendants. One that is gone before it is looked up gets NS_PID + HS_NSPID_GONE, which no
 * host process can have (pids stay below 2^22), so that nothing of another process is read. */
#define HS_NSPID_GONE (1u << 30)
uint32_t nspid__pid(struct nspid *x, uint32_t ns_pid);
/* The host's tid of thread NS_TID of process HOST_PID; NS_TID + HS_NSPID_GONE if gone. */
uint32_t nspid__tid(struct nspid *x, uint32_t host_pid, uint32_t ns_tid);
/* A new process NS_PID (a fork event): a number the namespace used before is looked up anew. */
void nspid__forget(struct nspid *x, uint32_t ns_pid);
void nspid__free(struct nspid *x);
#endif
