/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-3-Clause) */
/*
 * The kfuncs xina.ko registers for XDP programs, shared by the module
 * (kmod/kfunc.c) and the BPF fast path that calls them.  Not ABI: kfuncs
 * are not stable, the BPF object and xina.ko are versioned together.
 *
 * int xina_kf_contrib(struct xdp_md *ctx, __u32 off, __be32 saddr,
 *		       __be16 sport)
 *
 *	The XDP program has parsed Ethernet, IPv4 and UDP and found a xina
 *	packet whose struct xina_hdr starts @off bytes after ctx->data; the
 *	packet came from @saddr:@sport.  The module checks the header (wire
 *	version, type, flags, weight, length), looks the job up in the netns
 *	of the receiving device, checks key, member, ranges and op, and adds
 *	the contribution into the job's slot memory, counting each outcome
 *	in the job's counters (enum xina_stat).  Returns enum xina_kf_verdict.
 *	On XINA_KF_RESULT and XINA_KF_ANSWER the module has rewritten the
 *	packet in place into the XINA_T_RESULT to send: type, exp and the
 *	elements; addresses and ports are left to the program.
 *
 * A BPF program declares it as an "extern ... __ksym" with this prototype;
 * it only loads while xina.ko (with its module BTF) is loaded.
 */
#ifndef _XINA_KFUNC_H
#define _XINA_KFUNC_H

/*
 * REJECT: failed the job's checks (key, member, ranges, op); counted, drop.
 * DROP: a member's packet that the round state drops (duplicate, stale,
 *	round or count out of range, mixed op); counted, drop.
 * ADDED: added, the round goes on; drop.
 * RESULT: the round completed; send the packet to every member.
 * ANSWER: a retransmission to a completed round; send it back.
 * NO_JOB: well formed, but no such job: XINA_GSTAT_NO_JOB.
 * MALFORMED: XINA_GSTAT_MALFORMED.
 */
enum xina_kf_verdict {
	XINA_KF_REJECT = 0,
	XINA_KF_DROP = 1,
	XINA_KF_ADDED = 2,
	XINA_KF_RESULT = 3,
	XINA_KF_ANSWER = 4,
	XINA_KF_NO_JOB = 5,
	XINA_KF_MALFORMED = 6,
};

/* A member's packet: the map backend learns where the member is. */
static inline int xina_kf_member(int verdict)
{
	return verdict >= XINA_KF_DROP && verdict <= XINA_KF_ANSWER;
}

#endif /* _XINA_KFUNC_H */
