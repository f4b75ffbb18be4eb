/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One set of print calls for text and JSON output (iproute2's print_*()
 * in small).  Every call names the JSON key and the text format of one
 * value; which of the two is written depends on xp_init().  Keys, objects
 * and arrays only exist in JSON; text gets its layout from the formats,
 * xp_text() and xp_nl().
 *
 * The printer keeps its state in this file: xinactl prints one document
 * per run, from one thread.
 */
#ifndef XINA_JSON_H
#define XINA_JSON_H

#include <stdbool.h>
#include <stdio.h>

enum xp_mode {
	XP_TEXT	= 1 << 0,	/* only in text output */
	XP_JSON	= 1 << 1,	/* only in JSON output */
	XP_ANY	= XP_TEXT | XP_JSON,
};

void xp_init(FILE *out, bool json, bool pretty);
bool xp_json(void);

/* Containers (JSON only).  @key is NULL inside arrays and at top level. */
void xp_open_obj(const char *key);
void xp_close_obj(void);
void xp_open_arr(const char *key);
void xp_close_arr(void);

/* One value: JSON "key": value, or text printf(fmt, value). */
void xp_uint(enum xp_mode mode, const char *key, const char *fmt,
	     unsigned long long val);
void xp_str(enum xp_mode mode, const char *key, const char *fmt,
	    const char *val);
void xp_bool(enum xp_mode mode, const char *key, const char *fmt, bool val);

/* Text only: literal text and line ends. */
void xp_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void xp_nl(void);

/* End of the document: the final newline of JSON output. */
int xp_finish(void);

#endif /* XINA_JSON_H */
