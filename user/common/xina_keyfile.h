/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause) */
/*
 * Key files: a job's 128-bit secret as one line of 32 lowercase
 * hexadecimal digits, in a regular file nobody but its owner may access
 * (as ssh wants of a private key).  Shared by xinactl, libxina and the
 * tools; the keys derived from the secret are in bpf/xina_auth.h.
 */
#ifndef XINA_KEYFILE_H
#define XINA_KEYFILE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/xina.h>

/*
 * Read the secret of key file @path into @secret.  On failure a negative
 * errno and, in @err, a message naming the file and the problem.
 */
int xina_keyfile_read(const char *path, uint8_t secret[XINA_SECRET_BYTES],
		      char *err, size_t errlen);

/*
 * Create key file @path (it must not exist: O_EXCL) with a new secret
 * from getrandom(), mode 0600, and return the secret in @secret.
 */
int xina_keyfile_create(const char *path,
			uint8_t secret[XINA_SECRET_BYTES], char *err,
			size_t errlen);

#endif /* XINA_KEYFILE_H */
