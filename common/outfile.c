// SPDX-License-Identifier: MIT
/* Safe output files: see outfile.h. The directory is opened once and every later step is
 * made relative to it (fstatat, openat, linkat, renameat), so a directory renamed or swapped
 * for a link meanwhile cannot move the file elsewhere. The checks on the name are made
 * without following it, and the file itself is only ever created with O_EXCL (or O_TMPFILE)
 * and put in place by rename, which replaces a directory entry and never follows one: a link
 * planted after the check is replaced, not written through. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "outfile.h"

/* How long a FIFO named for output may go without a reader. */
#define FIFO_WAIT_S 10
#define STR_(x) #x
#define STR(x) STR_(x)

struct outfile {
	int fd;
	int dirfd;     /* PATH's directory, opened once */
	char *base;    /* PATH's last component, in dirfd */
	char *named;   /* the exclusive temporary name in dirfd, until published */
	bool in_place; /* a device or FIFO, written directly */
	bool published;
};

/* Makes the file at a fresh name: MAKE returns 0, or -EEXIST for a name taken. */
typedef int (*make_fn)(struct outfile *f, const char *name);

/* A name in PATH's directory nobody else can have made: .heapsnap.PID.HEX (short whatever
 * PATH's own name, which may be as long as a name can be), retried on a clash, and kept in
 * f->named once MAKE has made it. */
static int claim_name(struct outfile *f, make_fn make)
{
	struct timespec ts;
	char *name;
	int err = -EEXIST;

	for (int tries = 0; tries < 100 && err == -EEXIST; tries++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if (asprintf(&name, ".heapsnap.%d.%lx", getpid(),
			     (unsigned long)(ts.tv_nsec ^ ((unsigned long)tries << 20))) < 0)
			return -ENOMEM;
		err = make(f, name);
		if (!err) {
			f->named = name;
			return 0;
		}
		free(name);
	}
	return err;
}

static int create_excl(struct outfile *f, const char *name)
{
	f->fd = openat(f->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	return f->fd >= 0 ? 0 : -errno;
}

/* An O_TMPFILE file gets a name by linkat, which never replaces one. */
static int link_tmpfile(struct outfile *f, const char *name)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f->fd);
	return linkat(AT_FDCWD, proc, f->dirfd, name, AT_SYMLINK_FOLLOW) ? -errno : 0;
}

/* Whether the existing ST at the name may be written: 0, or -errno (and WHY) for a link, a
 * directory, a regular file or FIFO of another user (a FIFO is a line to whoever made it). */
static int refuse(const struct stat *st, const char **why)
{
	if (S_ISLNK(st->st_mode)) {
		*why = "it is a symbolic link; refusing to write through it";
		return -ELOOP;
	}
	if (S_ISDIR(st->st_mode))
		return -EISDIR;
	if ((S_ISREG(st->st_mode) || S_ISFIFO(st->st_mode)) && st->st_uid != geteuid()) {
		*why = S_ISREG(st->st_mode) ? "it belongs to another user; refusing to replace it"
					    : "it is a FIFO of another user; refusing to write into it";
		return -EPERM;
	}
	return 0;
}

/* A device or FIFO the user named: written where it is, and checked to be what was looked
 * at. Opened without blocking: a FIFO nobody reads would hold a blocking open forever, and
 * the recorder's signals with it (they are blocked, for its signalfd). A reader is waited
 * for a while, as a script that starts one just before may need. */
static int open_in_place(struct outfile *f, const struct stat *seen, const char **why)
{
	struct stat st;
	int fl;

	for (int tries = 0;; tries++) {
		f->fd = openat(f->dirfd, f->base, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (f->fd >= 0)
			break;
		if (errno != ENXIO || !S_ISFIFO(seen->st_mode))
			return -errno;
		if (tries == FIFO_WAIT_S * 100) {
			*why = "it is a FIFO that no process opened for reading within " STR(FIFO_WAIT_S) " s";
			return -ENXIO;
		}
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
	if (fstat(f->fd, &st) || st.st_dev != seen->st_dev || st.st_ino != seen->st_ino)
		return -EAGAIN; /* replaced since it was looked at */
	if ((fl = fcntl(f->fd, F_GETFL)) < 0 || fcntl(f->fd, F_SETFL, fl & ~O_NONBLOCK))
		return -errno;
	f->in_place = f->published = true;
	return 0;
}

/* /dev/stdout and its aliases are links to whatever the shell opened as our fd 1 (a pipe, a
 * file it created, a terminal): that descriptor is written, a duplicate of it, and no link
 * is followed. So is /dev/fd/N or /proc/self/fd/N for another N, a descriptor this process
 * holds (heapsnap-record --export's pipe). Any other link is still refused. Returns the
 * descriptor, or -1. */
static int names_fd(const char *path)
{
	const char *num = !strncmp(path, "/dev/fd/", 8) ? path + 8 : !strncmp(path, "/proc/self/fd/", 14) ? path + 14 : NULL;
	char *end;
	long v;

	if (!strcmp(path, "/dev/stdout"))
		return 1;
	if (!num || !*num || *num == '-' || *num == '+')
		return -1;
	v = strtol(num, &end, 10);
	return *end || v < 0 || v > 1 << 20 ? -1 : (int)v;
}

static int open_fd(struct outfile *f, int fd, const char **why)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY) {
		if (fd == 1)
			*why = fl < 0 ? "standard output is closed" : "standard output is not open for writing";
		else
			*why = fl < 0 ? "that descriptor is not open" : "that descriptor is not open for writing";
		return -EBADF;
	}
	f->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (f->fd < 0)
		return -errno;
	f->in_place = f->published = true;
	return 0;
}

int outfile__open(const char *path, struct outfile **out, const char **why)
{
	const char *slash = strrchr(path, '/');
	struct outfile *f;
	struct stat st;
	char *dir;
	int err;

	*why = NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->fd = f->dirfd = -1;
	if (names_fd(path) >= 0) {
		err = open_fd(f, names_fd(path), why);
		if (err) {
			outfile__free(f);
			return err;
		}
		*out = f;
		return 0;
	}
	f->base = strdup(slash ? slash + 1 : path);
	dir = !slash ? strdup(".") : slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
	if (!f->base || !dir) {
		free(dir);
		outfile__free(f);
		return -ENOMEM;
	}
	f->dirfd = open(dir, O_DIRECTORY | O_PATH | O_CLOEXEC);
	err = f->dirfd < 0 ? -errno : 0;
	free(dir);
	if (!err && (!*f->base || !strcmp(f->base, ".") || !strcmp(f->base, "..")))
		err = -EISDIR;
	if (!err && !fstatat(f->dirfd, f->base, &st, AT_SYMLINK_NOFOLLOW)) {
		err = refuse(&st, why);
		if (!err && !S_ISREG(st.st_mode))
			err = open_in_place(f, &st, why);
	} else if (!err && errno != ENOENT) {
		err = -errno;
	}
	if (err) {
		outfile__free(f);
		return err;
	}
	if (f->in_place) {
		*out = f;
		return 0;
	}
	/* Unnamed until published: a crash leaves nothing behind. */
	f->fd = openat(f->dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (f->fd < 0) {
		err = claim_name(f, create_excl);
		if (err) {
			outfile__free(f);
			return err;
		}
	}
	*out = f;
	return 0;
}

int outfile__fd(const struct outfile *f)
{
	return f->fd;
}

bool outfile__published(const struct outfile *f)
{
	return f->published;
}

int outfile__publish(struct outfile *f)
{
	struct stat st;
	int err;

	if (f->published)
		return 0;
	/* Checked again, as the open checked it: the name may have been taken since. And more
	 * strictly: renameat() would replace a link, or anything of another user's (a device
	 * the open would have written in place), rather than write through it, and none of it
	 * is ours to replace. */
	if (!fstatat(f->dirfd, f->base, &st, AT_SYMLINK_NOFOLLOW)) {
		const char *why;

		if ((err = refuse(&st, &why)))
			return err;
		if (st.st_uid != geteuid())
			return -EPERM;
	}
	/* An unnamed file is linked at a fresh name first; the rename then puts it in place
	 * atomically. */
	if (!f->named && (err = claim_name(f, link_tmpfile)))
		return err;
	if (renameat(f->dirfd, f->named, f->dirfd, f->base)) {
		err = -errno;
		unlinkat(f->dirfd, f->named, 0);
		free(f->named);
		f->named = NULL;
		return err;
	}
	free(f->named);
	f->named = NULL;
	f->published = true;
	return 0;
}

void outfile__free(struct outfile *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	if (f->named && !f->published)
		unlinkat(f->dirfd, f->named, 0);
	if (f->dirfd >= 0)
		close(f->dirfd);
	free(f->named);
	free(f->base);
	free(f);
}
