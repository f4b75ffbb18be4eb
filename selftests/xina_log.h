/* SPDX-License-Identifier: GPL-2.0 */
/*
 * LOG(): a line of diagnostics where TH_LOG() has no test to name (the
 * first element a check finds wrong, say), as "# ..." in the TAP output.
 * Flushed at once: kselftest_harness.h ends each test's process with
 * _exit(), which drops what stdout still buffers, and stdout is a pipe
 * under selftests/run.sh, so an unflushed line would never be seen.
 */
#ifndef XINA_LOG_H
#define XINA_LOG_H

#include <stdio.h>

#include "kselftest_harness.h"

#define LOG(fmt, ...)						\
	do {							\
		ksft_print_msg(fmt "\n", ##__VA_ARGS__);	\
		fflush(stdout);					\
	} while (0)

#endif /* XINA_LOG_H */
