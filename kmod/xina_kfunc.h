/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-3-Clause) */
/*
 * The kfuncs xina.ko registers for BPF programs, shared by the module
 * (kmod/kfunc.c) and the fast path that calls them.  Not ABI: kfuncs are
 * not stable, the BPF object and xina.ko are versioned together.
 *
 * For XDP programs:
 *
 * int xina_kf_contrib(struct xdp_md *ctx, __u32 off, __be32 saddr,
 *		       __be16 sport)
 *
 *	The XDP program has parsed Ethernet, IPv4 (no options) and UDP and
 *	found a xina packet whose struct xina_hdr starts @off bytes after
 *	ctx->data, in the frame's first buffer; the packet came from
 *	@saddr:@sport.  The elements may run on into further buffers of a
 *	multi-buffer frame.  The module checks the header (wire version,
 *	type, flags, weight, length), looks the job up in the netns of the
 *	receiving device, checks key, member, ranges and op, learns where
 *	the member is (struct xina_kf_member), and adds the contribution
 *	into the job's slot memory, counting each outcome in the job's
 *	counters (enum xina_stat).  Returns enum xina_kf_verdict.  On
 *	XINA_KF_RESULT and XINA_KF_ANSWER the module has rewritten the packet
 *	in place into the XINA_T_RESULT to send: type, exp, aux (the MAX of
 *	the round's), tag and the elements; addresses and ports are left to
 *	the TC fan-out.
 *
 *	A XINA_T_JOIN (a bare header, the frame nothing else, @off right
 *	after Ethernet, IPv4 without options and UDP) is answered in place
 *	with its XINA_T_JOIN_REPLY (include/uapi/linux/xina.h, "Join
 *	handshake"): XINA_KF_ANSWER, to be sent to the member as an answer
 *	is (the TC fan-out), or XINA_KF_BOUNCE, a BAD_KEY refusal for a
 *	member whose location is not known: the module wrote the reply's
 *	header and left the rest of the frame as it came, the XDP program
 *	sends it back to the sender out of the ingress port (bpf/xina.bpf.c's
 *	xina_bare() and xina_bounce(), those of the map backend).  A join
 *	the switch does not answer (stale, or failing the member check) is
 *	XINA_KF_DROP or XINA_KF_REJECT.
 *
 * int xina_kf_train(struct xdp_md *ctx, __u32 off, __u32 len,
 *		     __be32 saddr, __be16 sport)
 *
 *	One datagram of a worker's GSO train (UDP_SEGMENT), which a port in
 *	generic XDP mode hands the program as one frame: Ethernet, IPv4 and
 *	UDP headers, in the frame's first buffer (else XINA_KF_MALFORMED),
 *	then the datagrams back to back.  Its struct xina_hdr
 *	starts @off bytes after ctx->data, in any buffer of the frame, and
 *	the datagram is @len bytes long, its header included.  As
 *	xina_kf_contrib() for a contribution (no joins, no XINA_F_ZERO),
 *	but a retransmission to a completed round is a duplicate
 *	(XINA_KF_DROP): a train goes to every member whole, not to one.  On
 *	XINA_KF_RESULT the datagram is the result, in place.
 *
 * For TC programs (the fan-out of results):
 *
 * int xina_kf_member(struct __sk_buff *ctx, __u32 job, __u32 rank,
 *		      struct xina_kf_member *m)
 *
 *	Where member @rank of job @job (in the netns of the device the frame
 *	is on) is: 0 and *@m filled; -EINVAL @m is NULL; -ENOENT no such
 *	job; -ERANGE @rank is not below the job's workers; -ENODATA the rank
 *	was never seen (or has no address), so the switch does not know
 *	where to send its copy.
 *
 * void xina_kf_tx(struct __sk_buff *ctx, __u32 job, __u32 sent,
 *		   __u32 unknown)
 *
 *	Counts @sent copies of a result (XINA_STAT_TX) and @unknown copies
 *	not sent for want of a location (XINA_STAT_TX_UNKNOWN) in job @job.
 *
 * A BPF program declares them as "extern ... __ksym" with these
 * prototypes; it only loads while xina.ko (with its module BTF) is loaded.
 */
#ifndef _XINA_KFUNC_H
#define _XINA_KFUNC_H

/*
 * REJECT: failed the job's checks (key, member, ranges, op); counted, drop.
 * DROP: a member's packet that the round state drops (duplicate, stale,
 *	round or count out of range, mixed op); counted, drop.
 * ADDED: added, the round goes on; drop.
 * RESULT: the round completed; send the packet to every member.
 * ANSWER: a retransmission to a completed round, or a join's reply; send
 *	it to the member.
 * NO_JOB: well formed, but no such job: XINA_GSTAT_NO_JOB.
 * MALFORMED: XINA_GSTAT_MALFORMED.
 * BOUNCE: a join's BAD_KEY reply, to send back to the sender: XDP_TX
 *	once the XDP program has swapped the addresses.
 */
enum xina_kf_verdict {
	XINA_KF_REJECT = 0,
	XINA_KF_DROP = 1,
	XINA_KF_ADDED = 2,
	XINA_KF_RESULT = 3,
	XINA_KF_ANSWER = 4,
	XINA_KF_NO_JOB = 5,
	XINA_KF_MALFORMED = 6,
	XINA_KF_BOUNCE = 7,
};

/*
 * Where a member is, as the TC fan-out needs it: its address and UDP port,
 * the switch port it is behind, and the switch address and MAC it sends
 * to (results leave from those).  Same layout as struct xina_member of
 * bpf/xina_maps.h (the map backend's member entry).
 */
struct xina_kf_member {
	__be32	addr;
	__be16	port;		/* configured UDP port, 0: any */
	__be16	rport;		/* UDP port it sends from */
	__u32	ifindex;
	__be32	sw_addr;
	__u8	mac[6];
	__u8	sw_mac[6];
};

#endif /* _XINA_KFUNC_H */
