// SPDX-License-Identifier: MIT
/* The HTML report's data: moments of the live heap kept during a replay, folded into one
 * tree of functions small enough for any recording length, and the report rows as tables. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "jsonw.h"
#include "rows.h"

/* What keeps a report small however long the recording: at most this many moments, this
 * many functions in the tree (the rest folded into their callers), and this many values
 * kept from the replay (40 bytes each) besides the end's, which are at most the replay's own
 * aggregates. Worst case the data is a few MB; a typical one is far smaller, as a moment
 * stores only what changed since the one before. */
#define HTML_EVEN_MOMENTS 32
#define HTML_MAX_SNAPSHOTS 14
#define HTML_MAX_NODES 2500
#define HTML_MAX_CAPTURES (8u << 20)
#define HTML_TABLE_ROWS 50
/* Even moments (all but the first), snapshots, the peak and the end. */
#define HTML_MAX_MOMENTS (HTML_EVEN_MOMENTS + HTML_MAX_SNAPSHOTS + 2)

extern const char hs_html_page[], hs_html_page_end[];

enum moment_kind { M_EVEN, M_SNAPSHOT, M_PEAK, M_END };

/* An aggregate's values at a moment, kept when they changed since the moment before. */
struct capture {
	uint32_t agg;
	double v[V__COUNT];
};

struct moment {
	enum moment_kind kind;
	uint64_t when; /* ticks, for ordering; UINT64_MAX at the end */
	struct replay_checkpoint cp;
	char label[96];
	bool kept;     /* its values were captured (not past the budget) */
	struct capture *cap;
	uint32_t nr_cap;
};

struct html {
	struct moment *m;
	struct replay_checkpoint *cps; /* the second replay's checkpoints, parallel to m */
	uint32_t nr;
	double (*last)[V__COUNT]; /* each aggregate's values at the last kept moment */
	uint32_t nr_last;
	uint64_t captures;
	int err;
};

static int cmp_moment(const void *a, const void *b)
{
	const struct moment *x = a, *y = b;

	if (x->when != y->when)
		return x->when < y->when ? -1 : 1;
	return (int)y->kind - (int)x->kind; /* the named one first, so the even one is dropped */
}

static void add_moment(struct html *h, enum moment_kind kind, uint64_t when, uint64_t record, uint64_t time,
		       const char *label)
{
	struct moment *m;

	/* The planner adds at most HTML_MAX_MOMENTS; one past them would have no room. */
	if (h->nr >= HTML_MAX_MOMENTS)
		return;
	m = &h->m[h->nr];
	*m = (struct moment){.kind = kind, .when = when, .cp = {.record = record, .time = time}};
	snprintf(m->label, sizeof(m->label), "%s", label);
	h->nr++;
}

int html__plan(const struct replay *r, struct replay_target *t, struct html **out)
{
	uint32_t cap = HTML_MAX_MOMENTS, n = 0;
	struct html *h = calloc(1, sizeof(*h));
	uint64_t span = r->last_time - r->first_time;
	char label[96];

	*out = NULL;
	if (!h)
		return -ENOMEM;
	h->m = calloc(cap, sizeof(*h->m));
	h->cps = calloc(cap, sizeof(*h->cps));
	if (!h->m || !h->cps) {
		html__free(h);
		return -ENOMEM;
	}
	for (uint32_t k = 1; k < HTML_EVEN_MOMENTS && span; k++) {
		uint64_t at = r->first_time + (uint64_t)((double)span * k / HTML_EVEN_MOMENTS);

		add_moment(h, M_EVEN, at, UINT64_MAX, at, "");
	}
	for (uint32_t k = 0; k < r->nr_snaps && k < HTML_MAX_SNAPSHOTS; k++) {
		/* More snapshots than room: evenly chosen, the last always. */
		uint32_t i = r->nr_snaps <= HTML_MAX_SNAPSHOTS ? k
			     : (uint32_t)((uint64_t)(k + 1) * r->nr_snaps / HTML_MAX_SNAPSHOTS) - 1;
		const struct snapshot_info *sn = &r->snaps[i];

		snprintf(label, sizeof(label), "snapshot %u '%s'", i + 1, sn->label);
		if (sn->record_index == UINT64_MAX)
			add_moment(h, M_SNAPSHOT, sn->time, UINT64_MAX, sn->time, label);
		else
			add_moment(h, M_SNAPSHOT, sn->time, sn->record_index, UINT64_MAX, label);
	}
	if (r->peak_bytes > 0)
		add_moment(h, M_PEAK, r->peak_time, r->peak_event + 1, UINT64_MAX, "peak");
	/* The replay's end: for a Python process, where its finalization began (py_final). */
	add_moment(h, M_END, UINT64_MAX, UINT64_MAX, UINT64_MAX, r->py_final_procs ? "before Python finalization" : "end");
	/* In the order the replay meets them; an even moment at the tick of a named one goes. */
	qsort(h->m, h->nr, sizeof(*h->m), cmp_moment);
	for (uint32_t i = 0; i < h->nr; i++) {
		if (n && h->m[i].kind == M_EVEN && h->m[n - 1].when == h->m[i].when)
			continue;
		h->cps[n] = h->m[i].cp;
		h->m[n++] = h->m[i];
	}
	h->nr = n;
	t->checkpoints = h->cps;
	t->nr_checkpoints = h->nr;
	t->checkpoint = html__checkpoint;
	t->checkpoint_ctx = h;
	*out = h;
	return 0;
}

static void agg_values(const struct agg *g, double v[V__COUNT])
{
	v[V_ALLOC_OBJECTS] = g->alloc_objects;
	v[V_ALLOC_SPACE] = g->alloc_space;
	v[V_INUSE_OBJECTS] = g->inuse_objects;
	v[V_INUSE_SPACE] = g->inuse_space;
}

void html__checkpoint(const struct replay *r, uint32_t i, void *ctx)
{
	struct html *h = ctx;
	struct moment *m = &h->m[i];
	uint32_t n = 0;

	if (h->err)
		return;
	if (r->nr_aggs > h->nr_last) {
		double(*l)[V__COUNT] = realloc(h->last, sizeof(*l) * r->nr_aggs);

		if (!l) {
			h->err = -ENOMEM;
			return;
		}
		memset(l + h->nr_last, 0, sizeof(*l) * (r->nr_aggs - h->nr_last));
		h->last = l;
		h->nr_last = r->nr_aggs;
	}
	/* Counted by the very test the copy below makes, so the copy never passes the count. */
	for (uint32_t a = 0; a < r->nr_aggs; a++) {
		double v[V__COUNT];

		agg_values(&r->aggs[a], v);
		n += memcmp(v, h->last[a], sizeof(v)) != 0;
	}
	/* Even moments may take half the budget, so that snapshots and the peak, met later, find
	 * room in the rest; the end is always kept. A moment past its share is left out. */
	if ((m->kind == M_EVEN && h->captures + n > HTML_MAX_CAPTURES / 2) ||
	    (m->kind != M_END && h->captures + n > HTML_MAX_CAPTURES))
		return;
	m->cap = malloc(sizeof(*m->cap) * (n ? n : 1));
	if (!m->cap) {
		h->err = -ENOMEM;
		return;
	}
	for (uint32_t a = 0; a < r->nr_aggs && m->nr_cap < n; a++) {
		double v[V__COUNT];

		agg_values(&r->aggs[a], v);
		if (!memcmp(v, h->last[a], sizeof(v)))
			continue;
		m->cap[m->nr_cap].agg = a;
		memcpy(m->cap[m->nr_cap++].v, v, sizeof(v));
		memcpy(h->last[a], v, sizeof(v));
	}
	h->captures += m->nr_cap;
	m->kept = true;
}

void html__free(struct html *h)
{
	if (!h)
		return;
	for (uint32_t i = 0; i < h->nr; i++)
		free(h->m[i].cap);
	free(h->m);
	free(h->cps);
	free(h->last);
	free(h);
}

/* ---- the tree of functions ---- */

struct tree {
	uint32_t *parent, *name; /* by node; node 0 is the root, a child's index above its parent's */
	uint32_t nr, cap;
	struct hmap idx; /* (parent, name) -> node */
	struct names names;
	uint32_t *leaf_of_agg; /* each aggregate's node: where its stack ends */
};

static int64_t tree_child(struct tree *t, uint32_t parent, const char *name)
{
	int64_t id = names__intern(&t->names, name);
	struct hmap_slot *s;
	bool created;

	if (id < 0)
		return id;
	s = hmap_put(&t->idx, parent, (uint64_t)id, &created);
	if (!s)
		return -ENOMEM;
	if (!created)
		return (int64_t)s->val;
	if (t->nr == t->cap) {
		uint32_t ncap = t->cap * 2;
		uint32_t *p = realloc(t->parent, sizeof(*p) * ncap), *n = p ? realloc(t->name, sizeof(*n) * ncap) : NULL;

		if (p)
			t->parent = p;
		if (!n) {
			hmap_remove_slot(&t->idx, s);
			return -ENOMEM;
		}
		t->name = n;
		t->cap = ncap;
	}
	t->parent[t->nr] = parent;
	t->name[t->nr] = (uint32_t)id;
	s->val = t->nr;
	return t->nr++;
}

static void tree_free(struct tree *t)
{
	free(t->parent);
	free(t->name);
	free(t->leaf_of_agg);
	hmap_free(&t->idx);
	names__free(&t->names);
}

/* Every sample's stack as a path from the root through its process, functions (inline ones
 * included) named as the other reports name them. */
static int tree_build(struct tree *t, const struct profile *p)
{
	memset(t, 0, sizeof(*t));
	t->cap = 1024;
	t->parent = malloc(sizeof(*t->parent) * t->cap);
	t->name = malloc(sizeof(*t->name) * t->cap);
	t->leaf_of_agg = calloc(p->r->nr_aggs ? p->r->nr_aggs : 1, sizeof(*t->leaf_of_agg));
	if (!t->parent || !t->name || !t->leaf_of_agg || names__intern(&t->names, "all") < 0)
		return -ENOMEM;
	t->parent[0] = 0;
	t->name[0] = 0;
	t->nr = 1;
	for (uint32_t i = 0; i < p->nr_samples; i++) {
		const struct process *pr = replay__process(p->r, p->samples[i].pid);
		const char **names;
		char(*bufs)[ROWS_NAME_MAX];
		char proc[48];
		int n = rows__sample_frames(p, &p->samples[i], &names, &bufs);
		int64_t node;

		if (n < 0)
			return n;
		/* The process first: a recording of a build or a script holds many. */
		snprintf(proc, sizeof(proc), "%s [%u]", pr && pr->comm ? pr->comm : "?", p->samples[i].pid);
		node = tree_child(t, 0, proc);
		if (!n && node >= 0)
			node = tree_child(t, (uint32_t)node, "[no stack]");
		for (int k = n - 1; k >= 0 && node >= 0; k--)
			node = tree_child(t, (uint32_t)node, names[k]);
		free(names);
		free(bufs);
		if (node < 0)
			return (int)node;
		if (p->samples[i].agg < p->r->nr_aggs)
			t->leaf_of_agg[p->samples[i].agg] = (uint32_t)node;
	}
	return 0;
}

/* ---- folding the tree to HTML_MAX_NODES ---- */

struct node_rank {
	double importance;
	uint32_t node;
};

static int cmp_rank(const void *a, const void *b)
{
	const struct node_rank *x = a, *y = b;

	if (x->importance != y->importance)
		return x->importance < y->importance ? 1 : -1;
	return x->node < y->node ? -1 : x->node > y->node;
}

/* Applies moment M's captures to the aggregates' values AGG and to the nodes' own values
 * SELF (through MAP, node -> kept node). */
static void apply_moment(const struct moment *m, const struct tree *t, const uint32_t *map, double (*agg)[V__COUNT],
			 double (*self)[V__COUNT])
{
	for (uint32_t c = 0; c < m->nr_cap; c++) {
		const struct capture *cp = &m->cap[c];
		uint32_t node = map ? map[t->leaf_of_agg[cp->agg]] : t->leaf_of_agg[cp->agg];

		for (int v = 0; v < V__COUNT; v++) {
			self[node][v] += cp->v[v] - agg[cp->agg][v];
			agg[cp->agg][v] = cp->v[v];
		}
	}
}

/* Which nodes the report keeps: the HTML_MAX_NODES that ever held the largest share of any
 * value, at any kept moment. A node's share is never above its parent's, so the set keeps
 * every kept node's callers. MAP gets, for every node, the kept node it is folded into. */
static int tree_fold(const struct html *h, const struct tree *t, const struct profile *p, uint32_t *map,
		     uint32_t *nr_kept)
{
	double(*agg)[V__COUNT] = calloc(p->r->nr_aggs ? p->r->nr_aggs : 1, sizeof(*agg));
	double(*tot)[V__COUNT] = calloc(t->nr, sizeof(*tot));
	double(*self)[V__COUNT] = calloc(t->nr, sizeof(*self));
	struct node_rank *rank = calloc(t->nr, sizeof(*rank));
	double max[V__COUNT] = {0};
	uint32_t kept = 0;
	int err = agg && tot && self && rank ? 0 : -ENOMEM;

	for (uint32_t n = 0; !err && n < t->nr; n++)
		rank[n].node = n;
	for (int pass = 0; pass < 2 && !err; pass++) {
		/* Pass 0 finds each value's largest total; pass 1 each node's largest share. */
		memset(agg, 0, sizeof(*agg) * (p->r->nr_aggs ? p->r->nr_aggs : 1));
		memset(self, 0, sizeof(*self) * t->nr);
		for (uint32_t i = 0; i < h->nr; i++) {
			if (!h->m[i].kept)
				continue;
			apply_moment(&h->m[i], t, NULL, agg, self);
			memcpy(tot, self, sizeof(*tot) * t->nr);
			for (uint32_t n = t->nr - 1; n > 0; n--)
				for (int v = 0; v < V__COUNT; v++)
					tot[t->parent[n]][v] += tot[n][v];
			for (uint32_t n = 0; n < t->nr; n++) {
				for (int v = 0; v < V__COUNT; v++) {
					if (pass == 0) {
						if (n == 0 && tot[0][v] > max[v])
							max[v] = tot[0][v];
					} else if (max[v] > 0 && tot[n][v] / max[v] > rank[n].importance) {
						rank[n].importance = tot[n][v] / max[v];
					}
				}
			}
		}
	}
	if (!err) {
		rank[0].importance = INFINITY;
		qsort(rank, t->nr, sizeof(*rank), cmp_rank);
		for (uint32_t n = 0; n < t->nr; n++)
			map[n] = UINT32_MAX;
		for (uint32_t k = 0; k < t->nr && k < HTML_MAX_NODES && rank[k].importance > 0; k++)
			map[rank[k].node] = 0; /* numbered below, in node order */
		for (uint32_t n = 0; n < t->nr; n++)
			map[n] = map[n] == UINT32_MAX ? UINT32_MAX : kept++;
		/* A folded node goes to its nearest kept caller: parents come first. */
		for (uint32_t n = 1; n < t->nr; n++)
			if (map[n] == UINT32_MAX)
				map[n] = map[t->parent[n]];
		*nr_kept = kept;
	}
	free(agg);
	free(tot);
	free(self);
	free(rank);
	return err;
}

/* ---- writing ---- */

static void html_text(FILE *out, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default: fputc(*s, out);
		}
	}
}

static void html_num(FILE *out, double v)
{
	fprintf(out, "<td class=n>%.0f</td>", v);
}

/* A Python program's own table: its leaves are the interpreter's, so the top functions hold no
 * Python code; here each Python function by what it owns (the innermost Python frame) and holds. */
static int write_python_table(const struct profile *p, FILE *out)
{
	struct fn_rows py;
	int err = rows__python_functions(p, V_INUSE_SPACE, &py);

	if (err || !py.nr) {
		fn_rows__free(&py);
		return err;
	}
	fprintf(out, "<section id=python><h2>Python functions: in use %s</h2><table class=rows><thead><tr>"
		"<th>own bytes</th><th>cum bytes</th><th>function</th></tr></thead><tbody>\n",
		p->r->py_final_procs ? "before Python finalization" : "at the end");
	for (uint32_t i = 0; i < py.nr && i < HTML_TABLE_ROWS; i++) {
		fputs("<tr>", out);
		html_num(out, py.rows[i].flat);
		html_num(out, py.rows[i].cum);
		fputs("<td class=fn>", out);
		html_text(out, py.rows[i].name);
		fputs("</td></tr>\n", out);
	}
	fprintf(out, "</tbody></table><p class=note>%u of %u Python functions. Own: the blocks whose innermost "
		     "Python frame is the function's (the line that made them); cum: anywhere in the stack.</p></section>\n",
		py.nr < HTML_TABLE_ROWS ? py.nr : HTML_TABLE_ROWS, py.nr);
	fn_rows__free(&py);
	return 0;
}

static int write_tables(const struct profile *p, FILE *out)
{
	struct fn_rows top;
	struct leak_rows leaks;
	struct temp_rows temp;
	int err = rows__functions(p, V_INUSE_SPACE, &top);
	const char *when = p->r->py_final_procs ? "before Python finalization" : "at the end";

	if (err)
		return err;
	fprintf(out, "<section id=top><h2>Top functions: in use %s</h2><table class=rows><thead><tr>"
		"<th>flat bytes</th><th>cum bytes</th><th>function</th></tr></thead><tbody>\n", when);
	for (uint32_t i = 0; i < top.nr && i < HTML_TABLE_ROWS; i++) {
		fputs("<tr>", out);
		html_num(out, top.rows[i].flat);
		html_num(out, top.rows[i].cum);
		fputs("<td class=fn>", out);
		html_text(out, top.rows[i].name);
		fputs("</td></tr>\n", out);
	}
	if (!top.nr)
		fputs("<tr><td colspan=3 class=note>none</td></tr>\n", out);
	fprintf(out, "</tbody></table><p class=note>%u of %u functions; %.0f bytes in use in all.</p></section>\n",
		top.nr < HTML_TABLE_ROWS ? top.nr : HTML_TABLE_ROWS, top.nr, top.total);
	fn_rows__free(&top);
	err = write_python_table(p, out);
	if (err)
		return err;

	err = rows__leaks(p, 0, HTML_TABLE_ROWS, &leaks);
	if (err)
		return err;
	fprintf(out, "<section id=leaks><h2>Leaks: live %s, by stack</h2><table class=rows><thead><tr>"
		"<th>bytes</th><th>blocks</th><th>oldest (s)</th><th>pid</th><th>stack, leaf first</th></tr></thead><tbody>\n",
		when);
	for (uint32_t i = 0; i < leaks.nr && i < HTML_TABLE_ROWS; i++) {
		const struct leak_row *row = &leaks.rows[i];

		fputs("<tr>", out);
		html_num(out, row->bytes);
		html_num(out, row->count);
		fprintf(out, "<td class=n>%.3f</td><td class=n>%u</td><td class=fn>", row->oldest, row->pid);
		for (uint32_t k = 0; k < row->nr_frames; k++) {
			const struct frame_row *f = &row->frames[k];
			fputs(k ? "<br>" : "", out);
			html_text(out, f->name);
			if (f->file && f->line) {
				fputs(" <span class=loc>", out);
				html_text(out, basename(f->file));
				fprintf(out, ":%u</span>", f->line);
			}
		}
		fputs("</td></tr>\n", out);
	}
	if (!leaks.nr)
		fputs("<tr><td colspan=5 class=note>none</td></tr>\n", out);
	fprintf(out, "</tbody></table><p class=note>%u stacks hold %.0f bytes.</p></section>\n", leaks.nr, leaks.total);
	leak_rows__free(&leaks);

	err = rows__temporary(p, &temp);
	if (err)
		return err;
	fputs("<section id=temporary><h2>Temporary allocations</h2><p class=note>Freed by their thread before it "
	      "allocated again (heaptrack's definition).</p><table class=rows><thead><tr><th>temporary</th>"
	      "<th>bytes</th><th>of its allocations</th><th>function</th></tr></thead><tbody>\n", out);
	for (uint32_t i = 0; i < temp.nr && i < HTML_TABLE_ROWS; i++) {
		const struct temp_row *row = &temp.rows[i];

		fputs("<tr>", out);
		html_num(out, row->temporary);
		html_num(out, row->temporary_bytes);
		fprintf(out, "<td class=n>%.1f%%</td><td class=fn>",
			row->allocations > 0 ? 100 * row->temporary / row->allocations : 0);
		html_text(out, row->name);
		fputs("</td></tr>\n", out);
	}
	if (!temp.nr)
		fputs("<tr><td colspan=4 class=note>none</td></tr>\n", out);
	fprintf(out, "</tbody></table><p class=note>%.0f of %.0f allocations were temporary.</p></section>\n",
		temp.temporary, temp.allocations);
	temp_rows__free(&temp);
	return 0;
}

static const char *moment_kind_name(enum moment_kind k)
{
	static const char *const n[] = {"even", "snapshot", "peak", "end"};

	return n[k];
}

static int write_data(struct html *h, const struct tree *t, const uint32_t *map, uint32_t nr_kept,
		      const struct profile *p, const struct report_opts *o, FILE *out)
{
	const struct replay *r = p->r;
	double(*agg)[V__COUNT] = calloc(r->nr_aggs ? r->nr_aggs : 1, sizeof(*agg));
	double(*self)[V__COUNT] = calloc(nr_kept, sizeof(*self));
	double(*prev)[V__COUNT] = calloc(nr_kept, sizeof(*prev));
	uint32_t *kept_node = calloc(nr_kept, sizeof(*kept_node));
	struct jsonw w;

	if (!agg || !self || !prev || !kept_node) {
		free(agg);
		free(self);
		free(prev);
		free(kept_node);
		return -ENOMEM;
	}
	for (uint32_t n = 0; n < t->nr; n++)
		if (n == 0 || map[n] != map[t->parent[n]]) /* kept: numbered apart from its caller */
			kept_node[map[n]] = n;
	jsonw__init(&w, out, true);
	jsonw__obj_begin(&w, NULL);
	jsonw__str(&w, "file", o->file_label);
	jsonw__str(&w, "command", r->cmdline);
	jsonw__str(&w, "via", r->via);
	jsonw__str(&w, "hostname", r->hostname);
	jsonw__str(&w, "version", HEAPSNAP_VERSION);
	jsonw__u64(&w, "sample_rate", r->sample_rate);
	jsonw__str(&w, "sampling", report_sampling_text(r));
	if (r->py_final_procs) /* what the end and the tables are */
		jsonw__str(&w, "snapshot", r->stop_desc);
	jsonw__u64(&w, "lost_events", replay__lost_events(r, NULL, 0));
	if (replay__stopped(r, NULL, 0))
		jsonw__u64(&w, "processes_stopped", replay__stopped(r, NULL, 0));
	jsonw__secs(&w, "first_time", replay__seconds(r, r->first_time));
	jsonw__secs(&w, "last_time", replay__seconds(r, r->last_time));
	report_timeline_json(&w, r);
	jsonw__arr_begin(&w, "names");
	for (uint32_t n = 0; n < nr_kept; n++)
		jsonw__str(&w, NULL, t->names.v[t->name[kept_node[n]]]);
	jsonw__arr_end(&w);
	jsonw__arr_begin(&w, "parents");
	for (uint32_t n = 0; n < nr_kept; n++)
		jsonw__u64(&w, NULL, n ? map[t->parent[kept_node[n]]] : 0);
	jsonw__arr_end(&w);
	jsonw__u64(&w, "folded_nodes", t->nr - nr_kept);
	jsonw__arr_begin(&w, "moments");
	for (uint32_t i = 0; i < h->nr; i++) {
		const struct moment *m = &h->m[i];

		if (!m->kept)
			continue;
		apply_moment(m, t, map, agg, self);
		jsonw__obj_begin(&w, NULL);
		/* Named moments are where they were found; the end is where the replay ended. */
		jsonw__secs(&w, "time", replay__seconds(r, m->kind == M_END ? r->last_time : m->when));
		jsonw__str(&w, "kind", moment_kind_name(m->kind));
		jsonw__str(&w, "label", m->label);
		/* The nodes whose own values changed since the moment before: node, then the four
		 * values in pprof's order (alloc objects, alloc space, inuse objects, inuse space). */
		jsonw__arr_begin(&w, "changed");
		for (uint32_t n = 0; n < nr_kept; n++) {
			if (!memcmp(self[n], prev[n], sizeof(self[n])))
				continue;
			jsonw__u64(&w, NULL, n);
			for (int v = 0; v < V__COUNT; v++)
				jsonw__count(&w, NULL, self[n][v]);
			memcpy(prev[n], self[n], sizeof(self[n]));
		}
		jsonw__arr_end(&w);
		jsonw__obj_end(&w);
	}
	jsonw__arr_end(&w);
	jsonw__obj_end(&w);
	free(agg);
	free(self);
	free(prev);
	free(kept_node);
	return 0;
}

/* The page with its placeholders filled: the title, the tables, the data. */
int html__write(struct html *h, const struct profile *p, const struct report_opts *o, FILE *out)
{
	static const char *const marks[] = {"<!--HS:TITLE-->", "<!--HS:TABLES-->", "/*HS:DATA*/"};
	const char *at = hs_html_page, *end = hs_html_page_end;
	struct tree t;
	uint32_t *map = NULL, nr_kept = 0;
	int err = h->err;

	if (!err)
		err = tree_build(&t, p);
	else
		memset(&t, 0, sizeof(t));
	if (!err) {
		map = malloc(sizeof(*map) * t.nr);
		err = map ? tree_fold(h, &t, p, map, &nr_kept) : -ENOMEM;
	}
	for (size_t k = 0; k < sizeof(marks) / sizeof(marks[0]) && !err; k++) {
		const char *mk = memmem(at, (size_t)(end - at), marks[k], strlen(marks[k]));

		if (!mk) {
			err = -EINVAL; /* a page built without its placeholders */
			break;
		}
		fwrite(at, 1, (size_t)(mk - at), out);
		at = mk + strlen(marks[k]);
		if (k == 0) {
			fputs("heapsnap: ", out);
			html_text(out, o->file_label);
		} else if (k == 1) {
			err = write_tables(p, out);
		} else {
			err = write_data(h, &t, map, nr_kept, p, o, out);
		}
	}
	if (!err)
		fwrite(at, 1, (size_t)(end - at), out);
	free(map);
	tree_free(&t);
	if (!err && ferror(out))
		err = -EIO;
	return err;
}
