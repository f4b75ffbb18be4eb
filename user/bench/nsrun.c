// SPDX-License-Identifier: GPL-2.0
/*
 * xina-nsrun: run one command in a network namespace, for the benchmarks.
 *
 *   xina-nsrun [-p] [-P] [-c FILE] NETNS CMD [ARG...]
 *
 * NETNS is a name under /run/netns or a path; a "%d" in it is replaced by
 * the MPI rank (OMPI_COMM_WORLD_RANK), so that mpirun can start one rank
 * per worker namespace with the same command line.
 *
 * -p relays mpirun's PMIx server into NETNS.  mpirun listens on 127.0.0.1
 *    of its own namespace only, and a rank that moved to another namespace
 *    cannot reach it ("OPAL ERROR: Unreachable" in MPI_Init).  This
 *    process keeps one socket in each namespace (a socket stays in the
 *    namespace it was created in, whatever setns does later): it listens on
 *    127.0.0.1:PORT inside NETNS and forwards each connection to
 *    127.0.0.1:PORT of the namespace it was started in.
 * -P pins the command to CPU (rank mod the number of CPUs), as the
 *    benchmarks place the ranks of every system.
 * -c appends {"cpu_user_s":...,"cpu_sys_s":...} of the command (wait4) to
 *    FILE, one line per run.
 *
 * The exit status is the command's.  SIGINT and SIGTERM are forwarded.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct pipe_half {
	int from;
	int to;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: xina-nsrun [-p] [-P] [-c FILE] NETNS CMD [ARG...]\n"
		"  NETNS  name under /run/netns or a path; %%d = MPI rank\n"
		"  -p     relay mpirun's PMIx server into NETNS\n"
		"  -P     pin the command to CPU (MPI rank mod CPUs)\n"
		"  -c     append the command's CPU seconds as JSON to FILE\n");
	exit(2);
}

/* Resolve NETNS (with %d = rank) to a path. */
static int ns_path(const char *arg, char *buf, size_t len)
{
	char name[PATH_MAX - 16];
	const char *rank;
	char *end;
	long r;

	if (strstr(arg, "%d")) {
		rank = getenv("OMPI_COMM_WORLD_RANK");
		if (!rank) {
			fprintf(stderr, "xina-nsrun: '%s' needs a rank, but OMPI_COMM_WORLD_RANK is not set\n",
				arg);
			return -1;
		}
		r = strtol(rank, &end, 10);
		if (*end || r < 0) {
			fprintf(stderr, "xina-nsrun: bad OMPI_COMM_WORLD_RANK '%s'\n", rank);
			return -1;
		}
		snprintf(name, sizeof(name), arg, (int)r);
	} else {
		snprintf(name, sizeof(name), "%s", arg);
	}
	if (strchr(name, '/'))
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "/run/netns/%s", name);
	return 0;
}

/* mpirun passes its PMIx server as "...;tcp4://127.0.0.1:PORT". */
static int pmix_port(void)
{
	static const char * const vars[] = {
		"PMIX_SERVER_URI41", "PMIX_SERVER_URI4", "PMIX_SERVER_URI3",
		"PMIX_SERVER_URI21", "PMIX_SERVER_URI2",
	};
	const char *uri, *p;
	unsigned int i;
	long port;

	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		uri = getenv(vars[i]);
		if (!uri)
			continue;
		p = strstr(uri, "tcp4://127.0.0.1:");
		if (!p) {
			fprintf(stderr, "xina-nsrun: %s='%s' is not on 127.0.0.1 over tcp4\n",
				vars[i], uri);
			return -1;
		}
		port = strtol(p + strlen("tcp4://127.0.0.1:"), NULL, 10);
		if (port <= 0 || port > 65535) {
			fprintf(stderr, "xina-nsrun: no port in %s='%s'\n", vars[i], uri);
			return -1;
		}
		return port;
	}
	fprintf(stderr, "xina-nsrun: -p without PMIX_SERVER_URI* (not started by mpirun?)\n");
	return -1;
}

static void loopback(struct sockaddr_in *sa, int port)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(port);
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

/* Listen on 127.0.0.1:port inside the namespace ns_fd, then come back. */
static int listen_in(int ns_fd, int self_fd, int port)
{
	struct sockaddr_in sa;
	int fd, one = 1;

	if (setns(ns_fd, CLONE_NEWNET)) {
		perror("xina-nsrun: setns to the target namespace");
		return -1;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto back;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	loopback(&sa, port);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64)) {
		fprintf(stderr, "xina-nsrun: listen on 127.0.0.1:%d in the target namespace: %s\n",
			port, strerror(errno));
		close(fd);
		fd = -1;
	}
back:
	if (setns(self_fd, CLONE_NEWNET)) {
		perror("xina-nsrun: setns back");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* One direction of a relayed connection; the other thread does the other. */
static void *pump(void *arg)
{
	struct pipe_half *h = arg;
	char buf[65536];
	ssize_t n, off, w;

	while ((n = read(h->from, buf, sizeof(buf))) > 0) {
		for (off = 0; off < n; off += w) {
			w = write(h->to, buf + off, n - off);
			if (w <= 0)
				goto out;
		}
	}
out:
	shutdown(h->to, SHUT_WR);
	shutdown(h->from, SHUT_RD);
	return NULL;
}

static void relay_one(int in_fd, int port)
{
	struct pipe_half *h;
	struct sockaddr_in sa;
	pthread_t t;
	int out_fd;

	/* Created in our own (mpirun's) namespace. */
	out_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	loopback(&sa, port);
	if (out_fd < 0 || connect(out_fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "xina-nsrun: connect to mpirun at 127.0.0.1:%d: %s\n",
			port, strerror(errno));
		goto err;
	}
	h = calloc(2, sizeof(*h));
	if (!h)
		goto err;
	h[0] = (struct pipe_half){ .from = in_fd, .to = out_fd };
	h[1] = (struct pipe_half){ .from = out_fd, .to = in_fd };
	/* Both threads live as long as the connection; never joined. */
	if (pthread_create(&t, NULL, pump, &h[0]) == 0)
		pthread_detach(t);
	if (pthread_create(&t, NULL, pump, &h[1]) == 0)
		pthread_detach(t);
	return;
err:
	if (out_fd >= 0)
		close(out_fd);
	close(in_fd);
}

static void report_cpu(const char *file, const struct rusage *ru)
{
	FILE *f = fopen(file, "a");

	if (!f) {
		fprintf(stderr, "xina-nsrun: cannot append to '%s': %s\n", file,
			strerror(errno));
		return;
	}
	fprintf(f, "{\"cpu_user_s\":%.6f,\"cpu_sys_s\":%.6f}\n",
		ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6,
		ru->ru_stime.tv_sec + ru->ru_stime.tv_usec / 1e6);
	fclose(f);
}

static int supervise(pid_t child, int lfd, int port, const char *cpu_file)
{
	struct signalfd_siginfo si;
	struct pollfd pfd[2];
	struct rusage ru;
	sigset_t mask;
	int sfd, status;

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		/* Nothing to wait on but the child: stop it and reap it. */
		perror("xina-nsrun: signalfd");
		kill(child, SIGTERM);
		wait4(child, &status, 0, &ru);
		return 2;
	}
	pfd[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = lfd, .events = POLLIN };
	for (;;) {
		/* A child that exited before the signalfd existed is reaped here. */
		if (wait4(child, &status, WNOHANG, &ru) == child)
			break;
		if (poll(pfd, lfd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN &&
		    read(sfd, &si, sizeof(si)) == sizeof(si) &&
		    si.ssi_signo != SIGCHLD)
			kill(child, si.ssi_signo);
		if (lfd >= 0 && pfd[1].revents & POLLIN) {
			int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

			if (c >= 0)
				relay_one(c, port);
		}
	}
	if (cpu_file)
		report_cpu(cpu_file, &ru);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* Pin this process (and what it execs) to CPU (MPI rank mod CPUs). */
static int pin_rank(void)
{
	const char *r = getenv("OMPI_COMM_WORLD_RANK");
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	if (!r || ncpu < 1) {
		fprintf(stderr, "xina-nsrun: -P needs OMPI_COMM_WORLD_RANK\n");
		return -1;
	}
	CPU_ZERO(&set);
	CPU_SET(atoi(r) % ncpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("xina-nsrun: sched_setaffinity");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *cpu_file = NULL;
	int relay = 0, pin = 0, opt, ns_fd, self_fd, lfd = -1, port = 0;
	char path[PATH_MAX];
	sigset_t mask;
	pid_t child;

	while ((opt = getopt(argc, argv, "+pPc:h")) != -1) {
		switch (opt) {
		case 'p':
			relay = 1;
			break;
		case 'P':
			pin = 1;
			break;
		case 'c':
			cpu_file = optarg;
			break;
		default:
			usage();
		}
	}
	if (argc - optind < 2)
		usage();
	if (pin && pin_rank())
		return 2;
	if (ns_path(argv[optind], path, sizeof(path)))
		return 2;
	ns_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (ns_fd < 0) {
		fprintf(stderr, "xina-nsrun: network namespace '%s': %s\n", path,
			strerror(errno));
		return 2;
	}
	self_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self_fd < 0) {
		perror("xina-nsrun: /proc/self/ns/net");
		return 2;
	}
	if (relay) {
		port = pmix_port();
		if (port < 0)
			return 2;
		lfd = listen_in(ns_fd, self_fd, port);
		if (lfd < 0)
			return 2;
	}

	/* Block before fork so that no SIGCHLD is lost to the default action. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);

	child = fork();
	if (child < 0) {
		perror("xina-nsrun: fork");
		return 2;
	}
	if (child == 0) {
		sigprocmask(SIG_UNBLOCK, &mask, NULL);
		if (setns(ns_fd, CLONE_NEWNET)) {
			fprintf(stderr, "xina-nsrun: setns to '%s': %s\n", path,
				strerror(errno));
			_exit(127);
		}
		execvp(argv[optind + 1], &argv[optind + 1]);
		fprintf(stderr, "xina-nsrun: exec '%s': %s\n", argv[optind + 1],
			strerror(errno));
		_exit(127);
	}
	return supervise(child, lfd, port, cpu_file);
}
