// SPDX-License-Identifier: MIT
/* Where an export goes. dir: is written in place, one gzip'd pprof per process and
 * interval, through outfile (0600, never through a link, published by rename). The HTTP
 * destinations (OTLP, Pyroscope) are encoded here and sent by a thread of their own
 * through libcurl, from a bounded queue: a destination that is slow or down holds the
 * thread, never the follower, and what does not fit is dropped and counted. */
#include <ctype.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "export.h"
#include "gzip.h"
#include "outfile.h"
#include "pprof.h"

#define HEADER_FILE_MAX (16u << 10)
#define HEADERS_MAX 32
#define URL_MAX 2048

/* The folder of a dir: export: names start so, and sort by time. */
#define DIR_PREFIX "heapsnap-"
#define DIR_SUFFIX ".pb.gz"

struct export_msg {
	uint8_t *body;
	size_t len;
	char *url;
	uint32_t profiles;
	bool pyroscope; /* body is a pprof, sent as /ingest's multipart form */
};

struct export_sink {
	enum export_kind kind;
	struct export_sink_opts o;
	char url[URL_MAX];  /* as given */
	char base[URL_MAX]; /* http(s)://host:port[/path], without the scheme's prefix */
	char *dir;
	struct curl_slist *headers;
	char *cacert;
	/* The sender: the queue, a ring of o.queue, is shared under lock. */
	pthread_t thread;
	bool thread_on, closing, failing;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct export_msg *q;
	uint32_t head, n;
	struct timespec deadline; /* when closing: the drain's end */
	struct export_stats st;
	double backoff_max;
	bool has_path; /* the URL names its path: no signal's own appended */
};

static void msg_free(struct export_msg *m)
{
	free(m->body);
	free(m->url);
	memset(m, 0, sizeof(*m));
}

const char *export__service(const struct export_interval *iv, const struct process *pr)
{
	if (iv->service_name)
		return iv->service_name;
	if (pr->comm && *pr->comm)
		return pr->comm;
	return "unknown_service";
}

void export__process_view(const struct export_interval *iv, uint32_t i, struct profile *out)
{
	*out = *iv->p;
	out->samples = iv->p->samples + iv->first[i];
	out->nr_samples = iv->first[i + 1] - iv->first[i];
	memset(out->total, 0, sizeof(out->total));
	memset(out->total_var, 0, sizeof(out->total_var));
	for (uint32_t k = 0; k < out->nr_samples; k++)
		for (int v = 0; v < V__COUNT; v++) {
			out->total[v] += out->samples[k].v[v];
			out->total_var[v] += out->samples[k].var[v];
		}
}

const char *export_sink__url(const struct export_sink *s)
{
	return s->url;
}

/* ---- options read at the start ---- */

/* FILE's "Name: value" lines (blank lines and # comments skipped), e.g. an Authorization,
 * as request headers: read from a file, since argv is there for anyone's ps to see. */
static int read_headers(struct export_sink *s, const char *path, char *err, size_t len)
{
	char buf[HEADER_FILE_MAX + 1], *line, *next;
	struct stat st;
	ssize_t n;
	int fd, count = 0, lineno = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(err, len, "--export-header-file %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > HEADER_FILE_MAX) {
		snprintf(err, len, "--export-header-file %s: %s", path,
			 !S_ISREG(st.st_mode) ? "not a regular file" : "larger than 16 KiB");
		close(fd);
		return -EINVAL;
	}
	n = read(fd, buf, HEADER_FILE_MAX);
	close(fd);
	if (n < 0) {
		snprintf(err, len, "--export-header-file %s: %s", path, strerror(errno));
		return -EIO;
	}
	buf[n] = 0;
	for (line = buf; line; line = next) {
		size_t l;
		char *colon;
		struct curl_slist *h;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		lineno++;
		l = strlen(line);
		colon = strchr(line, ':');
		if (l && line[l - 1] == '\r')
			line[--l] = 0;
		if (!l || line[0] == '#')
			continue;
		for (char *c = line; colon && c < colon; c++)
			if (!isgraph((unsigned char)*c))
				colon = NULL;
		for (char *c = line; colon && *c; c++)
			if (iscntrl((unsigned char)*c) && *c != '\t')
				colon = NULL;
		if (!colon || colon == line || ++count > HEADERS_MAX) {
			snprintf(err, len, "--export-header-file %s: line %d: %s", path, lineno,
				 count > HEADERS_MAX ? "more than 32 headers" : "expected \"Name: value\"");
			return -EINVAL;
		}
		h = curl_slist_append(s->headers, line);
		if (!h)
			return -ENOMEM;
		s->headers = h;
	}
	return 0;
}

/* otlp+http(s)://, pyroscope+http(s)://, dir:PATH. */
static int parse_url(struct export_sink *s, const char *url, char *err, size_t len)
{
	static const struct {
		const char *prefix;
		enum export_kind kind;
	} kinds[] = {{"otlp+", EXPORT_OTLP}, {"pyroscope+", EXPORT_PYROSCOPE}};
	CURLU *u;
	CURLUcode rc;
	char *host = NULL;

	if (strlen(url) >= URL_MAX) {
		snprintf(err, len, "--to: the URL is longer than %d characters", URL_MAX - 1);
		return -EINVAL;
	}
	snprintf(s->url, sizeof(s->url), "%s", url);
	if (!strncmp(url, "dir:", 4)) {
		s->kind = EXPORT_DIR;
		if (!url[4]) {
			snprintf(err, len, "--to %s: dir: names no folder", url);
			return -EINVAL;
		}
		s->dir = strdup(url + 4);
		return s->dir ? 0 : -ENOMEM;
	}
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t pl = strlen(kinds[i].prefix);

		if (strncmp(url, kinds[i].prefix, pl))
			continue;
		s->kind = kinds[i].kind;
		if (strncmp(url + pl, "http://", 7) && strncmp(url + pl, "https://", 8))
			break;
		snprintf(s->base, sizeof(s->base), "%s", url + pl);
		u = curl_url();
		if (!u)
			return -ENOMEM;
		rc = curl_url_set(u, CURLUPART_URL, s->base, 0);
		if (!rc)
			rc = curl_url_get(u, CURLUPART_HOST, &host, 0);
		curl_free(host);
		curl_url_cleanup(u);
		if (rc) {
			snprintf(err, len, "--to %s: %s", url, curl_url_strerror(rc));
			return -EINVAL;
		}
		/* A base without a path takes the signal's own. */
		size_t bl = strlen(s->base);
		if (bl && s->base[bl - 1] == '/')
			s->base[--bl] = 0;
		s->has_path = strchr(strstr(s->base, "://") + 3, '/') != NULL;
		return 0;
	}
	snprintf(err, len,
		 "--to %s: expected otlp+http://HOST:PORT, pyroscope+http://HOST:PORT (or https), or dir:PATH", url);
	return -EINVAL;
}

static CURL *easy_for(struct export_sink *s, const char *url)
{
	CURL *c = curl_easy_init();

	if (!c)
		return NULL;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(s->o.timeout * 1000 / 2));
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(s->o.timeout * 1000));
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	if (s->cacert)
		curl_easy_setopt(c, CURLOPT_CAINFO, s->cacert);
	return c;
}

/* At the start, an endpoint that cannot be reached is said at once, not as drops later. */
static int check_reachable(struct export_sink *s, char *err, size_t len)
{
	CURL *c = easy_for(s, s->base);
	CURLcode rc;

	if (!c)
		return -ENOMEM;
	curl_easy_setopt(c, CURLOPT_CONNECT_ONLY, 1L);
	rc = curl_easy_perform(c);
	curl_easy_cleanup(c);
	if (rc) {
		snprintf(err, len, "--to %s: cannot reach it: %s", s->url, curl_easy_strerror(rc));
		return -ECONNREFUSED;
	}
	return 0;
}

/* ---- the sender ---- */

static size_t keep_body(char *data, size_t size, size_t n, void *ctx)
{
	char *buf = ctx;
	size_t have = strlen(buf), take = size * n;

	if (take > 255 - have)
		take = 255 - have;
	memcpy(buf + have, data, take);
	buf[have + take] = 0;
	return size * n;
}

enum send_result { SENT, RETRY, REJECTED };

/* Pyroscope's sample types, so that it aggregates in-use figures as averages. */
static const char pyroscope_types[] =
	"{\"inuse_space\":{\"units\":\"bytes\",\"aggregation\":\"average\",\"display-name\":\"inuse_space_bytes\"},"
	"\"inuse_objects\":{\"units\":\"objects\",\"aggregation\":\"average\",\"display-name\":\"inuse_objects_count\"},"
	"\"alloc_space\":{\"units\":\"bytes\",\"aggregation\":\"sum\",\"display-name\":\"alloc_space_bytes\"},"
	"\"alloc_objects\":{\"units\":\"objects\",\"aggregation\":\"sum\",\"display-name\":\"alloc_objects_count\"}}";

static enum send_result post(struct export_sink *s, const struct export_msg *m, char *why, size_t len)
{
	char body[256] = "";
	struct curl_slist *h = NULL, *all = NULL;
	curl_mime *mime = NULL;
	CURL *c = easy_for(s, m->url);
	CURLcode rc;
	long status = 0;
	enum send_result res;

	if (!c) {
		snprintf(why, len, "out of memory");
		return RETRY;
	}
	for (struct curl_slist *i = s->headers; i; i = i->next)
		all = curl_slist_append(all, i->data);
	if (m->pyroscope) {
		curl_mimepart *part;

		mime = curl_mime_init(c);
		part = curl_mime_addpart(mime);
		curl_mime_name(part, "profile");
		curl_mime_filename(part, "profile.pprof");
		curl_mime_type(part, "application/octet-stream");
		curl_mime_data(part, (const char *)m->body, m->len);
		part = curl_mime_addpart(mime);
		curl_mime_name(part, "sample_type_config");
		curl_mime_filename(part, "sample_type_config.json");
		curl_mime_type(part, "application/json");
		curl_mime_data(part, pyroscope_types, CURL_ZERO_TERMINATED);
		curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
	} else {
		h = curl_slist_append(all, "Content-Type: application/x-protobuf");
		all = h ? curl_slist_append(h, "Content-Encoding: gzip") : all;
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, m->body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)m->len);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, all);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, (void *)body);
	rc = curl_easy_perform(c);
	if (!rc)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (rc) {
		snprintf(why, len, "%s", curl_easy_strerror(rc));
		res = RETRY;
	} else if (status >= 200 && status < 300) {
		res = SENT;
	} else {
		/* Text out of a body: what a person can read of it. */
		for (char *p = body; *p; p++)
			if (!isprint((unsigned char)*p))
				*p = ' ';
		snprintf(why, len, "HTTP %ld%s%.200s", status, body[0] ? ": " : "", body);
		res = status == 408 || status == 429 || status >= 500 ? RETRY : REJECTED;
	}
	curl_mime_free(mime);
	curl_slist_free_all(all);
	curl_easy_cleanup(c);
	return res;
}

static struct timespec after(double seconds)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += (time_t)seconds;
	t.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
	if (t.tv_nsec >= 1000000000) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000;
	}
	return t;
}

static bool past(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

/* Sends the queue's oldest request until it goes, backing off from 0.25 s to backoff_max
 * while the destination fails; a request refused outright is dropped. When closing, gives
 * up at the deadline. */
static void *sender(void *arg)
{
	struct export_sink *s = arg;
	double backoff = 0.25;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct export_msg m;
		enum send_result res;
		char why[320];

		while (!s->n && !s->closing)
			pthread_cond_wait(&s->cond, &s->lock);
		if (!s->n || (s->closing && past(&s->deadline)))
			break;
		m = s->q[s->head];
		pthread_mutex_unlock(&s->lock);
		res = post(s, &m, why, sizeof(why));
		pthread_mutex_lock(&s->lock);
		if (res == RETRY) {
			struct timespec t = after(backoff);

			if (!s->failing)
				fprintf(stderr,
					"heapsnap-analyze: export: cannot send to %s: %s; retrying, up to %u requests kept "
					"meanwhile\n",
					s->url, why, s->o.queue);
			s->failing = true;
			s->st.retries++;
			while (!past(&t) && !(s->closing && past(&s->deadline)))
				pthread_cond_timedwait(&s->cond, &s->lock, s->closing ? &s->deadline : &t);
			backoff = backoff * 2 > s->backoff_max ? s->backoff_max : backoff * 2;
			continue;
		}
		backoff = 0.25;
		s->head = (s->head + 1) % s->o.queue;
		s->n--;
		if (res == SENT) {
			if (s->failing)
				fprintf(stderr, "heapsnap-analyze: export: %s answers again; %u requests queued to send\n",
					s->url, s->n);
			s->failing = false;
			s->st.requests_sent++;
			s->st.profiles_sent += m.profiles;
			s->st.bytes_sent += m.len;
		} else {
			fprintf(stderr, "heapsnap-analyze: export: %s refused the profiles of %u processes: %s\n", s->url,
				m.profiles, why);
			s->st.lost_rejected += m.profiles;
		}
		msg_free(&m);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Queues M, or drops it when the queue is full: the oldest are kept, as they wait in order. */
static int enqueue(struct export_sink *s, struct export_msg *m)
{
	pthread_mutex_lock(&s->lock);
	if (s->n == s->o.queue) {
		s->st.lost_profiles += m->profiles;
		fprintf(stderr,
			"heapsnap-analyze: export: %u requests wait for %s already: dropped the profiles of %u processes "
			"(lost.export_profiles %" PRIu64 ")\n",
			s->n, s->url, m->profiles, s->st.lost_profiles);
		pthread_mutex_unlock(&s->lock);
		msg_free(m);
		return 0;
	}
	s->q[(s->head + s->n) % s->o.queue] = *m;
	s->n++;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* ---- encodings ---- */

/* Process I's profile of the interval as pprof (gzip'd, as pprof writes it). */
static int pprof_of(const struct export_interval *iv, uint32_t i, uint8_t **out, size_t *len)
{
	uint32_t pid = iv->pids[i];
	struct profile view;
	char desc[96];
	struct pprof_opts po = {.no_symbolize = iv->no_symbolize, .pid = pid, .snapshot_desc = desc,
				.time_ns = (int64_t)iv->start_ns, .duration_ns = (int64_t)(iv->end_ns - iv->start_ns)};
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	int err;

	if (!f)
		return -ENOMEM;
	snprintf(desc, sizeof(desc), "export interval %u: in use at its end, allocated during it (%.3f s)", iv->seq,
		 (double)(iv->end_ns - iv->start_ns) / 1e9);
	export__process_view(iv, i, &view);
	err = pprof_write_profile(&view, &po, f);
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (err) {
		free(buf);
		return err;
	}
	*out = (uint8_t *)buf;
	*len = n;
	return 0;
}

/* A name's characters that a file name or a label takes as they are; others become _. */
static void tame(char *dst, size_t len, const char *src)
{
	size_t i = 0;

	for (; src[i] && i + 1 < len; i++)
		dst[i] = isalnum((unsigned char)src[i]) || strchr("._-", src[i]) ? src[i] : '_';
	dst[i] = 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* --keep: the folder's oldest profiles of ours past N removed (names sort by time). */
static void dir_rotate(struct export_sink *s)
{
	DIR *d = opendir(s->dir);
	char **names = NULL;
	size_t nr = 0, cap = 0;
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);

		if (strncmp(e->d_name, DIR_PREFIX, strlen(DIR_PREFIX)) || l < strlen(DIR_SUFFIX) ||
		    strcmp(e->d_name + l - strlen(DIR_SUFFIX), DIR_SUFFIX))
			continue;
		if (nr == cap) {
			char **g = realloc(names, sizeof(*names) * (cap ? cap * 2 : 64));

			if (!g)
				break;
			names = g;
			cap = cap ? cap * 2 : 64;
		}
		if (!(names[nr] = strdup(e->d_name)))
			break;
		nr++;
	}
	qsort(names, nr, sizeof(*names), name_cmp);
	for (size_t i = 0; nr > s->o.keep && i < nr - s->o.keep; i++)
		if (unlinkat(dirfd(d), names[i], 0) && errno != ENOENT)
			fprintf(stderr, "heapsnap-analyze: export: cannot remove %s/%s: %s\n", s->dir, names[i],
				strerror(errno));
	for (size_t i = 0; i < nr; i++)
		free(names[i]);
	free(names);
	closedir(d);
}

static int dir_put(struct export_sink *s, const struct export_interval *iv)
{
	for (uint32_t i = 0; i < iv->nr_pids; i++) {
		const struct process *pr = replay__process(iv->p->r, iv->pids[i]);
		char path[PATH_MAX], svc[64], stamp[32];
		time_t t = (time_t)(iv->end_ns / 1000000000);
		struct outfile *f;
		const char *why = NULL;
		uint8_t *buf;
		size_t len;
		struct tm tm;
		int err;

		if (!pr)
			continue;
		gmtime_r(&t, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
		tame(svc, sizeof(svc), export__service(iv, pr));
		snprintf(path, sizeof(path), "%s/" DIR_PREFIX "%s-%06u-%s-%u" DIR_SUFFIX, s->dir, stamp, iv->seq, svc,
			 pr->pid);
		err = pprof_of(iv, i, &buf, &len);
		if (err)
			return err;
		err = outfile__open(path, &f, &why);
		if (!err && write(outfile__fd(f), buf, len) != (ssize_t)len)
			err = -errno ? -errno : -EIO;
		if (!err)
			err = outfile__publish(f);
		free(buf);
		outfile__free(f);
		if (err) {
			fprintf(stderr, "heapsnap-analyze: export: cannot write %s: %s\n", path, why ? why : strerror(-err));
			s->st.lost_profiles++;
			continue;
		}
		s->st.profiles_sent++;
		s->st.bytes_sent += len;
	}
	if (s->o.keep)
		dir_rotate(s);
	return 0;
}

static int otlp_put(struct export_sink *s, const struct export_interval *iv)
{
	struct export_msg m = {.profiles = iv->nr_pids};
	uint8_t *raw;
	size_t len;
	int err = otlp__encode(iv, &raw, &len);

	if (err)
		return err;
	err = gzip_compress(raw, len, &m.body, &m.len);
	free(raw);
	if (!err && asprintf(&m.url, "%s%s", s->base, s->has_path ? "" : "/v1development/profiles") < 0)
		err = -ENOMEM;
	if (err) {
		msg_free(&m);
		return err;
	}
	return enqueue(s, &m);
}

/* One /ingest request per process: NAME{labels}, from and until in seconds. */
static int pyroscope_put(struct export_sink *s, const struct export_interval *iv)
{
	for (uint32_t i = 0; i < iv->nr_pids; i++) {
		const struct process *pr = replay__process(iv->p->r, iv->pids[i]);
		struct export_msg m = {.profiles = 1, .pyroscope = true};
		char name[512], svc[128], host[128];
		char *esc;
		int err;

		if (!pr)
			continue;
		tame(svc, sizeof(svc), export__service(iv, pr));
		tame(host, sizeof(host), iv->p->r->hostname ? iv->p->r->hostname : "");
		snprintf(name, sizeof(name), "%s{hostname=%s,pid=%u}", svc, host, pr->pid);
		esc = curl_easy_escape(NULL, name, 0);
		if (!esc)
			return -ENOMEM;
		err = pprof_of(iv, i, &m.body, &m.len);
		if (!err && asprintf(&m.url, "%s/ingest?name=%s&from=%" PRIu64 "&until=%" PRIu64 "&format=pprof&spyName=heapsnap",
				     s->base, esc, iv->start_ns / 1000000000, (iv->end_ns + 999999999) / 1000000000) < 0)
			err = -ENOMEM;
		curl_free(esc);
		if (err) {
			msg_free(&m);
			return err;
		}
		enqueue(s, &m);
	}
	return 0;
}

int export_sink__put(struct export_sink *s, const struct export_interval *iv)
{
	s->st.intervals++;
	if (!iv->nr_pids)
		return 0;
	switch (s->kind) {
	case EXPORT_DIR:
		return dir_put(s, iv);
	case EXPORT_OTLP:
		return otlp_put(s, iv);
	case EXPORT_PYROSCOPE:
		return pyroscope_put(s, iv);
	}
	return -EINVAL;
}

int export_sink__open(struct export_sink **out, const struct export_sink_opts *o, char *err, size_t len)
{
	struct export_sink *s = calloc(1, sizeof(*s));
	int ret;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->o = *o;
	if (!s->o.queue)
		s->o.queue = 64;
	if (s->o.timeout <= 0)
		s->o.timeout = 10;
	s->backoff_max = o->backoff_max > 0 ? o->backoff_max : 30;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	ret = parse_url(s, o->url, err, len);
	if (!ret && s->kind == EXPORT_DIR) {
		struct stat st;

		if (mkdir(s->dir, 0700) && errno != EEXIST)
			ret = -errno;
		else if (lstat(s->dir, &st))
			ret = -errno;
		else if (!S_ISDIR(st.st_mode))
			ret = -ENOTDIR;
		if (ret)
			snprintf(err, len, "--to %s: %s", o->url, strerror(-ret));
	} else if (!ret) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		if (o->cacert && !(s->cacert = strdup(o->cacert)))
			ret = -ENOMEM;
		if (!ret && o->header_file)
			ret = read_headers(s, o->header_file, err, len);
		if (!ret)
			ret = check_reachable(s, err, len);
		if (!ret && !(s->q = calloc(s->o.queue, sizeof(*s->q))))
			ret = -ENOMEM;
		if (!ret) {
			ret = -pthread_create(&s->thread, NULL, sender, s);
			s->thread_on = !ret;
		}
	}
	if (ret) {
		if (ret == -ENOMEM && !*err)
			snprintf(err, len, "--to %s: out of memory", o->url);
		export_sink__free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void export_sink__drain(struct export_sink *s)
{
	if (!s || !s->thread_on)
		return;
	pthread_mutex_lock(&s->lock);
	s->closing = true;
	s->deadline = after(s->o.timeout);
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	s->thread_on = false;
	while (s->n) {
		struct export_msg *m = &s->q[s->head];

		s->st.lost_profiles += m->profiles;
		msg_free(m);
		s->head = (s->head + 1) % s->o.queue;
		s->n--;
	}
}

void export_sink__stats(struct export_sink *s, struct export_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->st;
	pthread_mutex_unlock(&s->lock);
}

void export_sink__free(struct export_sink *s)
{
	if (!s)
		return;
	export_sink__drain(s);
	for (uint32_t i = 0; s->q && i < s->n; i++)
		msg_free(&s->q[(s->head + i) % s->o.queue]);
	free(s->q);
	curl_slist_free_all(s->headers);
	free(s->cacert);
	free(s->dir);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}
