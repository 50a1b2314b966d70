// SPDX-License-Identifier: MIT
/* Record-file reader. Nothing read from the file is trusted: every length, count and
 * offset is checked against the bytes actually present before it is used. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "events3.h"
#include "hmap.h"
#include "payload.h"
#include "record.h"
#include "schema.h"
#include "stacks5.h"

struct record_reader {
	int fd;
	char *path;
	uint64_t file_size;
	uint32_t major, minor;
	uint64_t data_start;

	uint64_t next_off;  /* where the next frame header starts */
	uint64_t frame_off; /* where the frame being decoded starts */
	uint64_t frames;
	uint64_t skipped;
	enum hs_read_status status;
	char err[512];

	ZSTD_DCtx *dctx;
	uint8_t *comp;
	size_t comp_cap;
	uint8_t *raw;
	size_t raw_cap, raw_len, pos;
	bool in_footer; /* decoding the footer frame for __footer() */

	uint64_t last_time, last_key; /* last_key: the slot (v2) or the address (v1) */
	uint64_t last_stack;          /* the call site of the frame's last packed ALLOC that named one */
	uint32_t last_kind;
	bool have_site;
	uint32_t cur_pid, cur_tid;
	/* One past the highest slot allocated so far: a slot may only ever grow by one. */
	uint64_t slot_limit;
	uint32_t max_frames; /* the session's max_stack, once read */
	struct stack_store *stacks; /* version 5: every stack read, for the tails that name them */

	/* Version 1 names blocks by address; the reader gives them slots the way the v2
	 * recorder does, so callers see one model: (pid, ptr) -> slot, freed slots reused. */
	struct hmap v1_live;
	uint64_t *v1_free;
	size_t v1_nr_free, v1_cap_free;

	/* Version 3: the events' per-frame state, and the frame's columns. */
	struct hs3_state st3;
	struct hs3_classes classes; /* version 4's FREE by class */
	struct hs3_cursor col[HS3_NR_COLS];

	/* Per-record arena: sized before decoding so pointers into it never move. */
	struct hs_arena arena;

	/* Following (record_reader__follow): the input is read once, in order, into IN, which
	 * holds the bytes from IN_OFF on (IN_LEN of them) and drops those before the frame being
	 * loaded; file_size is how far the input is known so far. A frame not all there yet is
	 * not an end but a wait (HS_READ_WAIT), until the input ends: a pipe's EOF. */
	bool follow, is_pipe, eof, have_header;
	uint8_t *in;
	size_t in_cap, in_len;
	uint64_t in_off;
};

static int set_status(struct record_reader *r, enum hs_read_status st, const char *fmt, ...)
{
	va_list ap;
	int n;

	r->status = st;
	n = snprintf(r->err, sizeof(r->err), "%s: ", r->path);
	if (n < 0 || (size_t)n >= sizeof(r->err))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(r->err + n, sizeof(r->err) - (size_t)n, fmt, ap);
	va_end(ap);
	return 0;
}

static int pread_all(int fd, void *buf, size_t len, uint64_t off, size_t *got)
{
	uint8_t *p = buf;

	*got = 0;
	while (*got < len) {
		ssize_t n = pread(fd, p + *got, len - *got, (off_t)(off + *got));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		*got += (size_t)n;
	}
	return 0;
}

/* Follow mode: reads what the input has now (never waiting) until it holds the bytes up to
 * WANT; a pipe's EOF sets r->eof. Returns 0 or -errno. */
static int in_fill(struct record_reader *r, uint64_t want)
{
	while (!r->eof && r->in_off + r->in_len < want) {
		size_t need = (size_t)(want - r->in_off - r->in_len), chunk = need > (256u << 10) ? need : (256u << 10);
		struct pollfd pfd = {.fd = r->fd, .events = POLLIN};
		ssize_t n;

		if (r->in_len + chunk > r->in_cap) {
			uint8_t *p = realloc(r->in, r->in_len + chunk);

			if (!p)
				return -ENOMEM;
			r->in = p;
			r->in_cap = r->in_len + chunk;
		}
		if (r->is_pipe && poll(&pfd, 1, 0) <= 0)
			return 0;
		n = read(r->fd, r->in + r->in_len, chunk);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			return -errno;
		}
		if (n == 0) {
			/* A regular file may grow still; a pipe has ended. */
			r->eof = r->is_pipe;
			return 0;
		}
		r->in_len += (size_t)n;
		r->file_size = r->in_off + r->in_len;
	}
	return 0;
}

/* Follow mode: forgets the bytes before OFF (frames already read). */
static void in_drop(struct record_reader *r, uint64_t off)
{
	size_t n;

	if (off <= r->in_off)
		return;
	n = off - r->in_off < r->in_len ? (size_t)(off - r->in_off) : r->in_len;
	memmove(r->in, r->in + n, r->in_len - n);
	r->in_len -= n;
	r->in_off += n;
}

/* LEN bytes at OFF into BUF, *GOT of them there: from the file, or from what a follower has
 * read of its input (reading more of it first, without waiting). */
static int read_at(struct record_reader *r, void *buf, size_t len, uint64_t off, size_t *got)
{
	int e;

	if (!r->follow)
		return pread_all(r->fd, buf, len, off, got);
	*got = 0;
	if ((e = in_fill(r, off + len)))
		return e;
	if (off < r->in_off || off >= r->in_off + r->in_len)
		return 0;
	*got = (size_t)(r->in_off + r->in_len - off) < len ? (size_t)(r->in_off + r->in_len - off) : len;
	memcpy(buf, r->in + (off - r->in_off), *got);
	return 0;
}

/* A follower short of bytes: waits for them, unless its input has ended. */
static bool wait_for_more(struct record_reader *r)
{
	if (!r->follow || r->eof)
		return false;
	r->status = HS_READ_WAIT;
	r->err[0] = 0;
	return true;
}

/* The file header in HDR (GOT bytes of it): what it says, into R; 0 or -errno with ERR set. */
static int take_header(struct record_reader *r, const uint8_t *hdr, size_t got, char *err, size_t errlen)
{
	struct hs_file_header fh = {0};
	const char *path = r->path;

	if (got == HS_FILE_HEADER_SIZE)
		hs_fixed_get(&hs_file_header_layout, hdr, &fh);
	if (got < HS_FILE_HEADER_SIZE || memcmp(fh.magic, HS_FILE_MAGIC, sizeof(fh.magic))) {
		snprintf(err, errlen, "%s: offset 0: not a heapsnap record file (bad magic%s)", path,
			 got < HS_FILE_HEADER_SIZE ? ", file shorter than its 16-byte header" : "");
		return -EINVAL;
	}
	r->major = fh.major;
	if (r->major < HS_FORMAT_MAJOR_OLDEST || r->major > HS_FORMAT_MAJOR) {
		snprintf(err, errlen,
			 "%s: offset 8: format version %u.%u is not supported; this heapsnap reads %u.x to %u.x%s",
			 path, r->major, fh.minor, HS_FORMAT_MAJOR_OLDEST, HS_FORMAT_MAJOR,
			 r->major > HS_FORMAT_MAJOR ? " (upgrade heapsnap-analyze)" : "");
		return -EPROTONOSUPPORT;
	}
	r->minor = fh.minor;
	if (r->major >= 4) {
		r->st3.cls = &r->classes;
		if (hs3_classes__init(&r->classes)) {
			snprintf(err, errlen, "%s: out of memory", path);
			return -ENOMEM;
		}
	}
	if ((r->major >= 3 && !(r->st3.pairs = calloc(HS3_PAIRS, sizeof(*r->st3.pairs)))) ||
	    (r->major >= 5 && stack_store__new(&r->stacks))) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	r->have_header = true;
	return 0;
}

/* Both ways of opening: the data from the end of the header on, and the decoder. */
static int reader_begin(struct record_reader *r, const char *name, char *err, size_t errlen)
{
	r->data_start = HS_FILE_HEADER_SIZE;
	r->next_off = r->data_start;
	r->dctx = ZSTD_createDCtx();
	if (!r->dctx || !r->path) {
		snprintf(err, errlen, "%s: out of memory", name);
		return -ENOMEM;
	}
	return 0;
}

int record_reader__open(const char *path, struct record_reader **out, char *err, size_t errlen)
{
	struct record_reader *r;
	uint8_t hdr[HS_FILE_HEADER_SIZE];
	struct stat st;
	size_t got;
	int e;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->max_frames = HS_MAX_STACK_FRAMES;
	r->fd = -1;
	r->path = strdup(path);
	/* Non-blocking: a FIFO is refused below as not a regular file, instead of waiting. */
	r->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (r->fd < 0) {
		e = -errno;
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		goto fail;
	}
	if (fstat(r->fd, &st)) {
		e = -errno;
		snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		e = -EINVAL;
		snprintf(err, errlen, "%s: not a regular file", path);
		goto fail;
	}
	r->file_size = (uint64_t)st.st_size;
	e = pread_all(r->fd, hdr, sizeof(hdr), 0, &got);
	if (e) {
		snprintf(err, errlen, "%s: read failed at offset 0: %s", path, strerror(-e));
		goto fail;
	}
	if ((e = take_header(r, hdr, got, err, errlen)))
		goto fail;
	if ((e = reader_begin(r, path, err, errlen)))
		goto fail;
	*out = r;
	return 0;
fail:
	record_reader__free(r);
	return e;
}

int record_reader__follow(const char *path, struct record_reader **out, char *err, size_t errlen)
{
	bool in = !strcmp(path, "-");
	const char *name = in ? "standard input" : path;
	struct record_reader *r;
	struct stat st;
	int e;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->max_frames = HS_MAX_STACK_FRAMES;
	r->follow = true;
	r->path = strdup(name);
	r->fd = in ? fcntl(0, F_DUPFD_CLOEXEC, 3) : open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (r->fd < 0) {
		e = -errno;
		snprintf(err, errlen, "%s: cannot open: %s", name, strerror(errno));
		goto fail;
	}
	if (fstat(r->fd, &st)) {
		e = -errno;
		snprintf(err, errlen, "%s: cannot stat: %s", name, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode)) {
		e = -EINVAL;
		snprintf(err, errlen, "%s: not a regular file or a pipe%s", name,
			 isatty(r->fd) ? " (a terminal: pipe a recording in, e.g. heapsnap-record -o - ... | heapsnap-analyze live -)" : "");
		goto fail;
	}
	r->is_pipe = !S_ISREG(st.st_mode);
	/* A named FIFO was opened without waiting for its writer: read it blocking, as poll says. */
	if (!in && r->is_pipe && fcntl(r->fd, F_SETFL, fcntl(r->fd, F_GETFL) & ~O_NONBLOCK)) {
		e = -errno;
		snprintf(err, errlen, "%s: %s", name, strerror(errno));
		goto fail;
	}
	if ((e = reader_begin(r, name, err, errlen)))
		goto fail;
	*out = r;
	return 0;
fail:
	record_reader__free(r);
	return e;
}

bool record_reader__waiting(const struct record_reader *r)
{
	return r->status == HS_READ_WAIT;
}

bool record_reader__wait(struct record_reader *r, int timeout_ms, int also_fd)
{
	struct pollfd pfd[2] = {{.fd = also_fd, .events = POLLIN}, {.fd = r->fd, .events = POLLIN}};

	if (timeout_ms <= 0)
		return false;
	/* A regular file says nothing when it grows: look again in a while. */
	if (!r->is_pipe && timeout_ms > 20)
		timeout_ms = 20;
	if (also_fd < 0 && !r->is_pipe) {
		nanosleep(&(struct timespec){0, timeout_ms * 1000000L}, NULL);
		return false;
	}
	if (poll(also_fd < 0 ? pfd + 1 : pfd, also_fd < 0 ? 1 : r->is_pipe ? 2 : 1, timeout_ms) <= 0)
		return false;
	return also_fd >= 0 && (pfd[0].revents & (POLLIN | POLLHUP | POLLERR));
}

static int ensure(uint8_t **buf, size_t *cap, size_t need)
{
	uint8_t *p;

	if (need <= *cap)
		return 0;
	p = realloc(*buf, need);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = need;
	return 0;
}

/* Loads the frame at OFF. Returns 1 when a data frame is ready, 0 at the end (status set),
 * or negative on memory/IO failure. */
static int load_frame(struct record_reader *r, uint64_t off, bool want_footer)
{
	uint8_t fh[HS_FRAME_HEADER_SIZE];
	struct hs_frame_header h;
	uint32_t clen, rlen, flags;
	size_t got, n;
	int e;

	if (r->follow) {
		in_drop(r, off);
		if ((e = in_fill(r, off + sizeof(fh)))) {
			set_status(r, HS_READ_IO, "read failed at offset %" PRIu64 ": %s", off, strerror(-e));
			return e;
		}
	}
	if (off == r->file_size) {
		if (wait_for_more(r))
			return 0;
		set_status(r, HS_READ_TRUNCATED,
			   "no footer: the file ends at offset %" PRIu64 " after %" PRIu64
			   " complete frames (the recorder did not finish)", off, r->frames);
		return 0;
	}
	e = read_at(r, fh, sizeof(fh), off, &got);
	if (e) {
		set_status(r, HS_READ_IO, "read failed at offset %" PRIu64 ": %s", off, strerror(-e));
		return e;
	}
	if (got < sizeof(fh)) {
		if (wait_for_more(r))
			return 0;
		set_status(r, HS_READ_TRUNCATED,
			   "truncated at offset %" PRIu64 ": %zu bytes of a 16-byte frame header; read %" PRIu64
			   " complete frames", off, got, r->frames);
		return 0;
	}
	hs_fixed_get(&hs_frame_header_layout, fh, &h);
	if (h.magic != HS_FRAME_MAGIC) {
		set_status(r, HS_READ_CORRUPT, "offset %" PRIu64 ": bad frame magic 0x%08x (expected 0x%08x)", off,
			   h.magic, HS_FRAME_MAGIC);
		return 0;
	}
	clen = h.comp_size;
	rlen = h.raw_size;
	flags = h.flags;
	if (rlen > HS_MAX_FRAME_RAW || clen > ZSTD_compressBound(HS_MAX_FRAME_RAW)) {
		set_status(r, HS_READ_CORRUPT,
			   "offset %" PRIu64 ": frame claims %u compressed / %u raw bytes, above the %u-byte limit", off,
			   clen, rlen, HS_MAX_FRAME_RAW);
		return 0;
	}
	/* Following: the frame whole, and a footer's trailer, before anything is judged. */
	if (r->follow && (e = in_fill(r, off + sizeof(fh) + clen + (flags & HS_FRAME_FLAG_FOOTER ? HS_TRAILER_SIZE : 0)))) {
		set_status(r, HS_READ_IO, "read failed at offset %" PRIu64 ": %s", off, strerror(-e));
		return e;
	}
	if (clen > r->file_size - off - sizeof(fh)) {
		if (wait_for_more(r))
			return 0;
		set_status(r, HS_READ_TRUNCATED,
			   "truncated at offset %" PRIu64 ": frame needs %u bytes, %" PRIu64
			   " remain; read %" PRIu64 " complete frames", off, clen, r->file_size - off - sizeof(fh),
			   r->frames);
		return 0;
	}
	if ((flags & HS_FRAME_FLAG_FOOTER) && !want_footer) {
		/* Complete only with the trailer right behind the footer, pointing back at it. */
		uint64_t end = off + sizeof(fh) + clen;
		uint8_t tr[HS_TRAILER_SIZE];
		struct hs_trailer t = {0};

		if (r->file_size - end < HS_TRAILER_SIZE && wait_for_more(r))
			return 0;
		if (r->file_size - end == HS_TRAILER_SIZE && !read_at(r, tr, sizeof(tr), end, &got) &&
		    got == sizeof(tr))
			hs_fixed_get(&hs_trailer_layout, tr, &t);
		if (memcmp(t.magic, HS_TRAILER_MAGIC, sizeof(t.magic)) || t.footer_offset != off) {
			set_status(r, HS_READ_TRUNCATED,
				   "no valid trailer: the footer frame at offset %" PRIu64 " is followed by %" PRIu64
				   " bytes instead of the 16-byte trailer that points back at it; read %" PRIu64
				   " complete frames", off, r->file_size - end, r->frames);
			return 0;
		}
		r->status = HS_READ_END;
		r->err[0] = 0;
		return 0;
	}
	if (ensure(&r->comp, &r->comp_cap, clen ? clen : 1) || ensure(&r->raw, &r->raw_cap, rlen ? rlen : 1)) {
		set_status(r, HS_READ_IO, "out of memory for a frame at offset %" PRIu64, off);
		return -ENOMEM;
	}
	e = read_at(r, r->comp, clen, off + sizeof(fh), &got);
	if (e || got != clen) {
		set_status(r, HS_READ_IO, "read failed at offset %" PRIu64 ": %s", off, e ? strerror(-e) : "short read");
		return e ? e : -EIO;
	}
	n = ZSTD_decompressDCtx(r->dctx, r->raw, rlen, r->comp, clen);
	if (ZSTD_isError(n) || n != rlen) {
		set_status(r, HS_READ_CORRUPT, "offset %" PRIu64 ": frame does not decompress: %s", off,
			   ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong decompressed size");
		return 0;
	}
	r->frame_off = off;
	r->next_off = off + sizeof(fh) + clen;
	r->raw_len = rlen;
	r->pos = 0;
	if (r->major >= 3) {
		const uint8_t *p = r->raw, *main_end;
		const char *why = hs3_columns_read(&p, r->raw + rlen, r->major >= 4 ? HS3_NR_COLS : HS3_NR_COLS_V3,
						   r->col, &main_end);

		if (why) {
			set_status(r, HS_READ_CORRUPT, "frame at offset %" PRIu64 ", byte 0: %s", off, why);
			return 0;
		}
		r->pos = (size_t)(p - r->raw);
		r->raw_len = (size_t)(main_end - r->raw);
		hs3_state__reset(&r->st3);
	}
	r->last_time = r->last_key = 0;
	r->have_site = false;
	r->cur_pid = r->cur_tid = 0;
	if (!(flags & HS_FRAME_FLAG_FOOTER))
		r->frames++;
	return 1;
}

/* ---- records ---- */

/* What the tables cannot say: checks across fields, and what a record tells the reader. */
static const char *check_extended(struct record_reader *r, const struct hs_record *rec)
{
	switch (rec->type) {
	case HS_REC_SESSION:
		if (rec->session.tick_ns == 0)
			return "session tick_ns is zero";
		if (rec->session.max_stack < 1 || rec->session.max_stack > HS_MAX_STACK_FRAMES)
			return "session max_stack is outside 1..127";
		r->max_frames = (uint32_t)rec->session.max_stack;
		return NULL;
	case HS_REC_MAPPING:
		return rec->mapping.end < rec->mapping.start ? "mapping wraps around the address space" : NULL;
	default:
		return NULL;
	}
}

static int decode_extended(struct record_reader *r, struct hs_record *rec, const uint8_t *p, size_t len)
{
	const struct hs_schema *s = hs_schema_of(rec->type);
	struct hs_cur c = {.p = p, .end = p + len, .arena = &r->arena, .max_frames = r->max_frames};
	uint64_t prev = 0;

	/* Version 4 did not know the type: one in a file of it is skipped, as it would be. */
	if (!s || (rec->type == HS_REC_STACK_TAIL && !r->stacks))
		return 1; /* unknown: caller skips it */
	hs_payload__decode(&c, s, rec, &prev);
	if (!c.bad)
		c.bad = check_extended(r, rec);
	if (!c.bad && r->stacks && (rec->type == HS_REC_STACK || rec->type == HS_REC_STACK_TAIL)) {
		int err = 0;

		c.bad = rec->type == HS_REC_STACK ? stack_store__add(r->stacks, rec, r->next_off, &err)
						  : stack_store__resolve(r->stacks, rec, r->max_frames, r->next_off, &err);
		if (err) {
			set_status(r, HS_READ_IO, "frame at offset %" PRIu64 ", byte %zu: %s", r->frame_off,
				   (size_t)(p - r->raw), c.bad);
			return -1;
		}
	}
	/* Bytes left over are fields a newer minor version appended; they are ignored. */
	if (c.bad) {
		set_status(r, HS_READ_CORRUPT, "frame at offset %" PRIu64 ", byte %zu: %s record: %s", r->frame_off,
			   (size_t)(p - r->raw), hs_rec_type_name(rec->type), c.bad);
		return -1;
	}
	return 0;
}

/* Version 2: the slot is in the file. Returns why it is impossible, or NULL. */
static const char *check_slot(struct record_reader *r, struct hs_record *rec, uint64_t slot)
{
	rec->alloc.ptr = 0;
	rec->alloc.slot = slot;
	if (rec->type == HS_REC_FREE)
		return slot < r->slot_limit ? NULL : "frees a slot no allocation used";
	if (slot > r->slot_limit)
		return "slot skips ahead of every slot used so far";
	if (slot == r->slot_limit)
		r->slot_limit++;
	return NULL;
}

/* Version 1: names a block by (pid, address); hands out slots as the recorder would. */
static const char *v1_slot(struct record_reader *r, struct hs_record *rec, uint64_t ptr)
{
	struct hmap_slot *s;
	bool created;

	rec->alloc.ptr = ptr;
	if (rec->type == HS_REC_FREE) {
		s = hmap_find(&r->v1_live, rec->pid, ptr);
		if (!s) {
			rec->free.slot = HS_SLOT_NONE;
			return NULL;
		}
		rec->free.slot = s->val;
		hmap_remove_slot(&r->v1_live, s);
		if (r->v1_nr_free == r->v1_cap_free) {
			size_t ncap = r->v1_cap_free ? r->v1_cap_free * 2 : 1024;
			uint64_t *n = realloc(r->v1_free, ncap * sizeof(*n));

			if (!n)
				return "out of memory";
			r->v1_free = n;
			r->v1_cap_free = ncap;
		}
		r->v1_free[r->v1_nr_free++] = rec->free.slot;
		return NULL;
	}
	s = hmap_put(&r->v1_live, rec->pid, ptr, &created);
	if (!s)
		return "out of memory";
	/* A live address handed out again: its free was lost, and the slot is reused. */
	if (created)
		s->val = r->v1_nr_free ? r->v1_free[--r->v1_nr_free] : r->slot_limit++;
	rec->alloc.slot = s->val;
	return NULL;
}

/* A core event at C: ALLOC, ALLOC_SAMPLED or FREE, or (version 2) a packed ALLOC or FREE
 * whose type byte is *TYPEP, which becomes the record type. Sets c->bad when it is impossible. */
static void decode_event(struct record_reader *r, struct hs_record *rec, struct hs_cur *c, uint32_t *typep, bool packed)
{
	uint32_t type = *typep;
	uint32_t bits = packed ? type : 0;
	uint64_t td, t, key;

	if (packed) {
		*typep = type = bits & HS_PACKED_ALLOC ? HS_REC_ALLOC : HS_REC_FREE;
		td = bits & HS_PACKED_TIME_ESC;
		if (td == HS_PACKED_TIME_ESC)
			td += hs_cur_u64(c);
		if (type == HS_REC_FREE && (bits & (HS_PACKED_SAME_SLOT | HS_PACKED_SAME_SITE)))
			c->bad = "packed FREE with ALLOC-only bits set";
	} else {
		td = hs_cur_u64(c);
	}
	t = r->last_time + (uint64_t)hs_unzigzag(td);
	/* v2 frees name their slot outright; allocations (and v1 addresses) are deltas. */
	if (bits & HS_PACKED_SAME_SLOT)
		key = r->last_key;
	else if (r->major >= 2 && type == HS_REC_FREE)
		key = hs_cur_u64(c);
	else
		key = r->last_key + (uint64_t)hs_unzigzag(hs_cur_u64(c));
	rec->type = type;
	rec->time = t;
	rec->pid = r->cur_pid;
	rec->tid = r->cur_tid;
	rec->alloc.size = rec->alloc.stack_id = 0;
	rec->alloc.kind = 0;
	rec->alloc.weight = HS_WEIGHT_ONE;
	if (type != HS_REC_FREE) {
		rec->alloc.size = hs_cur_u64(c);
		if (bits & HS_PACKED_SAME_SITE) {
			if (!r->have_site && !c->bad)
				c->bad = "repeats the call site, but no allocation in this frame named one";
			rec->alloc.stack_id = r->last_stack;
			rec->alloc.kind = r->last_kind;
		} else {
			rec->alloc.stack_id = hs_cur_u64(c);
			if (c->p >= c->end && !c->bad)
				c->bad = "record ends inside a field";
			else if (!c->bad)
				rec->alloc.kind = *c->p++;
			if (packed) {
				r->last_stack = rec->alloc.stack_id;
				r->last_kind = rec->alloc.kind;
				r->have_site = true;
			}
		}
		if (type == HS_REC_ALLOC_SAMPLED)
			rec->alloc.weight = hs_cur_u64(c);
	}
	if (!c->bad)
		c->bad = r->major == 1 ? v1_slot(r, rec, key) : check_slot(r, rec, key);
	if (c->bad)
		return;
	r->last_time = t;
	r->last_key = key;
}

/* Version 3's core records at C, whose type byte TYPE was read: an event (returns 1, REC
 * filled), THREAD or TIME (0), or -1 with c->bad set. */
static int decode_core3(struct record_reader *r, struct hs_record *rec, struct hs_cur *c, uint32_t type)
{
	if (type & HS_PACKED_EVENT) {
		rec->pid = r->cur_pid;
		rec->tid = r->cur_tid;
		c->bad = hs3_decode(&r->st3, r->col, (uint8_t)type, rec);
		if (!c->bad)
			c->bad = check_slot(r, rec, rec->alloc.slot);
	} else if (type == HS_REC_THREAD) {
		r->cur_pid = hs_cur_u32(c);
		r->cur_tid = hs_cur_u32(c);
		hs3_note_thread(&r->st3, r->cur_pid, r->cur_tid);
	} else if (type == HS3_REC_THREAD_AGAIN) {
		uint64_t i = hs_cur_u64(c);

		if (!c->bad && i >= r->st3.nr_threads)
			c->bad = "THREAD_AGAIN names a thread beyond those of its frame";
		if (!c->bad) {
			r->cur_pid = r->st3.threads[i].pid;
			r->cur_tid = r->st3.threads[i].tid;
			hs3_note_thread(&r->st3, r->cur_pid, r->cur_tid);
		}
	} else if (type == HS3_REC_TIME) {
		c->bad = hs3_decode_time(&r->st3, &c->p, c->end);
	} else if (type == HS3_REC_COLUMNS) {
		c->bad = "a COLUMNS record after the start of its frame";
	} else {
		c->bad = "unknown core record type (core types cannot be skipped)";
	}
	if (c->bad)
		return -1;
	r->pos = (size_t)(c->p - r->raw);
	return type & HS_PACKED_EVENT ? 1 : 0;
}

static int decode_next(struct record_reader *r, struct hs_record *rec)
{
	while (r->pos < r->raw_len) {
		const uint8_t *base = r->raw + r->pos;
		struct hs_cur c = {.p = base, .end = r->raw + r->raw_len};
		uint32_t type = *c.p++;

		bool packed = (type & HS_PACKED_EVENT) && r->major >= 2;

		if (r->major >= 3 && (packed || type <= HS_REC_CORE_MAX)) {
			int ret = decode_core3(r, rec, &c, type);

			if (ret < 0)
				goto bad;
			if (ret)
				return 1;
			continue;
		}
		if (packed || type == HS_REC_ALLOC || type == HS_REC_ALLOC_SAMPLED || type == HS_REC_FREE) {
			decode_event(r, rec, &c, &type, packed);
			if (c.bad)
				goto bad;
			r->pos = (size_t)(c.p - r->raw);
			return 1;
		}
		memset(rec, 0, sizeof(*rec));
		rec->type = type;
		if (type == HS_REC_THREAD) {
			r->cur_pid = hs_cur_u32(&c);
			r->cur_tid = hs_cur_u32(&c);
			if (c.bad)
				goto bad;
			r->pos = (size_t)(c.p - r->raw);
			continue;
		}
		if (type <= HS_REC_CORE_MAX) {
			c.bad = "unknown core record type (core types cannot be skipped)";
			goto bad;
		}
		if (type > HS_REC_EXT_MAX) {
			c.bad = "record type out of range";
			goto bad;
		}
		{
			uint64_t len = hs_cur_u64(&c);
			int ret;

			if (c.bad)
				goto bad;
			if (len > (uint64_t)(c.end - c.p)) {
				c.bad = "record length runs past the end of its frame";
				goto bad;
			}
			r->pos = (size_t)(c.p - r->raw) + (size_t)len;
			/* A type this version does not know is skipped unread: no room is made for it. */
			if (!hs_schema_of(type)) {
				r->skipped++;
				continue;
			}
			/* Worst case per payload byte: an 8-aligned empty string or 8 bytes of array item (see FORMAT.md). */
			if (ensure(&r->arena.p, &r->arena.cap, (size_t)len * 24 + 64)) {
				set_status(r, HS_READ_IO,
					   "frame at offset %" PRIu64 ", byte %zu: out of memory decoding a %s record of %" PRIu64
					   " bytes",
					   r->frame_off, (size_t)(c.p - r->raw), hs_rec_type_name(type), len);
				return -ENOMEM;
			}
			r->arena.len = 0;
			ret = decode_extended(r, rec, c.p, (size_t)len);
			if (ret < 0)
				return 0;
			if (ret > 0) {
				r->skipped++;
				continue;
			}
			return 1;
		}
bad:
		set_status(r, HS_READ_CORRUPT, "frame at offset %" PRIu64 ", byte %zu: %s record: %s", r->frame_off,
			   r->pos, hs_rec_type_name(type), c.bad);
		return 0;
	}
	return 2; /* frame exhausted */
}

/* Following: the file header, once its 16 bytes are there. */
static int follow_header(struct record_reader *r)
{
	int e = in_fill(r, HS_FILE_HEADER_SIZE);

	if (e) {
		set_status(r, HS_READ_IO, "read failed at offset 0: %s", strerror(-e));
		return e;
	}
	if (r->in_len < HS_FILE_HEADER_SIZE && wait_for_more(r))
		return 0;
	e = take_header(r, r->in, r->in_len < HS_FILE_HEADER_SIZE ? r->in_len : HS_FILE_HEADER_SIZE, r->err,
			sizeof(r->err));
	if (e) {
		r->status = e == -ENOMEM ? HS_READ_IO : HS_READ_CORRUPT;
		return e == -ENOMEM ? e : 0;
	}
	return 1;
}

int record_reader__next(struct record_reader *r, struct hs_record *rec)
{
	if (r->status == HS_READ_WAIT)
		r->status = HS_READ_OK;
	if (r->follow && !r->have_header) {
		int e = follow_header(r);

		if (e <= 0)
			return e;
	}
	for (;;) {
		int ret;

		if (r->status != HS_READ_OK)
			return 0;
		ret = decode_next(r, rec);
		if (ret != 2)
			return ret;
		ret = load_frame(r, r->next_off, false);
		if (ret <= 0)
			return ret;
	}
}

int record_reader__rewind(struct record_reader *r)
{
	if (r->follow)
		return -ESPIPE; /* a follower reads its input once */
	r->next_off = r->data_start;
	r->raw_len = r->pos = 0;
	r->frames = 0;
	r->skipped = 0;
	r->status = HS_READ_OK;
	r->err[0] = 0;
	r->slot_limit = 0;
	hmap_free(&r->v1_live);
	r->v1_nr_free = 0;
	if (r->stacks)
		stack_store__reset(r->stacks);
	return 0;
}

int record_reader__footer(struct record_reader *r, int (*cb)(const struct hs_record *rec, void *ctx), void *ctx)
{
	uint8_t tr[HS_TRAILER_SIZE];
	struct hs_trailer t;
	struct record_reader *f;
	struct hs_record rec;
	char err[64];
	uint64_t off;
	size_t got;
	int ret;

	if (r->follow || r->file_size < HS_FILE_HEADER_SIZE + HS_TRAILER_SIZE)
		return 0;
	if (pread_all(r->fd, tr, sizeof(tr), r->file_size - sizeof(tr), &got) || got != sizeof(tr))
		return 0;
	hs_fixed_get(&hs_trailer_layout, tr, &t);
	if (memcmp(t.magic, HS_TRAILER_MAGIC, sizeof(t.magic)))
		return 0;
	off = t.footer_offset;
	if (off < HS_FILE_HEADER_SIZE || off >= r->file_size - sizeof(tr))
		return -EINVAL;
	/* A second reader keeps the caller's stream position untouched. */
	ret = record_reader__open(r->path, &f, err, sizeof(err));
	if (ret)
		return ret;
	f->file_size = r->file_size - sizeof(tr);
	ret = load_frame(f, off, true);
	if (ret <= 0) {
		record_reader__free(f);
		return ret < 0 ? ret : -EINVAL;
	}
	ret = 1;
	for (;;) {
		int d = decode_next(f, &rec);

		if (d == 2)
			break;
		if (d <= 0) {
			ret = -EINVAL;
			break;
		}
		if (cb(&rec, ctx)) {
			ret = -ECANCELED;
			break;
		}
	}
	record_reader__free(f);
	return ret;
}

enum hs_read_status record_reader__status(const struct record_reader *r) { return r->status; }
const char *record_reader__error(const struct record_reader *r) { return r->err; }
uint64_t record_reader__offset(const struct record_reader *r) { return r->frame_off; }
uint64_t record_reader__file_size(const struct record_reader *r) { return r->file_size; }
uint64_t record_reader__frames(const struct record_reader *r) { return r->frames; }
uint32_t record_reader__major(const struct record_reader *r) { return r->major; }
uint32_t record_reader__minor(const struct record_reader *r) { return r->minor; }
uint64_t record_reader__skipped_records(const struct record_reader *r) { return r->skipped; }

void record_reader__free(struct record_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	ZSTD_freeDCtx(r->dctx);
	free(r->comp);
	free(r->raw);
	free(r->arena.p);
	free(r->path);
	free(r->in);
	hmap_free(&r->v1_live);
	free(r->v1_free);
	free(r->st3.pairs);
	hs3_classes__fini(&r->classes);
	stack_store__free(r->stacks);
	free(r);
}
