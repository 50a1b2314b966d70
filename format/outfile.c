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

/* A name in DIR nobody else can have made: created with O_EXCL, retried on a clash. */
static int make_named_temp(struct outfile *f)
{
	const char *base = strrchr(f->path, '/');
	struct timespec ts;

	base = base ? base + 1 : f->path;
	for (int tries = 0; tries < 100; tries++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		free(f->named);
		if (asprintf(&f->named, "%s/.%s.%d.%lx", f->dir, base, getpid(),
			     (unsigned long)(ts.tv_nsec ^ ((unsigned long)tries << 20))) < 0) {
			f->named = NULL;
			return -ENOMEM;
		}
		f->fd = open(f->named, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (f->fd >= 0)
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
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
		err = make_named_temp(f);
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
	char proc[64];
	int err;

	if (f->published)
		return 0;
	/* Checked again: the name may have been taken since the open. rename() would replace a
	 * link or another user's file rather than write through it, but it is not ours to
	 * replace. */
	if (!lstat(f->path, &st) && (S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode) || st.st_uid != geteuid()))
		return S_ISDIR(st.st_mode) ? -EISDIR : S_ISLNK(st.st_mode) ? -ELOOP : -EPERM;
	if (!f->named) {
		/* An O_TMPFILE file gets a unique name first (linkat never replaces), then the
		 * rename puts it in place atomically. */
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f->fd);
		for (int tries = 0;; tries++) {
			struct timespec ts;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			free(f->named);
			if (asprintf(&f->named, "%s/.heapsnap.%d.%lx", f->dir, getpid(),
				     (unsigned long)(ts.tv_nsec ^ ((unsigned long)tries << 20))) < 0) {
				f->named = NULL;
				return -ENOMEM;
			}
			if (!linkat(AT_FDCWD, proc, AT_FDCWD, f->named, AT_SYMLINK_FOLLOW))
				break;
			err = -errno;
			free(f->named);
			f->named = NULL;
			if (err != -EEXIST || tries >= 100)
				return err;
		}
	}
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
