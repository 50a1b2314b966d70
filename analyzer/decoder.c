// SPDX-License-Identifier: MIT
/* The replay's decode thread. Events travel in batches between two buffers. A metadata
 * record ends a batch, and the thread then waits for the batch to be consumed before it
 * decodes further: the record points into the reader's arena, which the next decode
 * reuses. Metadata is rare past a recording's first moments, so the wait is too; where it
 * is not (a file of mostly metadata), each record would cost two thread switches, so the
 * thread hands decoding back to the consumer. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "decoder.h"

/* Events per batch: 4096 x 56 bytes, two batches, stay in L2 while they wait. */
#define BATCH 4096

struct batch {
	struct replay_event ev[BATCH];
	unsigned n;
	bool has_meta; /* meta follows the events */
	bool last;     /* the reader stopped after this batch, returning ret */
	int ret;
	struct hs_record meta;
	uint64_t offset;
};

struct decoder {
	struct record_reader *rd;
	pthread_t thread;
	bool threaded;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct batch b[2];
	bool full[2]; /* filled and not yet handed back; under mu */
	bool stop;    /* under mu */
	bool done;    /* under mu: the thread has ended, the consumer decodes from now on */
	unsigned dense; /* batches in a row cut short by metadata */
	/* The consumer's side. */
	int k;              /* the batch being consumed, or about to be */
	struct batch *cur;
	unsigned i;
	bool meta_given;
};

static bool is_event(uint32_t type)
{
	return type == HS_REC_ALLOC || type == HS_REC_ALLOC_SAMPLED || type == HS_REC_FREE;
}

static void fill(struct decoder *d, struct batch *b)
{
	b->n = 0;
	b->has_meta = b->last = false;
	b->ret = 0;
	while (b->n < BATCH) {
		struct hs_record rec;
		int ret = record_reader__next(d->rd, &rec);

		if (ret != 1) {
			b->last = true;
			b->ret = ret;
			break;
		}
		if (!is_event(rec.type)) {
			b->meta = rec;
			b->has_meta = true;
			break;
		}
		/* free.slot shares alloc.slot's place; the rest of a free is unused. */
		b->ev[b->n++] = (struct replay_event){.time = rec.time, .slot = rec.alloc.slot, .size = rec.alloc.size,
						      .stack_id = rec.alloc.stack_id, .weight = rec.alloc.weight,
						      .type = rec.type, .pid = rec.pid, .tid = rec.tid,
						      .kind = rec.alloc.kind};
	}
	b->offset = record_reader__offset(d->rd);
}

static void *decode_main(void *arg)
{
	struct decoder *d = arg;

	for (int k = 0;; k ^= 1) {
		pthread_mutex_lock(&d->mu);
		/* Buffer k must be free, and the other one's metadata consumed. */
		while (!d->stop && (d->full[k] || (d->full[k ^ 1] && d->b[k ^ 1].has_meta)))
			pthread_cond_wait(&d->cv, &d->mu);
		if (d->stop) {
			pthread_mutex_unlock(&d->mu);
			return NULL;
		}
		pthread_mutex_unlock(&d->mu);
		fill(d, &d->b[k]);
		d->dense = d->b[k].has_meta && d->b[k].n < 64 ? d->dense + 1 : 0;
		pthread_mutex_lock(&d->mu);
		d->full[k] = true;
		d->done = d->b[k].last || d->dense >= 8;
		pthread_cond_broadcast(&d->cv);
		pthread_mutex_unlock(&d->mu);
		if (d->done)
			return NULL;
	}
}

int decoder__start(struct record_reader *rd, struct decoder **out)
{
	struct decoder *d = calloc(1, sizeof(*d));

	*out = NULL;
	if (!d)
		return -ENOMEM;
	d->rd = rd;
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cv, NULL);
	/* Without a thread the consumer decodes each batch itself, on demand. */
	d->threaded = !pthread_create(&d->thread, NULL, decode_main, d);
	*out = d;
	return 0;
}

int decoder__next(struct decoder *d, struct decoded *out)
{
	for (;;) {
		struct batch *b = d->cur;

		if (b) {
			if (d->i < b->n) {
				out->ev = &b->ev[d->i++];
				out->meta = NULL;
				out->offset = b->offset;
				out->batch_end = d->i == b->n && !b->has_meta;
				return 1;
			}
			if (b->has_meta && !d->meta_given) {
				d->meta_given = true;
				out->ev = NULL;
				out->meta = &b->meta;
				out->offset = b->offset;
				out->batch_end = true;
				return 1;
			}
			if (b->last)
				return b->ret;
			pthread_mutex_lock(&d->mu);
			d->full[d->k] = false;
			pthread_cond_broadcast(&d->cv);
			pthread_mutex_unlock(&d->mu);
			d->k ^= 1;
			d->cur = NULL;
		}
		if (d->threaded) {
			pthread_mutex_lock(&d->mu);
			while (!d->full[d->k] && !d->done)
				pthread_cond_wait(&d->cv, &d->mu);
			pthread_mutex_unlock(&d->mu);
		}
		if (!d->full[d->k]) {
			fill(d, &d->b[d->k]);
			d->full[d->k] = true;
		}
		d->cur = &d->b[d->k];
		d->i = 0;
		d->meta_given = false;
	}
}

void decoder__free(struct decoder *d)
{
	if (!d)
		return;
	if (d->threaded) {
		pthread_mutex_lock(&d->mu);
		d->stop = true;
		pthread_cond_broadcast(&d->cv);
		pthread_mutex_unlock(&d->mu);
		pthread_join(d->thread, NULL);
	}
	pthread_cond_destroy(&d->cv);
	pthread_mutex_destroy(&d->mu);
	free(d);
}
