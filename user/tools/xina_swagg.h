/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xina-swagg's state, shared by the aggregator (xina_swagg.c) and its
 * uplink, the rack agent (xina_swagg_up.c).
 */
#ifndef XINA_SWAGG_H
#define XINA_SWAGG_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <linux/xina.h>

#include "xina_join.h"
#include "xina_rtt.h"

#define SW_RX_BATCH	32
#define SW_RX_BUF	65536
#define SW_TX_BATCH	256
#define SW_GSO_MAX	64
#define SW_ANS_MAX	1024	/* queued retransmission answers */

struct sw_ver {
	uint64_t	seen[XINA_MAX_WORKERS / 64];
	uint64_t	offset;
	uint32_t	round;
	uint32_t	epoch;		/* the epoch of @round */
	uint16_t	ncontrib;
	uint16_t	count;	/* 32-bit words */
	uint8_t		dtype;	/* the round's enum xina_dtype and op */
	uint8_t		op;
	int8_t		exp;
	/*
	 * The MAX of the accepted contributions' aux, signed, what the
	 * result carries; an agent's, once the upper result is back, that
	 * result's (the job's MAX over every rack).
	 */
	int32_t		aux;
	bool		used;
	bool		complete;
	/* uplink: the rack's partial is up, its result not back yet */
	bool		up_pending;
	bool		up_resent;	/* no RTT sample from it (Karn) */
	uint32_t	up_rto_us;	/* current (backed off) timeout */
	uint64_t	up_nh;		/* NH of the partial's elements: its
					 * tag again, flagged RETRANS */
	uint64_t	up_first_ns;	/* first sent up (CLOCK_MONOTONIC) */
	uint64_t	up_sent_ns;	/* last sent up */
};

struct sw_member {
	struct sockaddr_in	addr;	/* port 0 until learned, if not given;
					 * sin_family 0: no such member */
	bool			any_port;
	__u64			key[2];	/* K_r of its contributions */
};

/*
 * The upper job of a rack agent (--up): this process is one member of it
 * (@rank), standing for the rack's members.  Its partials go to @addr
 * tagged with K_rank of the upper job's secret, results come back tagged
 * with that job's K_res.
 */
struct sw_up {
	struct sockaddr_in	addr;		/* the upper switch */
	uint32_t		job;
	uint16_t		rank;
	const char		*key_file;
	__u64			kmine[2];	/* K_rank of the upper job */
	__u64			kres[2];	/* its K_res */
	uint32_t		nhk[XINA_MAX_ELEMS];	/* its NH key */
	uint32_t		epoch;		/* granted by the upper join */
	uint32_t		rack_epoch;	/* the rack's epoch it joined for */
	uint64_t		nonce;		/* of the latest upper join */
	uint32_t		rto_us;		/* first timeout, until measured */
	uint32_t		rto_max_us;
	struct xina_rtt		rtt;		/* RFC 6298 estimator */
	uint32_t		timeout_ms;	/* of the upper join */
	uint64_t		next_scan_ns;	/* timers checked next */
	uint32_t		*q;		/* versions to send up */
	uint32_t		nq;
	uint8_t			*pkt;		/* per version: the partial */
	/* counters, printed with the rest */
	uint64_t		sent, resent, timeouts, results, stale, bad_tag,
				joins, epochs;
};

struct swagg {
	int			fd;
	uint16_t		port;
	uint32_t		job;
	const char		*key_file;
	__u64			kres[2];	/* K_res of the results */
	uint32_t		nhk[XINA_MAX_ELEMS];	/* NH key */
	uint16_t		workers;	/* ranks are below this */
	uint16_t		nmemb;		/* members: all ranks, or the
						 * rack's ones for an agent */
	uint16_t		*ranks;		/* their ranks */
	uint32_t		slots;
	uint16_t		elems;
	bool			gso;
	bool			gro;
	bool			verbose;
	bool			json;		/* --json: counters as JSON */
	size_t			pkt_sz;
	struct sw_member	*member;
	struct xina_join_job	jj;	/* the epoch and who joined it */
	struct xina_join_mbr	*jm;	/* per member: its latest join */
	uint64_t		last_complete_ns;	/* CLOCK_MONOTONIC */
	struct sw_ver		*ver;	/* slots * 2 */
	int32_t			*vals;	/* slots * 2 * elems words, host order
					 * (lanes as bpf/xina_lanes.h has them) */
	uint8_t			*res;	/* slots * 2 * pkt_sz, the kept results */

	uint32_t		*comp;	/* versions completed in this batch */
	uint32_t		ncomp;
	uint32_t		*ans_ver;	/* retransmissions to answer */
	struct xina_hdr		*ans_hdr;
	struct sockaddr_in	*ans_to;
	uint32_t		nans;

	struct sw_up		*up;	/* NULL: the top of its job */

	uint64_t		stat[XINA_STAT_MAX];
	uint64_t		gstat[XINA_GSTAT_MAX];
	uint64_t		rx_dgrams, rx_calls, tx_dgrams, tx_calls, tx_err;
};

/* A sendmmsg batch under construction. */
struct sw_txb {
	struct mmsghdr	msg[SW_TX_BATCH];
	struct iovec	iov[SW_TX_BATCH * SW_GSO_MAX];
	char		cbuf[SW_TX_BATCH][CMSG_SPACE(sizeof(uint16_t))];
	unsigned int	nmsg, niov;
};

/* xina_swagg.c */
uint64_t sw_now_ns(void);
int sw_parse_u64(const char *opt, const char *s, uint64_t max, uint64_t *out);
int sw_parse_addr(const char *opt, const char *s, struct sockaddr_in *sa);
void sw_complete(struct swagg *sw, uint32_t vi, const struct xina_hdr *h);
void sw_complete_net(struct swagg *sw, uint32_t vi, const struct xina_hdr *h,
		     const uint32_t *in, uint64_t nh);
void sw_flush(struct swagg *sw);
struct msghdr *sw_tx_msg(struct swagg *sw, struct sw_txb *t,
			 struct sockaddr_in *to);
void sw_tx_gso(struct sw_txb *t, struct msghdr *mh, size_t seg);
void sw_tx_send(struct swagg *sw, struct sw_txb *t);

/* xina_swagg_up.c: the rack agent's uplink */
int sw_up_setup(struct swagg *sw);
int sw_up_join(struct swagg *sw);
void sw_up_partial(struct swagg *sw, uint32_t vi, const struct xina_hdr *h);
void sw_up_again(struct swagg *sw, uint32_t vi);
bool sw_up_packet(struct swagg *sw, const uint8_t *p, size_t len,
		  const struct sockaddr_in *from);
void sw_up_flush(struct swagg *sw, struct sw_txb *t);
int sw_up_timers(struct swagg *sw);
void sw_up_print(const struct swagg *sw, bool json);

#endif /* XINA_SWAGG_H */
