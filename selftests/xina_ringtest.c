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
 * result of all ranks itself, element by element by the reference of
 * selftests/xina_ref.h (independent of bpf/xina_lanes.h, which the ring
 * folds with), runs the ring and compares every word.  With -d, every
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
#include "xina_ref.h"

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

/*
 * The expected @n words: every rank's, element by element, folded by
 * selftests/xina_ref.h; @in has room for @workers times @n words.
 */
static void reference(uint32_t *out, uint32_t *in, size_t n,
		      uint32_t workers, uint32_t dt, uint32_t op)
{
	size_t i, nel = xref_elems(dt, n);
	uint32_t r;
	int64_t acc;

	for (r = 0; r < workers; r++)
		for (i = 0; i < n; i++)
			in[r * n + i] = input_word(r, dt, op, i);
	for (i = 0; i < nel; i++) {
		acc = xref_get(dt, in, i);
		for (r = 1; r < workers; r++)
			acc = xref_fold(dt, op, acc,
					xref_get(dt, in + r * n, i));
		xref_set(dt, out, i, acc);
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

int main(int argc, char **argv)
{
	uint32_t rank = 0, workers = 0, job = 1, dt, op, *in;
	size_t nwords = 10000, bw = 256, i, b, nb, d, o;
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
		free(peers);
		return 1;
	}
	nb = (nwords + bw - 1) / bw;
	w = malloc(nwords * 4);
	want = malloc(nwords * 4);
	in = malloc(workers * nwords * 4);
	if (with_done)
		done = calloc(nb, 1);
	printf("1..%zu\n", 1 + XREF_NPAIRS);
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
	for (d = 0; d < XREF_NDTYPES; d++) {
		for (o = 0; o < XREF_NOPS; o++) {
			size_t n;

			dt = XREF_DTYPES[d];
			op = XREF_OPS[o];
			n = dt == XINA_DTYPE_INT64 ? nwords & ~(size_t)1 :
			    nwords;
			reference(want, in, n, workers, dt, op);
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
			/* the ring takes the words as the switch has them */
			for (i = 0; i < n; i++)
				w[i] = htonl(w[i]);
			e = xina_ring_allreduce(r, w, n, bw, done, dt, op,
						err, sizeof(err));
			for (i = 0; i < n; i++)
				w[i] = ntohl(w[i]);
			for (i = 0; !e && i < n; i++)
				if (w[i] != want[i])
					break;
			t++;
			if (e || i < n) {
				fails++;
				printf("not ok %d - %s %s: %s", t,
				       xref_dtype_name(dt), xref_op_name(op),
				       e ? err : "");
				if (!e)
					printf("word %zu is %08x, expected %08x",
					       i, w[i], want[i]);
				printf("\n");
				if (e)
					break;
			} else {
				printf("ok %d - %s %s, %zu words\n", t,
				       xref_dtype_name(dt), xref_op_name(op), n);
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
	free(in);
	free(done);
	free(peers);
	return fails ? 1 : 0;
}
