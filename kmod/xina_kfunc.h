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

enum xina_kf_verdict {
	XINA_KF_CONSUMED = 0,	/* added, or dropped and counted: XDP_DROP */
	XINA_KF_RESULT = 1,	/* slot completed: send to every member */
	XINA_KF_ANSWER = 2,	/* retransmission: send back to the sender */
	XINA_KF_NO_JOB = 3,	/* well formed, no such job: XINA_GSTAT_NO_JOB */
	XINA_KF_MALFORMED = 4,	/* XINA_GSTAT_MALFORMED */
};

#endif /* _XINA_KFUNC_H */
