// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdbool.h>

#include "procfs.h"

static int read_maps(pid_t pid, bool exec_only, struct proc_map **out, int *nr)
{
	char path[64], *line = NULL;
	struct proc_map *v = NULL;
	size_t cap = 0;
	int n = 0, err = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		uint64_t start, end, off, inode;
		unsigned int maj, min;
		char perms[8];
		int pos = 0;
		char *p;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n", &start, &end, perms,
			   &off, &maj, &min, &inode, &pos) < 7)
			continue;
		if ((exec_only && perms[2] != 'x') || !pos || line[pos] != '/')
			continue;
		p = line + pos;
		p[strcspn(p, "\n")] = 0;
		struct proc_map *nv = realloc(v, sizeof(*v) * (size_t)(n + 1));

		if (!nv) {
			err = -ENOMEM;
			break;
		}
		v = nv;
		v[n] = (struct proc_map){.start = start, .end = end, .offset = off, .inode = inode, .dev_major = maj,
					 .dev_minor = min, .path = strdup(p)};
		memcpy(v[n].perms, perms, 4);
		n++;
	}
	free(line);
	fclose(f);
	if (err) {
		proc_maps_free(v, n);
		return err;
	}
	*out = v;
	*nr = n;
	return 0;
}

int proc_read_maps(pid_t pid, struct proc_map **out, int *nr)
{
	return read_maps(pid, true, out, nr);
}

int proc_read_file_maps(pid_t pid, struct proc_map **out, int *nr)
{
	return read_maps(pid, false, out, nr);
}

void proc_maps_free(struct proc_map *m, int nr)
{
	for (int i = 0; i < nr; i++)
		free(m[i].path);
	free(m);
}

static char *read_small(const char *path, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf) {
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	for (;;) {
		ssize_t r = read(fd, buf + n, cap - n);

		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == cap) {
			char *nb = realloc(buf, cap * 2 + 1);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
	}
	close(fd);
	buf[n] = 0;
	*len = n;
	return buf;
}

char *proc_read_string(pid_t pid, const char *file)
{
	char path[96];
	size_t len;
	char *s;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, file);
	s = read_small(path, &len);
	if (!s)
		return NULL;
	while (len && (s[len - 1] == '\n' || s[len - 1] == 0))
		s[--len] = 0;
	for (size_t i = 0; i < len; i++)
		if (s[i] == 0)
			s[i] = ' ';
	return s;
}

char *proc_exe(pid_t pid)
{
	char path[64], buf[4096];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n < 0)
		return NULL;
	buf[n] = 0;
	return strdup(buf);
}

pid_t proc_ppid(pid_t pid)
{
	char *s = proc_read_string(pid, "stat"), *p;
	int ppid = 0;

	if (!s)
		return 0;
	/* comm may hold spaces and parentheses: parse after the last ')'. */
	p = strrchr(s, ')');
	if (p)
		sscanf(p + 1, " %*c %d", &ppid);
	free(s);
	return ppid;
}

char proc_state(pid_t pid)
{
	char *s = proc_read_string(pid, "stat"), *p, st = 0;

	if (!s)
		return 0;
	/* comm may hold spaces and parentheses: the state follows the last ')'. */
	p = strrchr(s, ')');
	if (p && p[1] == ' ' && p[2])
		st = p[2];
	free(s);
	return st;
}

bool proc_is_zombie(pid_t pid)
{
	char st = proc_state(pid);

	return st == 'Z' || st == 'X';
}

int proc_rss(pid_t pid, uint64_t *rss, uint64_t *vm)
{
	char path[64];
	unsigned long long size, res;
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/proc/%d/statm", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	ok = fscanf(f, "%llu %llu", &size, &res) == 2;
	fclose(f);
	if (!ok)
		return -EINVAL;
	*vm = size * (uint64_t)sysconf(_SC_PAGESIZE);
	*rss = res * (uint64_t)sysconf(_SC_PAGESIZE);
	return 0;
}

char *proc_thread_comm(pid_t pid, pid_t tid)
{
	char file[64];

	snprintf(file, sizeof(file), "task/%d/comm", tid);
	return proc_read_string(pid, file);
}

int proc_for_each_thread(pid_t pid, void (*cb)(pid_t tid, void *ctx), void *ctx)
{
	char path[64];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((d = readdir(dir)))
		if (d->d_name[0] >= '0' && d->d_name[0] <= '9')
			cb(atoi(d->d_name), ctx);
	closedir(dir);
	return 0;
}

struct descendants {
	pid_t *q, pid;
	int n, max;
};

/* Each thread has its own list of the children it forked. */
static void thread_children(pid_t tid, void *ctx)
{
	struct descendants *w = ctx;
	char file[64], *c, *p, *end;

	snprintf(file, sizeof(file), "task/%d/children", (int)tid);
	c = proc_read_string(w->pid, file);
	for (p = c; p && w->n < w->max; p = end) {
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		if (v > 0 && v <= INT_MAX)
			w->q[w->n++] = (pid_t)v;
	}
	free(c);
}

int proc_for_each_descendant(pid_t root, int max, void (*cb)(pid_t pid, pid_t ppid, void *ctx), void *ctx)
{
	struct descendants w = {.max = max + 1};
	pid_t *parent;
	int err;

	w.q = malloc(sizeof(*w.q) * (size_t)w.max);
	parent = malloc(sizeof(*parent) * (size_t)w.max);
	if (!w.q || !parent) {
		free(w.q);
		free(parent);
		return -ENOMEM;
	}
	w.q[w.n++] = root;
	for (int i = 0; i < w.n; i++) {
		int from = w.n;

		w.pid = w.q[i];
		if (i)
			cb(w.pid, parent[i], ctx);
		err = proc_for_each_thread(w.pid, thread_children, &w);
		if (err && !i) {
			free(w.q);
			free(parent);
			return err;
		}
		for (int k = from; k < w.n; k++)
			parent[k] = w.pid;
	}
	free(w.q);
	free(parent);
	return w.n - 1;
}

static void visit_none(pid_t pid, pid_t ppid, void *ctx)
{
}

int proc_count_descendants(pid_t root)
{
	return proc_for_each_descendant(root, PROC_DESCENDANTS_MAX, visit_none, NULL);
}

/* The file mapped at M in PID, open for reading: through map_files (the very file mapped, even
 * if replaced or deleted since), else by its name as PID sees it, else by its name here. Only a
 * regular file is returned, and by name only one with the mapping's inode (the device is not
 * compared: overlayfs reports the lower file's in maps and its own to fstat): a name replaced
 * by a FIFO, a device or another file gives -ESTALE, and nothing is opened through a final
 * symlink or waited on. */
int proc_open_mapped(pid_t pid, const struct proc_map *m)
{
	char path[4200];
	bool by_name = false;
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, m->start, m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		by_name = true;
		snprintf(path, sizeof(path), "/proc/%d/root%s", pid, m->path);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	}
	if (fd < 0)
		fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (by_name && (uint64_t)st.st_ino != m->inode)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

bool same_file(const char *path, uint64_t dev, uint64_t ino)
{
	struct stat st;

	return !stat(path, &st) && (uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == ino;
}

/* The initial PID namespace's inode, fixed by the kernel (PROC_PID_INIT_INO). */
#define PID_NS_INIT_INO 0xEFFFFFFCu

int proc_pid_ns(uint64_t *dev, uint64_t *ino)
{
	char buf[32];
	struct stat st;
	ssize_t n;
	long self;

	if (stat("/proc/self/ns/pid", &st))
		return -errno;
	*dev = (uint64_t)st.st_dev;
	*ino = st.st_ino == PID_NS_INIT_INO ? 0 : (uint64_t)st.st_ino;
	/* /proc numbers processes as the namespace it was mounted in does: another one's (the
	 * host's, after `unshare -p` without --mount-proc) would have the recorder read the maps
	 * of whichever process has the pid there. */
	n = readlink("/proc/self", buf, sizeof(buf) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -EINVAL;
	buf[n] = 0;
	self = strtol(buf, NULL, 10);
	return self == (long)getpid() ? 0 : -EXDEV;
}
