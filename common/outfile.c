// SPDX-License-Identifier: MIT
/* Safe output files: see outfile.h. The checks on the name are made with lstat and the file
 * itself is only ever created with O_EXCL (or O_TMPFILE) and put in place by rename, which
 * replaces a directory entry and never follows one: a link planted after the check is
 * replaced, not written through. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "outfile.h"

struct outfile {
	int fd;
	char *path;
	char *dir;     /* PATH's directory */
	char *named;   /* the exclusive temporary name, when O_TMPFILE was not available */
	bool in_place; /* a device or FIFO, written directly */
	bool published;
};

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/* Makes the file at a fresh name: MAKE returns 0, or -EEXIST for a name taken. */
typedef int (*make_fn)(struct outfile *f, const char *name);

/* A name in PATH's directory nobody else can have made: .BASE.PID.HEX, retried on a clash,
 * and kept in f->named once MAKE has made it. */
static int claim_name(struct outfile *f, make_fn make)
{
	const char *base = strrchr(f->path, '/');
	struct timespec ts;
	char *name;
	int err = -EEXIST;

	base = base ? base + 1 : f->path;
	for (int tries = 0; tries < 100 && err == -EEXIST; tries++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if (asprintf(&name, "%s/.%s.%d.%lx", f->dir, base, getpid(),
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
	f->fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	return f->fd >= 0 ? 0 : -errno;
}

/* An O_TMPFILE file gets a name by linkat, which never replaces one. */
static int link_tmpfile(struct outfile *f, const char *name)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f->fd);
	return linkat(AT_FDCWD, proc, AT_FDCWD, name, AT_SYMLINK_FOLLOW) ? -errno : 0;
}

int outfile__open(const char *path, struct outfile **out, const char **why)
{
	struct outfile *f;
	struct stat st;
	int err;

	*why = NULL;
	if (!lstat(path, &st)) {
		if (S_ISLNK(st.st_mode)) {
			*why = "it is a symbolic link; refusing to write through it";
			return -ELOOP;
		}
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		if (S_ISREG(st.st_mode) && st.st_uid != geteuid()) {
			*why = "it belongs to another user; refusing to replace it";
			return -EPERM;
		}
	} else if (errno != ENOENT) {
		return -errno;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->fd = -1;
	f->path = strdup(path);
	f->dir = dir_of(path);
	if (!f->path || !f->dir) {
		outfile__free(f);
		return -ENOMEM;
	}
	if (!lstat(path, &st) && !S_ISREG(st.st_mode)) {
		/* A device or FIFO: written where it is, as the user asked; O_NOFOLLOW in case it
		 * became a link since. */
		f->fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
		if (f->fd < 0) {
			err = -errno;
			outfile__free(f);
			return err;
		}
		if (fstat(f->fd, &st) || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
			outfile__free(f);
			return -EAGAIN;
		}
		f->in_place = f->published = true;
		*out = f;
		return 0;
	}
	/* Unnamed until published: a crash leaves nothing behind. */
	f->fd = open(f->dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
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
	/* Checked again: the name may have been taken since the open. rename() would replace a
	 * link or another user's file rather than write through it, but it is not ours to
	 * replace. */
	if (!lstat(f->path, &st) && (S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode) || st.st_uid != geteuid()))
		return S_ISDIR(st.st_mode) ? -EISDIR : S_ISLNK(st.st_mode) ? -ELOOP : -EPERM;
	/* An unnamed file is linked at a fresh name first; the rename then puts it in place
	 * atomically. */
	if (!f->named && (err = claim_name(f, link_tmpfile)))
		return err;
	if (rename(f->named, f->path)) {
		err = -errno;
		unlink(f->named);
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
		unlink(f->named);
	free(f->named);
	free(f->path);
	free(f->dir);
	free(f);
}
