// SPDX-License-Identifier: MIT
#include <inttypes.h>
#include <math.h>

#include "jsonw.h"

void jsonw__init(struct jsonw *w, FILE *f, bool html)
{
	*w = (struct jsonw){.f = f, .html = html};
}

static void put_string(struct jsonw *w, const char *s)
{
	fputc('"', w->f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(w->f, "\\%c", c);
		else if (c < 0x20 || (w->html && (c == '<' || c == '>' || c == '&')))
			fprintf(w->f, "\\u%04x", c);
		else if (w->html && c == 0xe2 && (unsigned char)s[1] == 0x80 &&
			 ((unsigned char)s[2] == 0xa8 || (unsigned char)s[2] == 0xa9)) {
			/* U+2028 and U+2029 end a line in older JavaScript. */
			fprintf(w->f, "\\u%04x", 0x2000 | (unsigned char)s[2]);
			s += 2;
		} else
			fputc(c, w->f);
	}
	fputc('"', w->f);
}

/* The comma and the key before a value. */
static void member(struct jsonw *w, const char *key)
{
	if (w->more[w->depth])
		fputc(',', w->f);
	w->more[w->depth] = true;
	if (key) {
		put_string(w, key);
		fputc(':', w->f);
	}
}

static void open_(struct jsonw *w, const char *key, char c)
{
	member(w, key);
	fputc(c, w->f);
	if (w->depth + 1 < JSONW_MAX_DEPTH)
		w->depth++;
	w->more[w->depth] = false;
}

static void close_(struct jsonw *w, char c)
{
	fputc(c, w->f);
	if (w->depth > 0)
		w->depth--;
}

void jsonw__obj_begin(struct jsonw *w, const char *key) { open_(w, key, '{'); }
void jsonw__obj_end(struct jsonw *w) { close_(w, '}'); }
void jsonw__arr_begin(struct jsonw *w, const char *key) { open_(w, key, '['); }
void jsonw__arr_end(struct jsonw *w) { close_(w, ']'); }

void jsonw__str(struct jsonw *w, const char *key, const char *s)
{
	member(w, key);
	put_string(w, s);
}

void jsonw__count(struct jsonw *w, const char *key, double v)
{
	member(w, key);
	fprintf(w->f, "%.0f", isfinite(v) ? v : 0);
}

void jsonw__u64(struct jsonw *w, const char *key, uint64_t v)
{
	member(w, key);
	fprintf(w->f, "%" PRIu64, v);
}

void jsonw__i64(struct jsonw *w, const char *key, int64_t v)
{
	member(w, key);
	fprintf(w->f, "%" PRId64, v);
}

void jsonw__secs(struct jsonw *w, const char *key, double v)
{
	member(w, key);
	fprintf(w->f, "%.6f", isfinite(v) ? v : 0);
}

void jsonw__bool(struct jsonw *w, const char *key, bool v)
{
	member(w, key);
	fputs(v ? "true" : "false", w->f);
}

void jsonw__num(struct jsonw *w, const char *key, double v)
{
	member(w, key);
	if (!isfinite(v))
		fputc('0', w->f);
	else if (v == nearbyint(v) && fabs(v) < 9e15)
		fprintf(w->f, "%.0f", v);
	else
		fprintf(w->f, "%.6g", v);
}
