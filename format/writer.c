// SPDX-License-Identifier: MIT
/* Record-file writer: records are varint-encoded into a raw frame buffer, and each full
 * frame becomes one independently decodable zstd frame behind a 16-byte frame header. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "events3.h"
#include "grow.h"
#include "outfile.h"
#include "pyline.h"
#include "record.h"
#include "schema.h"
#include "stacks5.h"

/* zstd's level for a frame: level_after. */
#define ZSTD_LEVEL_FAST 2
#define ZSTD_LEVEL_REPEATS 12
#define ZSTD_REPEATS_RATIO 32
/* Level 12's tables at 2^18 entries each, not its 2^22 and 2^21: the same bytes for sqlite3's
 * index build, in half the time, and 2 MB of the recorder's memory where they took 24. */
#define ZSTD_REPEATS_TABLE_LOG 18

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
	int level;     /* the next frame's */
	bool adaptive; /* level chosen frame by frame (level_after) */

	uint8_t *raw; /* current frame's records */
	size_t raw_len, raw_cap, frame_size;
	uint8_t *tmp; /* extended record payload being encoded */
	size_t tmp_len, tmp_cap;
	uint8_t *comp;
	size_t comp_cap;
	/* Version 3 (the default): the events' per-frame state and columns, and the frame's
	 * bytes put together (COLUMNS record, records, columns) before they are compressed. */
	uint32_t major;
	struct hs3_writer *e3;
	struct stack_tree *tree; /* version 5: stacks as the tails of others */
	uint64_t last_stack_id;  /* of the last STACK or STACK_TAIL, which a tail's id follows */
	uint8_t *lines;          /* a PY_CODE's line table without columns */
	size_t lines_cap;
	uint64_t quantum_ns;
	uint8_t *stage;
	size_t stage_cap;

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
	size_t footer_max; /* raw bytes the footer frame may hold */
	struct record_writer_footer foot;
	int error; /* sticky: the first write error, as -errno */
	const char *why;
};

static int grow(void **buf, size_t *cap, size_t need, size_t elem)
{
	return hs_grow(buf, cap, need, elem, 16);
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

int record_writer__open(const char *path, const struct record_writer_opts *opts, struct record_writer **out)
{
	struct record_writer *w;
	struct hs_file_header fh = {.major = HS_FORMAT_MAJOR, .minor = HS_FORMAT_MINOR};
	uint32_t major = opts && opts->major ? opts->major : HS_FORMAT_MAJOR;
	uint8_t hdr[HS_FILE_HEADER_SIZE];
	struct stat st;
	int err;

	/* 2 and 3: the 2.1 and 3.0 encodings, which tests and fixtures of those versions
	 * still write. */
	if (major < 2 || major > HS_FORMAT_MAJOR)
		return -EINVAL;
	fh.major = (uint16_t)major;
	if (major == 2)
		fh.minor = 1;
	else if (major == 3)
		fh.minor = 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->major = major;
	w->quantum_ns = opts && opts->time_quantum_ns ? opts->time_quantum_ns : HS_TIME_QUANTUM_NS;
	/* 2 MiB: version 3's frames restart their dictionaries, and at 1 MiB the restarts cost
	 * sqlite3's index build 7% and Python (PYTHONMALLOC=malloc) 4% more bytes; 4 MiB gains
	 * little more. A frame is still written at least once a second (the recorder flushes). */
	w->frame_size = opts && opts->frame_size ? opts->frame_size : (2u << 20);
	if (w->frame_size > HS_MAX_FRAME_RAW / 2)
		w->frame_size = HS_MAX_FRAME_RAW / 2;
	w->footer_max = opts && opts->footer_max ? opts->footer_max : HS_MAX_FRAME_RAW;
	if (w->footer_max > HS_MAX_FRAME_RAW)
		w->footer_max = HS_MAX_FRAME_RAW;
	if (w->footer_max < 4096)
		w->footer_max = 4096;
	w->adaptive = !opts || !opts->zstd_level;
	w->level = w->adaptive ? ZSTD_LEVEL_FAST : opts->zstd_level;
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
	/* Binary: a terminal would show it as noise, and may act on its bytes. And a file's
	 * offsets are from its start: after what a file held (standard output appended to,
	 * >>), it would not read. The shell's > leaves it empty. */
	if (isatty(w->fd) || (!fstat(w->fd, &st) && S_ISREG(st.st_mode) && st.st_size)) {
		err = isatty(w->fd) ? -ENOTTY : -ESPIPE;
		if (opts && opts->why)
			*opts->why = err == -ENOTTY ? "it is a terminal; a record file is binary (redirect it, or name a file)"
						    : "it is a file that is not empty (appended to?); a record file must begin it";
		record_writer__free(w);
		return err;
	}
	w->cctx = ZSTD_createCCtx();
	w->raw_cap = w->frame_size + 65536;
	w->raw = malloc(w->raw_cap);
	if (major >= 3) {
		w->e3 = calloc(1, sizeof(*w->e3));
		if (!w->e3 || hs3_writer__init(w->e3, major)) {
			record_writer__free(w);
			return -ENOMEM;
		}
	}
	if (!w->cctx || !w->raw || (major >= 5 && stack_tree__new(&w->tree))) {
		record_writer__free(w);
		return -ENOMEM;
	}
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, w->level);
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
	memcpy(fh.magic, HS_FILE_MAGIC, sizeof(fh.magic));
	hs_fixed_put(&hs_file_header_layout, &fh, hdr);
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
	if (w->e3)
		hs3_writer__reset(w->e3);
}

/* The bytes of the frame's records; version 3 puts its COLUMNS record first and the
 * columns last (docs/FORMAT.md, Version 3 events). Sets *LEN. */
static const uint8_t *frame_bytes(struct record_writer *w, size_t *len)
{
	uint8_t hdr[1 + 10 * (1 + HS3_NR_COLS)];
	size_t h, n;
	uint8_t *p;

	if (!w->e3) {
		*len = w->raw_len;
		return w->raw;
	}
	h = hs3_columns_header(w->e3, hdr);
	n = h + w->raw_len + hs3_writer__cols_len(w->e3);
	if (grow((void **)&w->stage, &w->stage_cap, n, 1))
		return NULL;
	p = w->stage;
	memcpy(p, hdr, h);
	p += h;
	memcpy(p, w->raw, w->raw_len);
	p += w->raw_len;
	for (int i = 0; i < HS3_NR_COLS; i++) {
		if (w->e3->col[i].len)
			memcpy(p, w->e3->col[i].p, w->e3->col[i].len);
		p += w->e3->col[i].len;
	}
	*len = n;
	return w->stage;
}

/* The level for the frame after one that compressed RLEN raw bytes to CLEN. Level 2 takes a
 * few ms a frame whatever it holds: on the benchmark's churn, 3 costs the recorder ~15% more
 * CPU for 3% smaller files, and 1 makes them 12% larger. A frame that compressed 32 times or
 * better holds a program's steady state (sqlite3's index build: 0.5% of its raw bytes), whose
 * repeats level 12's longer search finds where level 2 misses them: that file 32% smaller
 * (52.8 KB to 35.9 for 6.1M events), for 18 ms of CPU against 2 over the run, since the time
 * follows what is written. On a frame of high entropy level 12 takes 15 times level 2's time
 * (churn's: 60 ns a raw byte), so each frame's level follows the last one's ratio, and a frame
 * that changes character costs that time once, ~120 ms for 2 MiB. */
static int level_after(size_t clen, size_t rlen)
{
	return clen * ZSTD_REPEATS_RATIO <= rlen ? ZSTD_LEVEL_REPEATS : ZSTD_LEVEL_FAST;
}

static void set_level(struct record_writer *w, int level)
{
	int tables = level == ZSTD_LEVEL_REPEATS ? ZSTD_REPEATS_TABLE_LOG : 0; /* 0: the level's own */

	w->level = level;
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level);
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_hashLog, tables);
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_chainLog, tables);
}

static int emit_frame(struct record_writer *w, uint32_t flags)
{
	uint8_t fh[HS_FRAME_HEADER_SIZE];
	size_t bound, clen, rlen;
	const uint8_t *rb;
	uint64_t off = w->file_off;
	int err;

	if (w->error)
		return w->error;
	if (!w->raw_len && !(flags & HS_FRAME_FLAG_FOOTER))
		return 0;
	rb = frame_bytes(w, &rlen);
	if (!rb)
		return w->error = -ENOMEM;
	bound = ZSTD_compressBound(rlen);
	err = grow((void **)&w->comp, &w->comp_cap, bound, 1);
	if (err)
		return w->error = err;
	clen = ZSTD_compress2(w->cctx, w->comp, w->comp_cap, rb, rlen);
	if (ZSTD_isError(clen))
		return w->error = -EIO;
	if (w->adaptive && !(flags & HS_FRAME_FLAG_FOOTER) && level_after(clen, rlen) != w->level)
		set_level(w, level_after(clen, rlen));
	hs_fixed_put(&hs_frame_header_layout,
		     &(struct hs_frame_header){HS_FRAME_MAGIC, (uint32_t)clen, (uint32_t)rlen, flags}, fh);
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
	w->raw_total += rlen;
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

/* Raw bytes of the frame being filled, its columns included. */
static size_t frame_len(const struct record_writer *w)
{
	return w->raw_len + (w->e3 ? hs3_writer__cols_len(w->e3) : 0);
}

static int reserve_raw(struct record_writer *w, size_t need)
{
	int err;

	if (frame_len(w) + need > w->frame_size && w->raw_len) {
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

/* String S, cut to MAX bytes when MAX is not 0. */
static void tstr(struct record_writer *w, const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;

	tbytes(w, s ? s : "", max && n > max ? max : n);
}

/* Walks the table S over the struct at BASE (schema.h). PREV carries a delta field's value
 * from one array item to the next. */
static void encode_fields(struct record_writer *w, const struct hs_schema *s, const void *base, uint64_t *prev)
{
	const uint8_t *b = base;

	for (uint32_t i = 0; i < s->nr; i++) {
		const struct hs_field *f = &s->fields[i];
		const void *v = b + f->off;

		switch (f->enc) {
		case HS_ENC_U64:
			tu(w, *(const uint64_t *)v);
			break;
		case HS_ENC_U32:
			tu(w, *(const uint32_t *)v);
			break;
		case HS_ENC_S64:
			tu(w, hs_zigzag(*(const int64_t *)v));
			break;
		case HS_ENC_SPAN:
			tu(w, *(const uint64_t *)v - *(const uint64_t *)(b + f->aux));
			break;
		case HS_ENC_DELTA:
			tu(w, *(const uint64_t *)v - *prev);
			*prev = *(const uint64_t *)v;
			break;
		case HS_ENC_SDELTA:
			tu(w, hs_zigzag((int64_t)(*(const uint64_t *)v - *prev)));
			*prev = *(const uint64_t *)v;
			break;
		case HS_ENC_STR:
			tstr(w, *(const char *const *)v, (f->flags & HS_FF_CLIP) ? f->limit : 0);
			break;
		case HS_ENC_BYTES: {
			const struct hs_bytes *by = v;

			tbytes(w, by->p, (f->flags & HS_FF_CLIP) && by->len > f->limit ? f->limit : by->len);
			break;
		}
		case HS_ENC_STRUCT:
			encode_fields(w, f->sub, v, prev);
			break;
		case HS_ENC_ARRAY: {
			const uint8_t *items;
			uint32_t n = *(const uint32_t *)v;
			uint64_t item_prev = 0;

			memcpy(&items, b + f->aux, sizeof(items)); /* a pointer of the item's type */
			tu(w, n);
			for (uint32_t k = 0; k < n; k++)
				encode_fields(w, f->sub, items + (size_t)k * f->sub->size, &item_prev);
			break;
		}
		}
	}
}

static int encode_extended(struct record_writer *w, const struct hs_record *r)
{
	const struct hs_schema *s = hs_schema_of(r->type);
	uint64_t prev = 0;

	if (!s)
		return -EINVAL;
	w->tmp_len = 0;
	encode_fields(w, s, r, &prev);
	return w->error;
}

/* Raw bytes of an extended record whose payload is LEN bytes. */
static size_t footer_size(size_t len)
{
	uint8_t v[10];

	return 1 + hs_put_uvarint(v, len) + len;
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

static void put_thread(struct record_writer *w, const struct hs_record *r, uint8_t **p)
{
	if (!w->have_thread || w->cur_pid != r->pid || w->cur_tid != r->tid) {
		int i = w->e3 ? hs3_thread_find(&w->e3->st, r->pid, r->tid) : -1;

		if (i >= 0) {
			*(*p)++ = HS3_REC_THREAD_AGAIN;
			*p += hs_put_uvarint(*p, (uint64_t)i);
		} else {
			*(*p)++ = HS_REC_THREAD;
			*p += hs_put_uvarint(*p, r->pid);
			*p += hs_put_uvarint(*p, r->tid);
		}
		if (w->e3)
			hs3_note_thread(&w->e3->st, r->pid, r->tid);
		w->cur_pid = r->pid;
		w->cur_tid = r->tid;
		w->have_thread = true;
	}
}

/* Version 3: the event at P, room reserved (docs/FORMAT.md, Version 3 events). */
static int write_event3(struct record_writer *w, const struct hs_record *r, uint8_t *p)
{
	uint64_t coarse;
	int err;

	put_thread(w, r, &p);
	err = hs3_encode(w->e3, r, &p, &coarse);
	if (err)
		return w->error = err;
	if (r->type == HS_REC_FREE)
		w->pending.frees++;
	else
		w->pending.allocs++;
	note_time(w, coarse);
	w->raw_len = (size_t)(p - w->raw);
	if (frame_len(w) >= w->frame_size)
		return emit_frame(w, 0);
	return 0;
}

int record_writer__write(struct record_writer *w, const struct hs_record *r)
{
	uint64_t tail_d[HS_MAX_STACK_FRAMES];
	struct hs_record alt; /* the record written instead of R */
	uint8_t *p;
	int err = 0;

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
		if (w->e3)
			return write_event3(w, r, p);
		put_thread(w, r, &p);
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
	if (w->tree && (r->type == HS_REC_STACK || r->type == HS_REC_STACK_TAIL)) {
		uint64_t id = r->type == HS_REC_STACK ? r->stack.id : r->stack_tail.id;

		if (r->type == HS_REC_STACK_TAIL) {
			alt = *r;
			err = stack_tree__note(w->tree, id);
			if (err < 0)
				return w->error = err;
		} else if (r->stack.nr <= HS_MAX_STACK_FRAMES) {
			err = stack_tree__encode(w->tree, id, r->stack.ips, r->stack.nr, tail_d, &alt);
			if (err < 0)
				return w->error = err;
		}
		if (r->type == HS_REC_STACK_TAIL || err > 0) {
			alt.stack_tail.skip = id - w->last_stack_id - 1;
			r = &alt;
		}
		w->last_stack_id = id;
	}
	/* Version 5: a location table without its columns, which no report shows (pyline.h). */
	if (r->type == HS_REC_PY_CODE && w->major >= 5 && r->py_code.line_table.len &&
	    r->py_code.line_table.len <= HS_MAX_PY_LINE_TABLE) {
		uint32_t len = r->py_code.line_table.len, n;

		err = grow((void **)&w->lines, &w->lines_cap, len, 1);
		if (err)
			return w->error = err;
		n = pyline__lines_only(r->py_code.py_version, r->py_code.line_table.p, len, r->py_code.first_line,
				       w->lines);
		if (n) {
			alt = *r;
			alt.py_code.line_table = (struct hs_bytes){w->lines, n};
			r = &alt;
		}
	}
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
	if (r->type == HS_REC_STACK || r->type == HS_REC_STACK_TAIL || r->type == HS_REC_STACK_DWARF)
		w->pending.stacks++;
	if (r->type == HS_REC_SNAPSHOT) {
		err = remember_snapshot(w, r);
		if (err)
			return w->error = err;
	}
	if (r->type != HS_REC_SESSION && r->type != HS_REC_STACK && r->type != HS_REC_STACK_TAIL &&
	    r->type != HS_REC_THREAD_NAME)
		note_time(w, r->time);
	if (r->type == HS_REC_SESSION && w->e3 && r->session.tick_ns)
		w->e3->quantum = w->quantum_ns > r->session.tick_ns ? w->quantum_ns / r->session.tick_ns : 1;
check_full:
	if (w->raw_len >= w->frame_size)
		return emit_frame(w, 0);
	return 0;
}

/* Appends extended record R to the footer frame being built, unless it would take the
 * frame past BUDGET raw bytes: returns 1 then, and leaves the frame as it was. Never emits a
 * frame, unlike reserve_raw: the trailer names exactly one footer frame. */
static int footer_put(struct record_writer *w, const struct hs_record *r, size_t budget)
{
	uint8_t *p;
	int err = encode_extended(w, r);

	if (err)
		return w->error = err;
	if (w->raw_len + footer_size(w->tmp_len) + (w->e3 ? 1 + 1 + HS3_NR_COLS : 0) > budget)
		return 1;
	err = grow((void **)&w->raw, &w->raw_cap, w->raw_len + 1 + 10 + w->tmp_len, 1);
	if (err)
		return w->error = err;
	p = w->raw + w->raw_len;
	*p++ = (uint8_t)r->type;
	p += hs_put_uvarint(p, w->tmp_len);
	memcpy(p, w->tmp, w->tmp_len);
	w->raw_len = (size_t)(p + w->tmp_len - w->raw);
	return 0;
}

/* Merges each pair of adjacent index entries into one: the offset of the first frame of the
 * pair, the earliest first_time and the latest last_time of the two. Returns the new count.
 * What the index is for stays true. Its earliest first_time and latest last_time, the file's
 * time range and all the analyzer takes from it (footer_times in analyzer/replay.c), are
 * unchanged: min and max over pairs, not the first's and the last's, as times out of order
 * across CPUs may put a frame's first event before the frame before's. And the frames from
 * an entry's offset up to the next entry's have all their times within its span, so a reader
 * seeking by time still starts at the right frame, and decodes at most the run's others more. */
static size_t index_halve(struct hs_frame_index_entry *e, size_t n)
{
	size_t out = 0;

	for (size_t i = 0; i < n; i += 2) {
		struct hs_frame_index_entry m = e[i];

		if (i + 1 < n) {
			if (e[i + 1].first_time < m.first_time)
				m.first_time = e[i + 1].first_time;
			if (e[i + 1].last_time > m.last_time)
				m.last_time = e[i + 1].last_time;
		}
		e[out++] = m;
	}
	return out;
}

/* A snapshot copy as the record it repeats. */
static struct hs_record snap_record(const struct snap_copy *c)
{
	struct hs_record s = {.type = HS_REC_SNAPSHOT, .time = c->time};

	s.snapshot.label = c->label;
	s.snapshot.origin = c->origin;
	s.snapshot.live_bytes = c->live_bytes;
	return s;
}

/* Builds the footer frame's records in w->raw: the frame index, then the snapshot copies in
 * file order. They go into one frame, whatever frame_size says, up to the footer's budget
 * (HS_MAX_FRAME_RAW, the most a reader takes in one frame). When they would not fit, the
 * index gets the room the copies leave, but at least half: its adjacent entries are merged
 * (index_halve) until it fits; then the copies take what is left, the first ones kept. The
 * copies only spare a reader the data frames; each SNAPSHOT is there too, and the analyzer
 * lists snapshots from there (docs/FORMAT.md, Footer frame). */
static int footer_build(struct record_writer *w)
{
	struct hs_record rec = {.type = HS_REC_FRAME_INDEX};
	size_t budget = w->footer_max, snaps_len = 0, index_budget;
	int ret;

	w->foot.frames = w->nr_index;
	w->foot.snapshots = w->nr_snaps;
	for (size_t i = 0; i < w->nr_snaps; i++) {
		struct hs_record s = snap_record(&w->snaps[i]);

		if (encode_extended(w, &s))
			return w->error;
		snaps_len += footer_size(w->tmp_len);
	}
	index_budget = budget - (snaps_len < budget / 2 ? snaps_len : budget / 2);
	for (;;) {
		rec.frame_index.nr = (uint32_t)w->nr_index;
		rec.frame_index.entries = w->index;
		ret = footer_put(w, &rec, index_budget);
		if (ret <= 0)
			break;
		if (w->nr_index <= 1)
			return w->error = -E2BIG; /* cannot happen: the budget is at least 4 KiB */
		w->nr_index = index_halve(w->index, w->nr_index);
	}
	if (ret)
		return ret;
	w->foot.index_entries = w->nr_index;
	for (size_t i = 0; i < w->nr_snaps; i++) {
		struct hs_record s = snap_record(&w->snaps[i]);

		ret = footer_put(w, &s, budget);
		if (ret < 0)
			return ret;
		if (ret)
			break; /* a prefix of the copies, so a reader knows which ones it has */
		w->foot.snapshot_copies++;
	}
	return 0;
}

int record_writer__close(struct record_writer *w)
{
	uint8_t tr[HS_TRAILER_SIZE];
	uint64_t footer_off;
	int err;

	err = emit_frame(w, 0);
	if (err)
		return err;
	footer_off = w->file_off;
	err = footer_build(w);
	if (err)
		return err;
	err = emit_frame(w, HS_FRAME_FLAG_FOOTER);
	if (err)
		return err;
	struct hs_trailer t = {.footer_offset = footer_off};

	memcpy(t.magic, HS_TRAILER_MAGIC, sizeof(t.magic));
	hs_fixed_put(&hs_trailer_layout, &t, tr);
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

void record_writer__footer(const struct record_writer *w, struct record_writer_footer *out)
{
	*out = w->foot;
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
	return w->raw_total + frame_len(w);
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
	free(w->stage);
	stack_tree__free(w->tree);
	free(w->lines);
	if (w->e3)
		hs3_writer__fini(w->e3);
	free(w->e3);
	free(w);
}
