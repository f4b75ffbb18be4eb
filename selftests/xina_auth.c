// SPDX-License-Identifier: GPL-2.0
/*
 * Selftest of the packet authentication shared by the fast path, xina.ko
 * and user space (bpf/xina_auth.h), and of key files (user/common/xina_keyfile.c):
 * SipHash-2-4 against the 64 published test vectors of its reference
 * implementation, the tag and the key derivation against SipHash of the
 * messages spelled out byte by byte, NH against its definition (and
 * user/common/xina_nh.c's vector loops against it), and the checks a key
 * file must pass.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/xina.h>

#include "xina_auth.h"
#include "xina_keyfile.h"
#include "xina_nh.h"
#include "kselftest_harness.h"
#include "xina_log.h"

/*
 * SipHash-2-4 with key 00 01 .. 0f of the messages 00 01 .. (len - 1),
 * len = 0..63: vectors.h of the reference implementation
 * (https://github.com/veorq/SipHash), as 64-bit values.
 */
static const uint64_t sip_vectors[64] = {
	0x726fdb47dd0e0e31ULL, 0x74f839c593dc67fdULL, 0x0d6c8009d9a94f5aULL,
	0x85676696d7fb7e2dULL, 0xcf2794e0277187b7ULL, 0x18765564cd99a68dULL,
	0xcbc9466e58fee3ceULL, 0xab0200f58b01d137ULL, 0x93f5f5799a932462ULL,
	0x9e0082df0ba9e4b0ULL, 0x7a5dbbc594ddb9f3ULL, 0xf4b32f46226bada7ULL,
	0x751e8fbc860ee5fbULL, 0x14ea5627c0843d90ULL, 0xf723ca908e7af2eeULL,
	0xa129ca6149be45e5ULL, 0x3f2acc7f57c29bdbULL, 0x699ae9f52cbe4794ULL,
	0x4bc1b3f0968dd39cULL, 0xbb6dc91da77961bdULL, 0xbed65cf21aa2ee98ULL,
	0xd0f2cbb02e3b67c7ULL, 0x93536795e3a33e88ULL, 0xa80c038ccd5ccec8ULL,
	0xb8ad50c6f649af94ULL, 0xbce192de8a85b8eaULL, 0x17d835b85bbb15f3ULL,
	0x2f2e6163076bcfadULL, 0xde4daaaca71dc9a5ULL, 0xa6a2506687956571ULL,
	0xad87a3535c49ef28ULL, 0x32d892fad841c342ULL, 0x7127512f72f27cceULL,
	0xa7f32346f95978e3ULL, 0x12e0b01abb051238ULL, 0x15e034d40fa197aeULL,
	0x314dffbe0815a3b4ULL, 0x027990f029623981ULL, 0xcadcd4e59ef40c4dULL,
	0x9abfd8766a33735cULL, 0x0e3ea96b5304a7d0ULL, 0xad0c42d6fc585992ULL,
	0x187306c89bc215a9ULL, 0xd4a60abcf3792b95ULL, 0xf935451de4f21df2ULL,
	0xa9538f0419755787ULL, 0xdb9acddff56ca510ULL, 0xd06c98cd5c0975ebULL,
	0xe612a3cb9ecba951ULL, 0xc766e62cfcadaf96ULL, 0xee64435a9752fe72ULL,
	0xa192d576b245165aULL, 0x0a8787bf8ecb74b2ULL, 0x81b3e73d20b49b6fULL,
	0x7fa8220ba3b2eceaULL, 0x245731c13ca42499ULL, 0xb78dbfaf3a8d83bdULL,
	0xea1ad565322a1a0bULL, 0x60e61c23a3795013ULL, 0x6606d7e446282b93ULL,
	0x6ca4ecb15c5f91e1ULL, 0x9f626da15c9625f3ULL, 0xe51b38608ef25f57ULL,
	0x958a324ceb064572ULL,
};

/* Little-endian 64-bit value of 8 bytes, spelled out. */
static uint64_t le64_of(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		p[i] = v >> (8 * i);
}

static uint64_t rnd64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

TEST(siphash_published_vectors)
{
	uint8_t key[16], msg[64];
	unsigned int i, bad = 0;
	uint64_t got;

	for (i = 0; i < 16; i++)
		key[i] = i;
	for (i = 0; i < 64; i++)
		msg[i] = i;
	for (i = 0; i < 64; i++) {
		got = xina_siphash(le64_of(key), le64_of(key + 8), msg, i);
		if (got != sip_vectors[i]) {
			if (!bad)
				TH_LOG("length %u: %016llx, want %016llx", i,
				       (unsigned long long)got,
				       (unsigned long long)sip_vectors[i]);
			bad++;
		}
	}
	EXPECT_EQ(bad, 0);
}

/* The tag is SipHash of the 40 header bytes and le64(NH), nothing else. */
TEST(tag_is_siphash_of_header_and_nh)
{
	uint8_t hdr[sizeof(struct xina_hdr) + 1], msg[48];
	uint64_t s = 1, nh, want;
	__u64 k[2];
	unsigned int t, i, bad = 0;

	EXPECT_EQ(sizeof(struct xina_hdr), 48);
	EXPECT_EQ(offsetof(struct xina_hdr, tag), 8 * XINA_AUTH_HDR_WORDS);
	for (t = 0; t < 1000; t++) {
		k[0] = rnd64(&s);
		k[1] = rnd64(&s);
		nh = rnd64(&s);
		/* at an odd address: packets align it on 2 bytes only */
		for (i = 0; i < 40; i++)
			hdr[1 + i] = rnd64(&s);
		memcpy(msg, hdr + 1, 40);
		for (i = 0; i < 8; i++)
			msg[40 + i] = nh >> (8 * i);
		want = xina_siphash(k[0], k[1], msg, sizeof(msg));
		if (xina_tag_hdr(k, hdr + 1, nh) != want)
			bad++;
	}
	EXPECT_EQ(bad, 0);
}

/* NH against its definition, with 128-bit arithmetic for the sum. */
TEST(nh_definition)
{
	uint32_t k[XINA_MAX_ELEMS], m[XINA_MAX_ELEMS];
	unsigned int count, i, bad = 0;
	unsigned __int128 sum;
	uint64_t s = 7, a, b;

	for (i = 0; i < XINA_MAX_ELEMS; i++) {
		k[i] = rnd64(&s);
		m[i] = rnd64(&s);
	}
	for (count = 1; count <= XINA_MAX_ELEMS; count += count < 20 ? 1 : 77) {
		sum = 0;
		for (i = 0; i < count; i += 2) {
			a = (m[i] + (uint64_t)k[i]) % (1ULL << 32);
			b = ((i + 1 < count ? m[i + 1] : 0) + (uint64_t)k[i + 1]) %
			    (1ULL << 32);
			sum += (unsigned __int128)a * b;
		}
		if (xina_nh(k, m, count) != (uint64_t)sum) {
			if (!bad)
				TH_LOG("count %u differs", count);
			bad++;
		}
	}
	EXPECT_EQ(bad, 0);
	/* a changed word or a word appended changes the hash here */
	a = xina_nh(k, m, 100);
	m[37] ^= 1 << 9;
	EXPECT_TRUE(xina_nh(k, m, 100) != a) {
		TH_LOG("one bit flipped, same NH");
	}
	m[37] ^= 1 << 9;
	m[100] = 5;
	EXPECT_TRUE(xina_nh(k, m, 101) != a) {
		TH_LOG("a word appended, same NH");
	}
}

/*
 * user/common/xina_nh.c (libxina's and xina-swagg's NH, by hand for AVX2
 * where the CPU has it) against xina_nh_net() for every count a packet can
 * have: on a CPU with AVX2 the vector loop takes the multiples of 8 and
 * the portable loop the rest, on one without the portable loop all.
 */
TEST(nh_wire_paths)
{
	uint32_t k1[XINA_MAX_ELEMS + 1], k2[XINA_MAX_ELEMS + 1];
	uint32_t m[XINA_MAX_ELEMS + 1], a[XINA_MAX_ELEMS], out[XINA_MAX_ELEMS];
	unsigned int count, i, bad = 0, bad2 = 0, badp = 0;
	uint64_t s = 11, nh2;

	for (i = 0; i <= XINA_MAX_ELEMS; i++) {
		k1[i] = rnd64(&s);
		k2[i] = rnd64(&s);
		m[i] = rnd64(&s);
	}
	for (count = 1; count <= XINA_MAX_ELEMS; count++) {
		/* m + 1: a payload 4-byte aligned only, as in a packet */
		if (xina_nh_wire(k1, m + 1, count) != xina_nh_net(k1, m + 1, count))
			bad++;
		if (xina_nh_wire2(k1, k2, m, count, &nh2) !=
		    xina_nh_net(k1, m, count) || nh2 != xina_nh_net(k2, m, count))
			bad2++;
		for (i = 0; i < count; i++)
			a[i] = m[i] ^ count;
		if (xina_nh_pack(k1, out, a, count) != xina_nh_net(k1, out, count))
			badp++;
		for (i = 0; i < count; i++)
			if (out[i] != htonl(a[i]))
				badp++;
	}
	EXPECT_EQ(bad, 0);
	EXPECT_EQ(bad2, 0);
	EXPECT_EQ(badp, 0);
}

/* The derivation: SipHash keyed with the secret over label job rank ctr 0. */
static uint64_t derive_spelled(const uint8_t *secret, const char *label,
			       uint32_t job, uint32_t rank, uint32_t ctr)
{
	uint8_t msg[24] = {};

	memcpy(msg, label, 8);
	put_le32(msg + 8, job);
	put_le32(msg + 12, rank);
	put_le32(msg + 16, ctr);
	return xina_siphash(le64_of(secret), le64_of(secret + 8), msg,
			    sizeof(msg));
}

TEST(derivation_spelled_out)
{
	uint8_t secret[XINA_SECRET_BYTES];
	uint32_t nhk[XINA_MAX_ELEMS], i;
	uint64_t s = 3, x;
	__u64 k[2];
	unsigned int bad = 0;

	for (i = 0; i < sizeof(secret); i++)
		secret[i] = rnd64(&s);
	xina_derive_key(secret, XINA_LABEL_MEMBER, 77, 5, k);
	EXPECT_EQ(k[0], derive_spelled(secret, "xina-mbr", 77, 5, 0));
	EXPECT_EQ(k[1], derive_spelled(secret, "xina-mbr", 77, 5, 1));
	xina_derive_key(secret, XINA_LABEL_RESULT, 77, 0, k);
	EXPECT_EQ(k[0], derive_spelled(secret, "xina-res", 77, 0, 0));
	EXPECT_EQ(k[1], derive_spelled(secret, "xina-res", 77, 0, 1));
	xina_derive_nh(secret, 77, nhk, XINA_MAX_ELEMS);
	for (i = 0; i < XINA_MAX_ELEMS / 2; i++) {
		x = derive_spelled(secret, "xina-nh\0", 77, 0, i);
		if (nhk[2 * i] != (uint32_t)x || nhk[2 * i + 1] != x >> 32)
			bad++;
	}
	EXPECT_EQ(bad, 0);
	/* other rank, other job, other label: other keys */
	xina_derive_key(secret, XINA_LABEL_MEMBER, 77, 5, k);
	x = k[0];
	xina_derive_key(secret, XINA_LABEL_MEMBER, 77, 6, k);
	EXPECT_TRUE(k[0] != x) {
		TH_LOG("ranks 5 and 6 share a key");
	}
	xina_derive_key(secret, XINA_LABEL_MEMBER, 78, 5, k);
	EXPECT_TRUE(k[0] != x) {
		TH_LOG("jobs 77 and 78 share a key");
	}
}

/* ---- key files ---------------------------------------------------------- */

static char dir[] = "/tmp/xina_auth.XXXXXX";

static void put_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		LOG("cannot write %s", path);
	if (fd >= 0) {
		fchmod(fd, mode);
		close(fd);
	}
}

/* Refused with a message that names @path and contains @why. */
static int refused(const char *path, const char *why)
{
	uint8_t secret[XINA_SECRET_BYTES];
	char err[512] = "";
	int ret;

	ret = xina_keyfile_read(path, secret, err, sizeof(err));
	if (!ret || !strstr(err, path) || !strstr(err, why)) {
		LOG("%s: ret %d, message '%s', want '%s'", path, ret, err,
		    why);
		return 0;
	}
	return 1;
}

#define REFUSED(path, why)	EXPECT_TRUE(refused(path, why)) TH_LOG("%s", why)

TEST(keyfile_create_and_read)
{
	uint8_t a[XINA_SECRET_BYTES], b[XINA_SECRET_BYTES];
	char path[64], err[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/new.key", dir);
	umask(0);	/* the file is 0600 whatever the umask */
	ASSERT_EQ(0, xina_keyfile_create(path, a, err, sizeof(err)));
	umask(022);
	ASSERT_EQ(0, stat(path, &st));
	EXPECT_EQ(st.st_mode & 07777, 0600);
	EXPECT_EQ(st.st_size, 33);
	ASSERT_EQ(0, xina_keyfile_read(path, b, err, sizeof(err)));
	EXPECT_TRUE(!memcmp(a, b, sizeof(a))) {
		TH_LOG("read back another secret");
	}
	/* never overwritten */
	EXPECT_EQ(xina_keyfile_create(path, b, err, sizeof(err)), -EEXIST);
	ASSERT_EQ(0, xina_keyfile_read(path, b, err, sizeof(err)));
	EXPECT_TRUE(!memcmp(a, b, sizeof(a))) {
		TH_LOG("key file overwritten");
	}
	/* two keys made so differ */
	snprintf(path, sizeof(path), "%s/other.key", dir);
	ASSERT_EQ(0, xina_keyfile_create(path, b, err, sizeof(err)));
	EXPECT_TRUE(memcmp(a, b, sizeof(a))) {
		TH_LOG("two new secrets are equal");
	}
}

TEST(keyfile_refused)
{
	const char *good = "00112233445566778899aabbccddeeff\n";
	char path[64], link[64];

	snprintf(path, sizeof(path), "%s/k", dir);
	put_file(path, good, 0644);
	REFUSED(path, "accessible by group or others");
	put_file(path, good, 0640);
	REFUSED(path, "accessible by group or others");
	put_file(path, good, 0604);
	REFUSED(path, "accessible by group or others");
	put_file(path, "00112233445566778899AABBCCDDEEFF\n", 0600);
	REFUSED(path, "does not hold a key");
	put_file(path, "00112233445566778899aabbccddeeff", 0600);
	REFUSED(path, "does not hold a key");
	put_file(path, "00112233445566778899aabbccddee\n", 0600);
	REFUSED(path, "does not hold a key");
	put_file(path, "00112233445566778899aabbccddeeff\nxx", 0600);
	REFUSED(path, "does not hold a key");
	snprintf(link, sizeof(link), "%s/link", dir);
	put_file(path, good, 0600);
	ASSERT_EQ(0, symlink(path, link));
	REFUSED(link, "symbolic link");
	REFUSED(dir, "not a regular file");
	snprintf(path, sizeof(path), "%s/absent", dir);
	REFUSED(path, "No such file");
}

TEST(keyfile_good)
{
	uint8_t secret[XINA_SECRET_BYTES];
	char path[64], err[512];
	unsigned int i;

	snprintf(path, sizeof(path), "%s/good", dir);
	put_file(path, "00112233445566778899aabbccddeeff\n", 0400);
	ASSERT_EQ(0, xina_keyfile_read(path, secret, err, sizeof(err)));
	for (i = 0; i < sizeof(secret); i++) {
		EXPECT_EQ(secret[i], i * 0x11);
	}
}

static void rm_dir(void)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		ksft_print_msg("cannot remove %s\n", dir);
}

int main(int argc, char **argv)
{
	if (!mkdtemp(dir))
		ksft_exit_fail_msg("mkdtemp %s: %s\n", dir, strerror(errno));
	/* the tests run in children; the harness exits through exit() */
	atexit(rm_dir);
	return test_harness_run(argc, argv);
}
