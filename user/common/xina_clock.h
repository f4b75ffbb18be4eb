/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause) */
/*
 * The join clock: CLOCK_REALTIME in ns, what a join's nonce counts in and
 * what a new job's members start at (bpf/xina_join.h,
 * xina_join_mbr_start()), for libxina, xinactl and xina-swagg alike.
 */
#ifndef XINA_CLOCK_H
#define XINA_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t xina_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

#endif
