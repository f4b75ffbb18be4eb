// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * Key files (see xina_keyfile.h).  The checks are those of ssh for a
 * private key: a regular file, owned by nobody else than the reader or
 * root, with no permission for group or others.  The file is opened
 * without following a symbolic link in its last component, and checked
 * on the open descriptor, so that it cannot be swapped between the check
 * and the read.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xina_keyfile.h"

#define KEYFILE_LEN	(2 * XINA_SECRET_BYTES + 1)	/* digits, newline */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int keyfile_check(int fd, const char *path, char *err, size_t errlen)
{
	struct stat st;
	int ret;

	if (fstat(fd, &st)) {
		ret = -errno;
		snprintf(err, errlen, "key file %s: %s", path, strerror(-ret));
		return ret;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "key file %s is not a regular file",
			 path);
		return -EINVAL;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen,
			 "key file %s is accessible by group or others (mode %04o): it must be 0600 or stricter (chmod 600 %s)",
			 path, (unsigned int)(st.st_mode & 07777), path);
		return -EPERM;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(err, errlen,
			 "key file %s belongs to uid %u, neither to this user (%u) nor to root",
			 path, (unsigned int)st.st_uid,
			 (unsigned int)geteuid());
		return -EPERM;
	}
	return 0;
}

int xina_keyfile_read(const char *path, uint8_t secret[XINA_SECRET_BYTES],
		      char *err, size_t errlen)
{
	char buf[KEYFILE_LEN + 1];
	int fd, ret, i, hi, lo;
	ssize_t n;

	/* O_NONBLOCK: a FIFO would block the open; refused just below */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY |
		  O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "key file %s: %s%s", path,
			 strerror(-ret),
			 ret == -ELOOP ? " (a symbolic link is not followed)" :
			 "");
		return ret;
	}
	ret = keyfile_check(fd, path, err, errlen);
	if (ret)
		goto out;
	n = read(fd, buf, sizeof(buf));
	if (n < 0) {
		ret = -errno;
		snprintf(err, errlen, "key file %s: %s", path, strerror(-ret));
		goto out;
	}
	ret = -EINVAL;
	if (n != KEYFILE_LEN || buf[KEYFILE_LEN - 1] != '\n')
		goto bad;
	for (i = 0; i < XINA_SECRET_BYTES; i++) {
		hi = hexval(buf[2 * i]);
		lo = hexval(buf[2 * i + 1]);
		if (hi < 0 || lo < 0)
			goto bad;
		secret[i] = hi << 4 | lo;
	}
	ret = 0;
	goto out;
bad:
	snprintf(err, errlen,
		 "key file %s does not hold a key: it must be one line of %d lowercase hexadecimal digits ('xinactl genkey FILE' writes one)",
		 path, 2 * XINA_SECRET_BYTES);
out:
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	return ret;
}

int xina_keyfile_create(const char *path,
			uint8_t secret[XINA_SECRET_BYTES], char *err,
			size_t errlen)
{
	static const char digits[] = "0123456789abcdef";
	char buf[KEYFILE_LEN];
	int fd, ret, i;
	ssize_t n;

	if (getrandom(secret, XINA_SECRET_BYTES, 0) != XINA_SECRET_BYTES) {
		ret = -errno;
		snprintf(err, errlen, "getrandom: %s", strerror(-ret));
		return ret;
	}
	for (i = 0; i < XINA_SECRET_BYTES; i++) {
		buf[2 * i] = digits[secret[i] >> 4];
		buf[2 * i + 1] = digits[secret[i] & 15];
	}
	buf[KEYFILE_LEN - 1] = '\n';
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "key file %s: %s", path, strerror(-ret));
		goto out;
	}
	/* 0600 whatever the umask left of it */
	n = fchmod(fd, 0600) ? -1 : write(fd, buf, sizeof(buf));
	if (n != (ssize_t)sizeof(buf) || fsync(fd)) {
		ret = n < 0 ? -errno : -EIO;
		snprintf(err, errlen, "key file %s: cannot write it: %s",
			 path, strerror(-ret));
		close(fd);
		unlink(path);
		goto out;
	}
	ret = close(fd) ? -errno : 0;
out:
	explicit_bzero(buf, sizeof(buf));
	return ret;
}
