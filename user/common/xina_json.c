// SPDX-License-Identifier: GPL-2.0
/*
 * Text/JSON printer of xinactl.  JSON is written as it goes (no tree in
 * memory): a stack remembers, per open container, whether it is an object
 * and whether it has members yet, which is all that is needed to place
 * commas, keys and (with pretty) indentation.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "xina_json.h"

#define XP_MAX_DEPTH	16

struct xp_level {
	bool	obj;		/* object (keys) or array */
	bool	used;		/* has a member already */
};

static struct {
	FILE		*out;
	bool		json;
	bool		pretty;
	bool		started;	/* a JSON document was begun */
	int		depth;
	struct xp_level	lvl[XP_MAX_DEPTH];
} xp = { .depth = -1 };

void xp_init(FILE *out, bool json, bool pretty)
{
	xp.out = out;
	xp.json = json;
	xp.pretty = pretty;
	xp.depth = -1;
	xp.started = false;
}

bool xp_json(void)
{
	return xp.json;
}

static void xp_indent(void)
{
	int i;

	if (!xp.pretty)
		return;
	fputc('\n', xp.out);
	for (i = 0; i <= xp.depth; i++)
		fputs("    ", xp.out);
}

static void xp_json_str(const char *s)
{
	const unsigned char *p;

	fputc('"', xp.out);
	for (p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", xp.out);
			break;
		case '\\':
			fputs("\\\\", xp.out);
			break;
		case '\n':
			fputs("\\n", xp.out);
			break;
		case '\t':
			fputs("\\t", xp.out);
			break;
		default:
			if (*p < 0x20)
				fprintf(xp.out, "\\u%04x", *p);
			else
				fputc(*p, xp.out);
		}
	}
	fputc('"', xp.out);
}

/* Comma, indentation and key in front of a new member of the container. */
static void xp_member(const char *key)
{
	struct xp_level *l;

	if (xp.depth < 0)
		return;
	l = &xp.lvl[xp.depth];
	if (l->used)
		fputc(',', xp.out);
	l->used = true;
	xp_indent();
	if (l->obj) {
		/* a key missing inside an object is a bug of the caller */
		xp_json_str(key ? key : "?");
		fputs(xp.pretty ? ": " : ":", xp.out);
	}
}

static void xp_open(const char *key, bool obj)
{
	if (!xp.json)
		return;
	if (xp.depth + 1 >= XP_MAX_DEPTH)
		abort();
	xp_member(key);
	xp.started = true;
	fputc(obj ? '{' : '[', xp.out);
	xp.depth++;
	xp.lvl[xp.depth].obj = obj;
	xp.lvl[xp.depth].used = false;
}

static void xp_close(bool obj)
{
	bool used;

	if (!xp.json)
		return;
	if (xp.depth < 0 || xp.lvl[xp.depth].obj != obj)
		abort();
	used = xp.lvl[xp.depth].used;
	xp.depth--;
	if (used)
		xp_indent();
	fputc(obj ? '}' : ']', xp.out);
}

void xp_open_obj(const char *key)
{
	xp_open(key, true);
}

void xp_close_obj(void)
{
	xp_close(true);
}

void xp_open_arr(const char *key)
{
	xp_open(key, false);
}

void xp_close_arr(void)
{
	xp_close(false);
}

void xp_uint(enum xp_mode mode, const char *key, const char *fmt,
	     unsigned long long val)
{
	if (xp.json) {
		if (mode & XP_JSON) {
			xp_member(key);
			fprintf(xp.out, "%llu", val);
		}
	} else if ((mode & XP_TEXT) && fmt) {
		fprintf(xp.out, fmt, val);
	}
}

void xp_str(enum xp_mode mode, const char *key, const char *fmt,
	    const char *val)
{
	if (xp.json) {
		if (mode & XP_JSON) {
			xp_member(key);
			xp_json_str(val);
		}
	} else if ((mode & XP_TEXT) && fmt) {
		fprintf(xp.out, fmt, val);
	}
}

void xp_bool(enum xp_mode mode, const char *key, const char *fmt, bool val)
{
	if (xp.json) {
		if (mode & XP_JSON) {
			xp_member(key);
			fputs(val ? "true" : "false", xp.out);
		}
	} else if ((mode & XP_TEXT) && fmt) {
		fprintf(xp.out, fmt, val ? "true" : "false");
	}
}

void xp_text(const char *fmt, ...)
{
	va_list ap;

	if (xp.json)
		return;
	va_start(ap, fmt);
	vfprintf(xp.out, fmt, ap);
	va_end(ap);
}

void xp_nl(void)
{
	if (!xp.json)
		fputc('\n', xp.out);
}

int xp_finish(void)
{
	if (xp.json && xp.started)
		fputc('\n', xp.out);
	if (fflush(xp.out) || ferror(xp.out))
		return -1;
	return 0;
}
