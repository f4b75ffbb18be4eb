/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xtest: a small test harness in the shape of the kselftest harness, for
 * the C selftests of xina.  TAP 13 output; exit 0 when no test failed, 1
 * when one failed, 4 (KSFT_SKIP) when every test was skipped.
 *
 *	TEST(name) { ASSERT_EQ(a, b); EXPECT_TRUE(c, "what"); ... }
 *	int main(void) { return xt_main(setup, teardown); }
 *
 * ASSERT_* end the test on failure, EXPECT_* record it and go on.  A test
 * calls XT_SKIP("reason") to be reported as skipped: only for a missing
 * tool or kernel feature, and make check fails unless the skip is listed
 * in selftests/expected-skips.  teardown() runs after every test, also
 * after a failed ASSERT, so tests may leave state behind.
 *
 * main() may check what every test needs first: xt_skip_all() when the
 * machine lacks it, xt_fail_all() when it is broken (an object that does
 * not load is a failure, never a skip).  Call xt_header() before anything
 * that may print diagnostics, so that "TAP version 13" comes first.
 */
#ifndef XTEST_H
#define XTEST_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KSFT_PASS	0
#define KSFT_FAIL	1
#define KSFT_SKIP	4

struct xt_test {
	const char *name;
	void (*fn)(void);
	struct xt_test *next;
};

struct xt_state {
	struct xt_test *head, **tail;
	int failed;		/* current test failed */
	const char *skip;	/* current test skipped, and why */
	int header;		/* "TAP version 13" printed */
};

static struct xt_state xt = { .tail = &xt.head };

static inline void xt_register(struct xt_test *t)
{
	*xt.tail = t;
	xt.tail = &t->next;
}

#define TEST(name)							\
	static void name(void);						\
	static struct xt_test xt_t_##name = { #name, name, NULL };	\
	__attribute__((constructor)) static void xt_reg_##name(void)	\
	{								\
		xt_register(&xt_t_##name);				\
	}								\
	static void name(void)

#define XT_LOG(...)							\
	do {								\
		printf("# %s:%d: ", __FILE__, __LINE__);		\
		printf(__VA_ARGS__);					\
		printf("\n");						\
	} while (0)

#define XT_CHECK(cond, fatal, ...)					\
	do {								\
		if (!(cond)) {						\
			XT_LOG(__VA_ARGS__);				\
			xt.failed = 1;					\
			if (fatal)					\
				return;					\
		}							\
	} while (0)

#define XT_CMP(a, op, b, fatal)						\
	do {								\
		long long __a = (long long)(a), __b = (long long)(b);	\
		XT_CHECK(__a op __b, fatal, "%s %s %s: %lld vs %lld",	\
			 #a, #op, #b, __a, __b);			\
	} while (0)

#define ASSERT_TRUE(cond, ...)	XT_CHECK(cond, 1, __VA_ARGS__)
#define EXPECT_TRUE(cond, ...)	XT_CHECK(cond, 0, __VA_ARGS__)
#define ASSERT_EQ(a, b)		XT_CMP(a, ==, b, 1)
#define EXPECT_EQ(a, b)		XT_CMP(a, ==, b, 0)
#define ASSERT_NE(a, b)		XT_CMP(a, !=, b, 1)
#define ASSERT_OK(e)		XT_CMP(e, ==, 0, 1)
#define XT_SKIP(reason)							\
	do {								\
		xt.skip = (reason);					\
		return;							\
	} while (0)

static inline void xt_header(void)
{
	if (!xt.header)
		printf("TAP version 13\n");
	xt.header = 1;
	fflush(stdout);
}

/* Skip the whole file: plan 1..0 with the reason, exit KSFT_SKIP. */
static inline int xt_skip_all(const char *fmt, ...)
{
	va_list ap;

	xt_header();
	printf("1..0 # SKIP ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return KSFT_SKIP;
}

/* Fail the whole file: one point @what, not ok, with the reason. */
static inline int xt_fail_all(const char *what, const char *fmt, ...)
{
	va_list ap;

	xt_header();
	printf("1..1\nnot ok 1 - %s\n# ", what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return KSFT_FAIL;
}

static inline int xt_main(int (*setup)(void), void (*teardown)(void))
{
	int n = 0, i = 0, fails = 0, skips = 0;
	struct xt_test *t;

	for (t = xt.head; t; t = t->next)
		n++;
	xt_header();
	printf("1..%d\n", n);
	for (t = xt.head; t; t = t->next) {
		i++;
		xt.failed = 0;
		xt.skip = NULL;
		fflush(stdout);
		if (setup && setup())
			xt.failed = 1;
		else
			t->fn();
		if (teardown)
			teardown();
		if (xt.failed) {
			fails++;
			printf("not ok %d - %s\n", i, t->name);
		} else if (xt.skip) {
			skips++;
			printf("ok %d - %s # SKIP %s\n", i, t->name, xt.skip);
		} else {
			printf("ok %d - %s\n", i, t->name);
		}
	}
	printf("# %d passed, %d failed, %d skipped\n", n - fails - skips,
	       fails, skips);
	if (fails)
		return KSFT_FAIL;
	return n && skips == n ? KSFT_SKIP : KSFT_PASS;
}

#endif /* XTEST_H */
