// SPDX-License-Identifier: MIT
/* Record-file writer: records are varint-encoded into a raw frame buffer, and each full
 * frame becomes one independently decodable zstd frame behind a 16-byte frame header. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "outfile.h"
#include "record.h"

struct snap_copy {
	uint64_t time;
	uint32_t origin;
	uint64_t live_bytes;
	char *label;
};

struct record_writer {
	int fd;
	struct outfile *out;
	uint64_t file_off;
	uint64_t raw_total;
	ZSTD_CCtx *cctx;
	int level;

	uint8_t *raw; /* current frame's records */
	size_t raw_len, raw_cap, frame_size;
	uint8_t *tmp; /* extended record payload being encoded */
	size_t tmp_len, tmp_cap;
	uint8_t *comp;
	size_t comp_cap;

	/* Delta state; reset at every frame so frames decode independently. */
	uint64_t last_time, last_slot, last_stack;
	uint32_t last_kind;
	bool have_site;
	uint32_t cur_pid, cur_tid;
	bool have_thread;
	uint64_t frame_first_time, frame_last_time;
	bool frame_has_time;

	struct hs_frame_index_entry *index;
	size_t nr_index, cap_index;
	struct snap_copy *snaps;
	size_t nr_snaps, cap_snaps;
	struct record_writer_counts pending; /* in the frame being filled */
	struct record_writer_counts done;    /* in frames written whole */
	int error; /* sticky: the first write error, as -errno */
	const char *why;
};

static int grow(void **buf, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*buf, ncap * elem);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = ncap;
	return 0;
}

static int write_all(struct record_writer *w, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(w->fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
		w->file_off += (uint64_t)n;
	}
	return 0;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

int record_writer__open(const char *path, const struct record_writer_opts *opts, struct record_writer **out)
{
	struct record_writer *w;
	uint8_t hdr[HS_FILE_HEADER_SIZE] = {0};
	int err;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->frame_size = opts && opts->frame_size ? opts->frame_size : (1u << 20);
	if (w->frame_size > HS_MAX_FRAME_RAW / 2)
		w->frame_size = HS_MAX_FRAME_RAW / 2;
	/* Level 2: on the benchmark's churn, 3 costs the recorder ~15% more CPU for 3% smaller
	 * files, and 1 makes them 12% larger (docs/FORMAT.md, Size). */
	w->level = opts && opts->zstd_level ? opts->zstd_level : 2;
	w->fd = -1;
	err = outfile__open(path, &w->out, &w->why);
	if (err) {
		w->out = NULL;
		if (opts && opts->why)
			*opts->why = w->why;
		free(w);
		return err;
	}
	w->fd = outfile__fd(w->out);
	w->cctx = ZSTD_createCCtx();
	w->raw_cap = w->frame_size + 65536;
	w->raw = malloc(w->raw_cap);
	if (!w->cctx || !w->raw) {
		record_writer__free(w);
		return -ENOMEM;
	}
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, w->level);
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
	memcpy(hdr, HS_FILE_MAGIC, 8);
	hdr[8] = HS_FORMAT_MAJOR;
	hdr[10] = HS_FORMAT_MINOR;
	err = write_all(w, hdr, sizeof(hdr));
	if (err) {
		record_writer__free(w);
		return err;
	}
	*out = w;
	return 0;
}

static void reset_frame_state(struct record_writer *w)
{
	w->raw_len = 0;
	w->last_time = 0;
	w->last_slot = 0;
	w->have_site = false;
	w->have_thread = false;
	w->frame_has_time = false;
}

static int emit_frame(struct record_writer *w, uint32_t flags)
{
	uint8_t fh[HS_FRAME_HEADER_SIZE];
	size_t bound, clen;
	uint64_t off = w->file_off;
	int err;

	if (w->error)
		return w->error;
	if (!w->raw_len && !(flags & HS_FRAME_FLAG_FOOTER))
		return 0;
	bound = ZSTD_compressBound(w->raw_len);
	err = grow((void **)&w->comp, &w->comp_cap, bound, 1);
	if (err)
		return w->error = err;
	clen = ZSTD_compress2(w->cctx, w->comp, w->comp_cap, w->raw, w->raw_len);
	if (ZSTD_isError(clen))
		return w->error = -EIO;
	put_le32(fh, HS_FRAME_MAGIC);
	put_le32(fh + 4, (uint32_t)clen);
	put_le32(fh + 8, (uint32_t)w->raw_len);
	put_le32(fh + 12, flags);
	err = write_all(w, fh, sizeof(fh));
	if (!err)
		err = write_all(w, w->comp, clen);
	if (err) {
		/* A torn frame would end the file in a frame no reader can decode: cut it off, so
		 * the file reads whole up to the frames before it. A FIFO or device keeps it. */
		if (!ftruncate(w->fd, (off_t)off))
			w->file_off = off;
		return w->error = err;
	}
	if (!(flags & HS_FRAME_FLAG_FOOTER)) {
		err = grow((void **)&w->index, &w->cap_index, w->nr_index + 1, sizeof(*w->index));
		if (err)
			return w->error = err;
		w->index[w->nr_index++] = (struct hs_frame_index_entry){
			.offset = off,
			.first_time = w->frame_first_time,
			.last_time = w->frame_last_time,
		};
	}
	w->raw_total += w->raw_len;
	w->done.allocs += w->pending.allocs;
	w->done.frees += w->pending.frees;
	w->done.stacks += w->pending.stacks;
	w->pending = (struct record_writer_counts){0};
	reset_frame_state(w);
	return 0;
}

int record_writer__flush(struct record_writer *w)
{
	return emit_frame(w, 0);
}

static int reserve_raw(struct record_writer *w, size_t need)
{
	int err;

	if (w->raw_len + need > w->frame_size && w->raw_len) {
		err = emit_frame(w, 0);
		if (err)
			return err;
	}
	if (need > HS_MAX_FRAME_RAW)
		return -E2BIG;
	return grow((void **)&w->raw, &w->raw_cap, w->raw_len + need, 1);
}

/* ---- extended payload encoding into w->tmp ---- */

static int tmp_reserve(struct record_writer *w, size_t n)
{
	int err = grow((void **)&w->tmp, &w->tmp_cap, w->tmp_len + n, 1);

	if (err)
		w->error = err;
	return err;
}

static void tu(struct record_writer *w, uint64_t v)
{
	if (!tmp_reserve(w, 10))
		w->tmp_len += hs_put_uvarint(w->tmp + w->tmp_len, v);
}

static void tbytes(struct record_writer *w, const void *p, size_t n)
{
	tu(w, n);
	if (n && !tmp_reserve(w, n)) {
		memcpy(w->tmp + w->tmp_len, p, n);
		w->tmp_len += n;
	}
}

static void tstr(struct record_writer *w, const char *s)
{
	tbytes(w, s ? s : "", s ? strlen(s) : 0);
}

static void tbuildid(struct record_writer *w, struct hs_bytes b)
{
	tbytes(w, b.p, b.len > HS_MAX_BUILD_ID ? HS_MAX_BUILD_ID : b.len);
}

/* PROBE-BODY: shared by SESSION's probe list and PROBE records. */
static void tprobe(struct record_writer *w, const struct hs_probe *p)
{
	tstr(w, p->symbol);
	tstr(w, p->path);
	tu(w, p->offset);
	tbuildid(w, p->build_id);
	tu(w, p->kind);
}

static int encode_extended(struct record_writer *w, const struct hs_record *r)
{
	w->tmp_len = 0;
	switch (r->type) {
	case HS_REC_SESSION:
		tstr(w, r->session.tool_version);
		tstr(w, r->session.hostname);
		tstr(w, r->session.kernel);
		tstr(w, r->session.cmdline);
		tu(w, r->session.tick_ns);
		tu(w, r->session.monotonic_start_ns);
		tu(w, r->session.realtime_start_ns);
		tu(w, r->session.sample_rate);
		tu(w, r->session.stack_mode);
		tu(w, r->session.max_stack);
		tu(w, r->session.flags);
		tu(w, r->session.nr_probes);
		for (uint32_t i = 0; i < r->session.nr_probes; i++)
			tprobe(w, &r->session.probes[i]);
		tstr(w, r->session.via ? r->session.via : "");
		break;
	case HS_REC_PROCESS:
		tu(w, r->time);
		tu(w, r->pid);
		tu(w, r->process.ppid);
		tu(w, r->process.origin);
		tstr(w, r->process.comm);
		tstr(w, r->process.cmdline);
		tstr(w, r->process.exe);
		tbuildid(w, r->process.build_id);
		break;
	case HS_REC_EXIT:
		tu(w, r->time);
		tu(w, r->pid);
		tu(w, hs_zigzag(r->exit.status));
		break;
	case HS_REC_MAPPING:
		tu(w, r->time);
		tu(w, r->pid);
		tu(w, r->mapping.start);
		tu(w, r->mapping.end - r->mapping.start);
		tu(w, r->mapping.offset);
		tu(w, r->mapping.inode);
		tstr(w, r->mapping.path);
		tbuildid(w, r->mapping.build_id);
		break;
	case HS_REC_UNMAP:
		tu(w, r->time);
		tu(w, r->pid);
		tu(w, r->unmap.start);
		tu(w, r->unmap.end - r->unmap.start);
		break;
	case HS_REC_STACK: {
		uint64_t prev = 0;

		tu(w, r->stack.id);
		tu(w, r->stack.nr);
		for (uint32_t i = 0; i < r->stack.nr; i++) {
			tu(w, hs_zigzag((int64_t)(r->stack.ips[i] - prev)));
			prev = r->stack.ips[i];
		}
		break;
	}
	case HS_REC_SNAPSHOT:
		tu(w, r->time);
		tstr(w, r->snapshot.label);
		tu(w, r->snapshot.origin);
		tu(w, r->snapshot.live_bytes);
		break;
	case HS_REC_RSS:
		tu(w, r->time);
		tu(w, r->pid);
		tu(w, r->rss.rss_bytes);
		tu(w, r->rss.vm_bytes);
		break;
	case HS_REC_COUNTERS:
	case HS_REC_END:
		tu(w, r->time);
		tu(w, r->counters.nr);
		for (uint32_t i = 0; i < r->counters.nr; i++) {
			tstr(w, r->counters.items[i].name);
			tu(w, r->counters.items[i].value);
		}
		break;
	case HS_REC_THREAD_NAME:
		tu(w, r->pid);
		tu(w, r->tid);
		tstr(w, r->thread_name.comm);
		break;
	case HS_REC_PROBE:
		tu(w, r->time);
		tu(w, r->pid);
		tprobe(w, &r->probe);
		break;
	case HS_REC_STACK_DWARF:
		tu(w, r->dwarf.id);
		tu(w, r->dwarf.nregs);
		for (uint32_t i = 0; i < r->dwarf.nregs; i++)
			tu(w, r->dwarf.regs[i]);
		tu(w, r->dwarf.used);
		tbytes(w, r->dwarf.window.p, r->dwarf.window.len);
		break;
	case HS_REC_FRAME_INDEX: {
		uint64_t prev = 0;

		tu(w, r->frame_index.nr);
		for (uint32_t i = 0; i < r->frame_index.nr; i++) {
			const struct hs_frame_index_entry *e = &r->frame_index.entries[i];

			tu(w, e->offset - prev);
			tu(w, e->first_time);
			tu(w, e->last_time - e->first_time);
			prev = e->offset;
		}
		break;
	}
	default:
		return -EINVAL;
	}
	return w->error;
}

static void note_time(struct record_writer *w, uint64_t t)
{
	if (!w->frame_has_time) {
		w->frame_first_time = w->frame_last_time = t;
		w->frame_has_time = true;
	}
	if (t < w->frame_first_time)
		w->frame_first_time = t;
	if (t > w->frame_last_time)
		w->frame_last_time = t;
}

static int remember_snapshot(struct record_writer *w, const struct hs_record *r)
{
	struct snap_copy *s;
	int err = grow((void **)&w->snaps, &w->cap_snaps, w->nr_snaps + 1, sizeof(*w->snaps));

	if (err)
		return err;
	s = &w->snaps[w->nr_snaps];
	s->label = strdup(r->snapshot.label ? r->snapshot.label : "");
	if (!s->label)
		return -ENOMEM;
	s->time = r->time;
	s->origin = r->snapshot.origin;
	s->live_bytes = r->snapshot.live_bytes;
	w->nr_snaps++;
	return 0;
}

int record_writer__write(struct record_writer *w, const struct hs_record *r)
{
	uint8_t *p;
	int err;

	if (w->error)
		return w->error;
	if (r->type == HS_REC_ALLOC || r->type == HS_REC_ALLOC_SAMPLED || r->type == HS_REC_FREE) {
		uint64_t slot = r->alloc.slot, td; /* free.slot shares alloc.slot's place */

		if (slot == HS_SLOT_NONE)
			return -EINVAL;
		err = reserve_raw(w, 2 + 20 + 60);
		if (err)
			return w->error = err;
		p = w->raw + w->raw_len;
		if (!w->have_thread || w->cur_pid != r->pid || w->cur_tid != r->tid) {
			*p++ = HS_REC_THREAD;
			p += hs_put_uvarint(p, r->pid);
			p += hs_put_uvarint(p, r->tid);
			w->cur_pid = r->pid;
			w->cur_tid = r->tid;
			w->have_thread = true;
		}
		td = hs_zigzag((int64_t)(r->time - w->last_time));
		if (r->type == HS_REC_ALLOC_SAMPLED) {
			*p++ = (uint8_t)r->type;
			p += hs_put_uvarint(p, td);
			p += hs_put_uvarint(p, hs_zigzag((int64_t)(slot - w->last_slot)));
			p += hs_put_uvarint(p, r->alloc.size);
			p += hs_put_uvarint(p, r->alloc.stack_id);
			*p++ = (uint8_t)r->alloc.kind;
			p += hs_put_uvarint(p, r->alloc.weight);
		} else if (r->type == HS_REC_FREE) {
			/* A free names its slot outright: the block freed is any live one. */
			*p++ = (uint8_t)(HS_PACKED_EVENT | (td < HS_PACKED_TIME_ESC ? td : HS_PACKED_TIME_ESC));
			if (td >= HS_PACKED_TIME_ESC)
				p += hs_put_uvarint(p, td - HS_PACKED_TIME_ESC);
			p += hs_put_uvarint(p, slot);
		} else {
			/* An allocation usually takes the slot just freed, from the call site before. */
			bool same_slot = slot == w->last_slot;
			bool same_site = w->have_site && r->alloc.stack_id == w->last_stack && r->alloc.kind == w->last_kind;

			*p++ = (uint8_t)(HS_PACKED_EVENT | HS_PACKED_ALLOC | (same_slot ? HS_PACKED_SAME_SLOT : 0) |
					 (same_site ? HS_PACKED_SAME_SITE : 0) |
					 (td < HS_PACKED_TIME_ESC ? td : HS_PACKED_TIME_ESC));
			if (td >= HS_PACKED_TIME_ESC)
				p += hs_put_uvarint(p, td - HS_PACKED_TIME_ESC);
			if (!same_slot)
				p += hs_put_uvarint(p, hs_zigzag((int64_t)(slot - w->last_slot)));
			p += hs_put_uvarint(p, r->alloc.size);
			if (!same_site) {
				p += hs_put_uvarint(p, r->alloc.stack_id);
				*p++ = (uint8_t)r->alloc.kind;
				w->last_stack = r->alloc.stack_id;
				w->last_kind = r->alloc.kind;
				w->have_site = true;
			}
		}
		if (r->type == HS_REC_FREE)
			w->pending.frees++;
		else
			w->pending.allocs++;
		w->last_time = r->time;
		w->last_slot = slot;
		note_time(w, r->time);
		w->raw_len = (size_t)(p - w->raw);
		goto check_full;
	}
	if (r->type == HS_REC_THREAD || r->type <= HS_REC_CORE_MAX || r->type > HS_REC_EXT_MAX)
		return -EINVAL;
	err = encode_extended(w, r);
	if (err)
		return err;
	err = reserve_raw(w, 1 + 10 + w->tmp_len);
	if (err)
		return w->error = err;
	p = w->raw + w->raw_len;
	*p++ = (uint8_t)r->type;
	p += hs_put_uvarint(p, w->tmp_len);
	memcpy(p, w->tmp, w->tmp_len);
	p += w->tmp_len;
	w->raw_len = (size_t)(p - w->raw);
	if (r->type == HS_REC_STACK || r->type == HS_REC_STACK_DWARF)
		w->pending.stacks++;
	if (r->type == HS_REC_SNAPSHOT) {
		err = remember_snapshot(w, r);
		if (err)
			return w->error = err;
	}
	if (r->type != HS_REC_SESSION && r->type != HS_REC_STACK && r->type != HS_REC_THREAD_NAME)
		note_time(w, r->time);
check_full:
	if (w->raw_len >= w->frame_size)
		return emit_frame(w, 0);
	return 0;
}

int record_writer__close(struct record_writer *w)
{
	struct hs_record rec = {.type = HS_REC_FRAME_INDEX};
	uint8_t tr[HS_TRAILER_SIZE];
	uint64_t footer_off;
	int err;

	err = emit_frame(w, 0);
	if (err)
		return err;
	rec.frame_index.nr = (uint32_t)w->nr_index;
	rec.frame_index.entries = w->index;
	footer_off = w->file_off;
	/* The footer frame repeats the snapshots so `info` need not read the whole file. */
	struct snap_copy *snaps = w->snaps;
	size_t nsnaps = w->nr_snaps;

	w->snaps = NULL;
	w->nr_snaps = w->cap_snaps = 0;
	err = record_writer__write(w, &rec);
	for (size_t i = 0; !err && i < nsnaps; i++) {
		struct hs_record s = {.type = HS_REC_SNAPSHOT, .time = snaps[i].time};

		s.snapshot.label = snaps[i].label;
		s.snapshot.origin = snaps[i].origin;
		s.snapshot.live_bytes = snaps[i].live_bytes;
		err = record_writer__write(w, &s);
	}
	for (size_t i = 0; i < nsnaps; i++)
		free(snaps[i].label);
	free(snaps);
	if (err)
		return err;
	err = emit_frame(w, HS_FRAME_FLAG_FOOTER);
	if (err)
		return err;
	put_le64(tr, footer_off);
	memcpy(tr + 8, HS_TRAILER_MAGIC, 8);
	err = write_all(w, tr, sizeof(tr));
	if (err) {
		/* A footer without its trailer: the file is read as one cut short after its data. */
		if (!ftruncate(w->fd, (off_t)footer_off))
			w->file_off = footer_off;
		return w->error = err;
	}
	if (fsync(w->fd) && errno != EINVAL)
		return w->error = -errno;
	return record_writer__publish(w);
}

int record_writer__publish(struct record_writer *w)
{
	int err;

	if (w->error)
		return w->error;
	err = outfile__publish(w->out);
	return err ? (w->error = err) : 0;
}

uint64_t record_writer__bytes_written(const struct record_writer *w)
{
	return w->file_off;
}

void record_writer__counts(const struct record_writer *w, struct record_writer_counts *out)
{
	*out = w->done;
}

int record_writer__error(const struct record_writer *w)
{
	return w->error;
}

uint64_t record_writer__raw_bytes(const struct record_writer *w)
{
	return w->raw_total + w->raw_len;
}

void record_writer__free(struct record_writer *w)
{
	if (!w)
		return;
	outfile__free(w->out); /* closes w->fd; removes a file never published */
	ZSTD_freeCCtx(w->cctx);
	for (size_t i = 0; i < w->nr_snaps; i++)
		free(w->snaps[i].label);
	free(w->snaps);
	free(w->index);
	free(w->raw);
	free(w->tmp);
	free(w->comp);
	free(w);
}
