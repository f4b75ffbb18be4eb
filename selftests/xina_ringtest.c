// SPDX-License-Identifier: GPL-2.0
/*
 * xina-ringtest: one rank of libxina's host fallback ring
 * (user/lib/libxina_ring.c), driven by xina_ring.sh in a rack of network
 * namespaces.
 *
 *   xina-ringtest -r RANK -w WORKERS -p ADDR:PORT[,ADDR:PORT...] -k KEYFILE
 *                 [-j JOB] [-n WORDS] [-b WORDS_PER_BLOCK] [-d] [-t MS]
 *
 * Every (dtype, op) pair of the wire in turn: each rank fills the words
 * with values only its rank and the pair determine, computes the expected
 * result of all ranks itself, element by element in plain C on int8_t,
 * int16_t, int32_t and int64_t (independent of bpf/xina_lanes.h, which the
 * ring folds with), runs the ring and compares every word.  With -d, every
 * rank marks some blocks done, holding the expected result there (as a
 * switch's answer before it went away), and the others' copies of those
 * blocks hold garbage: the result must still be exact everywhere.  TAP on
 * stdout; the last line "# ring tx BYTES rx BYTES rejected N ideal BYTES",
 * ideal being what a ring must send of the tensors' bytes, 2 (W - 1) / W
 * of each.
 *
 * A rogue is this program with another key file: its handshake fails at
 * both ends, and xina_ring.sh checks the ring it tried to join still
 * completes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../user/lib/libxina_ring.h"
#include "../user/common/xina_keyfile.h"

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

/* Rank @r's word @i for pair (@dt, @op): extremes often, to wrap. */
static uint32_t input_word(uint32_t r, uint32_t dt, uint32_t op, size_t i)
{
	uint64_t h = mix((uint64_t)r << 48 ^ (uint64_t)dt << 40 ^
			 (uint64_t)op << 32 ^ i);

	switch (h & 7) {
	case 0:
		return 0x7f7f7fffu;	/* near every lane's maximum */
	case 1:
		return 0x80808000u;	/* every lane's minimum (high part) */
	default:
		return (uint32_t)(h >> 16);
	}
}

static int64_t fold64(int64_t a, int64_t b, uint32_t op)
{
	switch (op) {
	case XINA_OP_SUM:
		return (int64_t)((uint64_t)a + (uint64_t)b);
	case XINA_OP_MAX:
		return a > b ? a : b;
	case XINA_OP_MIN:
		return a < b ? a : b;
	case XINA_OP_AND:
		return a & b;
	case XINA_OP_OR:
		return a | b;
	default:
		return a ^ b;
	}
}

/* One element of width @bits, sign-extended, folded and wrapped. */
static int64_t fold_w(int64_t a, int64_t b, uint32_t op, int bits)
{
	int64_t v = fold64(a, b, op);

	if (bits == 8)
		return (int8_t)v;
	if (bits == 16)
		return (int16_t)v;
	if (bits == 32)
		return (int32_t)v;
	return v;
}

/* The expected words: every rank's, element by element. */
static void reference(uint32_t *out, size_t n, uint32_t workers,
		      uint32_t dt, uint32_t op)
{
	int bits = dt == XINA_DTYPE_INT8 ? 8 : dt == XINA_DTYPE_INT16 ? 16 : 32;
	size_t i;
	uint32_t r;
	int l, lanes = 32 / bits;

	if (dt == XINA_DTYPE_INT64) {
		for (i = 0; i + 1 < n; i += 2) {
			int64_t acc = 0, v;

			for (r = 0; r < workers; r++) {
				v = (int64_t)((uint64_t)input_word(r, dt, op, i) << 32 |
					      input_word(r, dt, op, i + 1));
				acc = r ? fold64(acc, v, op) : v;
			}
			out[i] = (uint64_t)acc >> 32;
			out[i + 1] = (uint32_t)acc;
		}
		return;
	}
	for (i = 0; i < n; i++) {
		uint32_t w = 0;

		for (l = 0; l < lanes; l++) {
			int shift = 32 - bits * (l + 1);
			int64_t acc = 0, v;

			for (r = 0; r < workers; r++) {
				uint32_t x = input_word(r, dt, op, i) >> shift;

				v = bits == 8 ? (int8_t)x : bits == 16 ?
				    (int16_t)x : (int32_t)x;
				acc = r ? fold_w(acc, v, op, bits) : v;
			}
			w |= (uint32_t)((uint64_t)acc & (bits == 32 ? 0xffffffffu :
						(1u << bits) - 1)) << shift;
		}
		out[i] = w;
	}
}

static int parse_addr(const char *s, struct sockaddr_in *a)
{
	char ip[64];
	const char *c = strchr(s, ':');

	if (!c || c - s >= (long)sizeof(ip))
		return -1;
	memcpy(ip, s, c - s);
	ip[c - s] = 0;
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_port = htons(atoi(c + 1));
	return inet_pton(AF_INET, ip, &a->sin_addr) == 1 && a->sin_port ? 0 : -1;
}

static const char *const dt_name[] = {
	[XINA_DTYPE_INT32] = "int32", [XINA_DTYPE_INT8] = "int8",
	[XINA_DTYPE_INT16] = "int16", [XINA_DTYPE_INT64] = "int64",
};
static const char *const op_name[] = {
	[XINA_OP_SUM] = "sum", [XINA_OP_MAX] = "max", [XINA_OP_MIN] = "min",
	[XINA_OP_AND] = "and", [XINA_OP_OR] = "or", [XINA_OP_XOR] = "xor",
};

int main(int argc, char **argv)
{
	uint32_t rank = 0, workers = 0, job = 1, dt, op;
	size_t nwords = 10000, bw = 256, i, b, nb;
	uint8_t secret[XINA_SECRET_BYTES];
	const char *peers_s = NULL, *key = NULL;
	struct sockaddr_in *peers;
	struct xina_ring_stats st;
	struct xina_ring *r;
	uint32_t *w, *want;
	uint8_t *done = NULL;
	int c, e, t = 0, fails = 0, timeout = 10000;
	bool with_done = false;
	double ideal = 0;
	char err[512];

	while ((c = getopt(argc, argv, "r:w:p:k:j:n:b:dt:")) != -1) {
		switch (c) {
		case 'r': rank = atoi(optarg); break;
		case 'w': workers = atoi(optarg); break;
		case 'p': peers_s = optarg; break;
		case 'k': key = optarg; break;
		case 'j': job = atoi(optarg); break;
		case 'n': nwords = strtoul(optarg, NULL, 0); break;
		case 'b': bw = strtoul(optarg, NULL, 0); break;
		case 'd': with_done = true; break;
		case 't': timeout = atoi(optarg); break;
		default: return 2;
		}
	}
	if (!workers || !peers_s || !key || (bw & 1) || !bw) {
		fprintf(stderr, "usage: see the top of selftests/xina_ringtest.c\n");
		return 2;
	}
	if (xina_keyfile_read(key, secret, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	peers = calloc(workers, sizeof(*peers));
	{
		char *s = strdup(peers_s), *tok, *save = NULL;

		for (i = 0, tok = strtok_r(s, ",", &save); tok && i < workers;
		     tok = strtok_r(NULL, ",", &save), i++)
			if (parse_addr(tok, &peers[i])) {
				fprintf(stderr, "bad address '%s'\n", tok);
				return 2;
			}
		free(s);
		if (i != workers) {
			fprintf(stderr, "%zu addresses for %u workers\n", i, workers);
			return 2;
		}
	}
	uint64_t rkey[2];

	xina_ring_key(secret, job, rkey);
	explicit_bzero(secret, sizeof(secret));
	struct xina_ring_cfg cfg = {
		.job = job, .rank = rank, .workers = workers, .peers = peers,
		.key = rkey, .timeout_ms = timeout,
	};
	e = xina_ring_open(&cfg, &r, err, sizeof(err));
	explicit_bzero(rkey, sizeof(rkey));
	if (e) {
		printf("Bail out! rank %u: %s\n", rank, err);
		fprintf(stderr, "rank %u: %s\n", rank, err);
		return 1;
	}
	nb = (nwords + bw - 1) / bw;
	w = malloc(nwords * 4);
	want = malloc(nwords * 4);
	if (with_done)
		done = calloc(nb, 1);
	printf("1..%d\n", 1 + 4 * 6);
	/* A call the ring refuses (INT64 over an odd count) changes nothing. */
	for (i = 0; i < nwords; i++)
		w[i] = (uint32_t)i;
	e = xina_ring_allreduce(r, w, nwords | 1, bw, NULL, XINA_DTYPE_INT64,
				XINA_OP_SUM, err, sizeof(err));
	for (i = 0; i < nwords && w[i] == (uint32_t)i; i++)
		;
	t++;
	printf("%sok %d - int64 over %zu words refused (%s), buffer unchanged\n",
	       e == -EINVAL && i == nwords ? "" : "not ", t, nwords | 1, err);
	fails += !(e == -EINVAL && i == nwords);
	for (dt = XINA_DTYPE_INT32; dt < __XINA_DTYPE_MAX; dt++) {
		for (op = XINA_OP_SUM; op < __XINA_OP_WIRE_MAX; op++) {
			size_t n = dt == XINA_DTYPE_INT64 ? nwords & ~(size_t)1 :
				   nwords;

			reference(want, n, workers, dt, op);
			for (i = 0; i < n; i++)
				w[i] = input_word(rank, dt, op, i);
			if (done) {
				/* rank r holds the result of blocks b % (W+1) == r */
				for (b = 0; b < nb; b++) {
					size_t e0 = b * bw;
					size_t e1 = e0 + bw < n ? e0 + bw : n;

					done[b] = b % (workers + 1) == rank;
					if (done[b])
						memcpy(w + e0, want + e0, (e1 - e0) * 4);
				}
			}
			/* a ring's share: 2 (W - 1) / W of the tensor out */
			ideal += 2.0 * (workers - 1) / workers * n * 4;
			e = xina_ring_allreduce(r, w, n, bw, done, dt, op,
						err, sizeof(err));
			for (i = 0; !e && i < n; i++)
				if (w[i] != want[i])
					break;
			t++;
			if (e || i < n) {
				fails++;
				printf("not ok %d - %s %s: %s", t, dt_name[dt],
				       op_name[op], e ? err : "");
				if (!e)
					printf("word %zu is %08x, expected %08x",
					       i, w[i], want[i]);
				printf("\n");
				if (e)
					break;
			} else {
				printf("ok %d - %s %s, %zu words\n", t,
				       dt_name[dt], op_name[op], n);
			}
		}
		if (fails && e)
			break;
	}
	xina_ring_stats(r, &st);
	printf("# ring tx %llu rx %llu rejected %llu ideal %.0f\n",
	       (unsigned long long)st.tx_bytes,
	       (unsigned long long)st.rx_bytes,
	       (unsigned long long)st.rejected, ideal);
	xina_ring_close(r);
	free(w);
	free(want);
	free(done);
	free(peers);
	return fails ? 1 : 0;
}
