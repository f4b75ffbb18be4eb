// SPDX-License-Identifier: GPL-2.0
/*
 * train_floor: the transport floor of an in-network allreduce on the veth
 * rack (scripts/bench/floor/train_floor.sh runs it; train_floor.bpf.c says
 * what the switch side does).
 *
 *   train_floor switch BPF_OBJ MODE READ SWITCH_IP PORT=IP,MAC ...
 *	in the switch namespace: tf_tc on every PORT's TC ingress (IP and
 *	MAC: the worker's behind it), and for MODE "frame" also tf_xdp_pass
 *	on them in native mode, for "gtrain" in generic mode (MODE "train":
 *	no XDP); READ is the work on the payload (0, 1, 2:
 *	train_floor.bpf.c).  Exits; the programs stay attached until
 *	the ports go.
 *   train_floor worker SWITCH_IP BYTES SEG NSEG WINDOW START
 *	in a worker namespace, from START (CLOCK_REALTIME, in ms): sends BYTES to SWITCH_IP:9399 as trains of
 *	NSEG datagrams of SEG bytes (one sendmsg with UDP_SEGMENT each), no
 *	more than WINDOW trains ahead of the results received (UDP_GRO), and
 *	ends when BYTES of results arrived, or 0.5 s after the last result
 *	(a loss: nothing is resent).  Prints one line: seconds until the last
 *	result, its user and system CPU seconds, receive calls, result bytes
 *	lost.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_link.h>
#include <linux/udp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>

#include "train_floor.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT	103
#endif
#ifndef UDP_GRO
#define UDP_GRO		104
#endif

static int die(const char *what)
{
	fprintf(stderr, "train_floor: %s: %s\n", what, strerror(errno));
	return 1;
}

static int tf_switch(int argc, char **argv)
{
	const char *obj_path = argv[0], *mode = argv[1];
	int read = atoi(argv[2]), n = argc - 4, i, fd_tc, fd_xdp;
	struct bpf_object *obj;
	struct bpf_map *ro;
	struct tf_cfg rd = { 0 };
	size_t sz;
	void *init;

	if (strcmp(mode, "frame") && strcmp(mode, "train") &&
	    strcmp(mode, "gtrain")) {
		fprintf(stderr, "train_floor: MODE '%s' is none of frame, train "
			"and gtrain\n", mode);
		return 2;
	}
	if (n < 1 || n > TF_MAX_PORTS || read < 0 || read > 2 ||
	    inet_pton(AF_INET, argv[3], &rd.swip) != 1) {
		fprintf(stderr, "train_floor: bad READ, SWITCH_IP or port count\n");
		return 2;
	}
	obj = bpf_object__open_file(obj_path, NULL);
	if (!obj)
		return die(obj_path);
	ro = bpf_object__find_map_by_name(obj, ".rodata");
	if (!ro)
		return die("no .rodata");
	rd.nports = n;
	rd.read = read;
	rd.generic = !strcmp(mode, "gtrain");
	for (i = 0; i < n; i++) {
		char name[32], ip[32];
		unsigned int m[6];

		if (sscanf(argv[4 + i], "%31[^=]=%31[^,],%x:%x:%x:%x:%x:%x", name,
			   ip, &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 8) {
			fprintf(stderr, "train_floor: bad port '%s'\n", argv[4 + i]);
			return 2;
		}
		rd.ifindex[i] = if_nametoindex(name);
		if (!rd.ifindex[i] || inet_pton(AF_INET, ip, &rd.ip[i]) != 1) {
			fprintf(stderr, "train_floor: bad port '%s'\n", argv[4 + i]);
			return 2;
		}
		for (int b = 0; b < 6; b++)
			rd.mac[i][b] = m[b];
	}
	srandom(getpid());
	for (i = 0; i < TF_CHUNK / 4; i++)
		rd.key[i] = random();
	init = (void *)bpf_map__initial_value(ro, &sz);
	if (!init || sz < sizeof(rd)) {
		fprintf(stderr, "train_floor: .rodata is %zu bytes\n", sz);
		return 1;
	}
	memcpy(init, &rd, sizeof(rd));
	if (bpf_object__load(obj))
		return die("load");
	fd_tc = bpf_program__fd(bpf_object__find_program_by_name(obj, "tf_tc"));
	fd_xdp = bpf_program__fd(bpf_object__find_program_by_name(obj,
								 "tf_xdp_pass"));
	for (i = 0; i < n; i++) {
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = rd.ifindex[i],
			    .attach_point = BPF_TC_INGRESS);
		LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = fd_tc);
		int err = bpf_tc_hook_create(&hook);

		if (err && err != -EEXIST)
			return errno = -err, die("tc hook");
		err = bpf_tc_attach(&hook, &opts);
		if (err)
			return errno = -err, die("tc attach");
		if (strcmp(mode, "train")) {
			err = bpf_xdp_attach(rd.ifindex[i], fd_xdp,
					     strcmp(mode, "gtrain") ? 0 :
					     XDP_FLAGS_SKB_MODE, NULL);
			if (err)
				return errno = -err, die("xdp attach");
		}
	}
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int tf_worker(char **argv)
{
	long long bytes = atoll(argv[1]);
	int seg = atoi(argv[2]), nseg = atoi(argv[3]), window = atoi(argv[4]);
	long long train = (long long)seg * nseg, trains = bytes / train;
	long long sent = 0, got = 0, calls = 0;
	struct sockaddr_in sw = { .sin_family = AF_INET,
				  .sin_port = htons(TF_UDP_PORT) };
	struct sockaddr_in me = sw;
	int fd, one = 1, big = 32 << 20;
	char *tx, *rx;
	struct rusage ru;
	struct timespec start = { 0 };
	double t0, tlast;

	if (inet_pton(AF_INET, argv[0], &sw.sin_addr) != 1 || trains < 1 ||
	    train > 65000 || window < 1)
		return fprintf(stderr, "train_floor: bad worker arguments\n"), 2;
	me.sin_addr.s_addr = INADDR_ANY;
	tx = calloc(1, train);
	rx = malloc(65536);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (fd < 0 || !tx || !rx)
		return die("socket");
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	if (setsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &seg, sizeof(seg)) ||
	    setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one)))
		return die("UDP_SEGMENT/UDP_GRO");
	/* not connected: any address may send (the switch does) */
	if (bind(fd, (void *)&me, sizeof(me)))
		return die("bind");
	/* every socket bound before the first result is sent */
	start.tv_sec = atoll(argv[5]) / 1000;
	start.tv_nsec = atoll(argv[5]) % 1000 * 1000000;
	if (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &start, NULL))
		return die("clock_nanosleep");
	t0 = tlast = now();
	while (got < trains * train) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (sent < trains && sent - got / train < window) {
			/* each datagram's number (the switch counts a train
			 * it sees whole by its first) */
			for (int k = 0; k < nseg; k++)
				*(__u32 *)(tx + (long)k * seg) = sent * nseg + k;
			r = sendto(fd, tx, train, 0, (void *)&sw, sizeof(sw));
			if (r == train) {
				sent++;
				continue;
			}
			if (r >= 0 || errno != EAGAIN)
				return die("send");
			p.events |= POLLOUT;
		}
		r = recv(fd, rx, 65536, 0);
		if (r > 0) {
			got += r;
			calls++;
			tlast = now();
			continue;
		}
		if (r < 0 && errno != EAGAIN)
			return die("recv");
		if (poll(&p, 1, 500) == 0)
			break;	/* a loss: no retransmission here */
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("%.6f %.6f %.6f %lld %lld\n", tlast - t0,
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, calls,
	       trains * train - got);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 7 && !strcmp(argv[1], "switch"))
		return tf_switch(argc - 2, argv + 2);
	if (argc == 8 && !strcmp(argv[1], "worker"))
		return tf_worker(argv + 2);
	fprintf(stderr, "usage: train_floor switch BPF_OBJ frame|train|gtrain READ "
		"SWITCH_IP PORT=IP,MAC ...\n"
		"       train_floor worker SWITCH_IP BYTES SEG NSEG WINDOW START\n");
	return 2;
}
