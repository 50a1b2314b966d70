// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>

#include "buildid.h"

static int note_build_id(Elf_Data *data, uint8_t *out, size_t outlen)
{
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp((char *)data->d_buf + name_off, "GNU", 4) && nh.n_descsz > 0) {
			size_t n = nh.n_descsz < outlen ? nh.n_descsz : outlen;

			memcpy(out, (char *)data->d_buf + desc_off, n);
			return (int)n;
		}
	}
	return 0;
}

int hs_read_build_id_fd(int fd, uint8_t *out, size_t outlen)
{
	size_t phnum;
	int ret = 0;
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -EINVAL;
	if (elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &phnum)) {
		elf_end(elf);
		return -ENOEXEC;
	}
	for (size_t i = 0; i < phnum && !ret; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (d)
			ret = note_build_id(d, out, outlen);
	}
	if (!ret) {
		/* Files without program headers (separate debug files) keep the note in a section. */
		Elf_Scn *scn = NULL;

		while (!ret && (scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			Elf_Data *d;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
				continue;
			d = elf_getdata(scn, NULL);
			if (d)
				ret = note_build_id(d, out, outlen);
		}
	}
	elf_end(elf);
	return ret;
}

int hs_open_elf(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;

	if (fd < 0)
		return -errno;
	/* Regular files only: a FIFO or device named by a crafted recording would block or
	 * have effects; /proc files say size 0 and are no ELF either. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < 64) {
		int err = S_ISREG(st.st_mode) ? -ENOEXEC : -EINVAL;

		close(fd);
		return err;
	}
	return fd;
}

int hs_read_build_id(const char *path, uint8_t *out, size_t outlen)
{
	int fd = hs_open_elf(path);
	int ret;

	if (fd < 0)
		return -errno;
	ret = hs_read_build_id_fd(fd, out, outlen);
	close(fd);
	return ret;
}

char *hs_hex(const uint8_t *p, size_t len, char *buf)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		buf[2 * i] = digits[p[i] >> 4];
		buf[2 * i + 1] = digits[p[i] & 15];
	}
	buf[2 * len] = 0;
	return buf;
}
