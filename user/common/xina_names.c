// SPDX-License-Identifier: (GPL-2.0-only OR BSD-3-Clause)
/* Counter names shared by the user-space tools; see xina_names.h. */
#include <linux/xina.h>

#include "xina_names.h"

static const char *const stat_names[XINA_STAT_MAX] = {
	[XINA_STAT_RX]			= "rx",
	[XINA_STAT_CONTRIB]		= "contrib",
	[XINA_STAT_COMPLETE]		= "complete",
	[XINA_STAT_RETRANS_ANSWERED]	= "retrans_answered",
	[XINA_STAT_DUP]			= "dup",
	[XINA_STAT_STALE]		= "stale",
	[XINA_STAT_DROP_KEY]		= "drop_key",
	[XINA_STAT_DROP_MEMBER]		= "drop_member",
	[XINA_STAT_DROP_RANGE]		= "drop_range",
	[XINA_STAT_DROP_OP]		= "drop_op",
	[XINA_STAT_TX]			= "tx",
	[XINA_STAT_TX_UNKNOWN]		= "tx_unknown",
	[XINA_STAT_DROP_AUTH]		= "drop_auth",
	[XINA_STAT_DROP_EPOCH]		= "drop_epoch",
	[XINA_STAT_JOIN]		= "join",
	[XINA_STAT_JOIN_REFUSED]	= "join_refused",
	[XINA_STAT_JOIN_STALE]		= "join_stale",
	[XINA_STAT_EPOCH_NEW]		= "epoch_new",
};

static const char *const gstat_names[XINA_GSTAT_MAX] = {
	[XINA_GSTAT_MALFORMED]	= "malformed",
	[XINA_GSTAT_NO_JOB]	= "no_job",
	[XINA_GSTAT_PASS]	= "pass",
	[XINA_GSTAT_TRAIN]	= "train",
	[XINA_GSTAT_TRAIN_PART]	= "train_part",
	[XINA_GSTAT_TRAIN_REFUSED] = "train_refused",
	[XINA_GSTAT_TRAIN_ZERO]	= "train_zero",
};

const char *xina_stat_name(unsigned int stat)
{
	return stat < XINA_STAT_MAX && stat_names[stat] ? stat_names[stat] : "?";
}

const char *xina_gstat_name(unsigned int gstat)
{
	return gstat < XINA_GSTAT_MAX && gstat_names[gstat] ?
	       gstat_names[gstat] : "?";
}

static const char *const dtype_names[__XINA_DTYPE_MAX] = {
	[XINA_DTYPE_INT32]	= "int32",
	[XINA_DTYPE_INT8]	= "int8",
	[XINA_DTYPE_INT16]	= "int16",
	[XINA_DTYPE_INT64]	= "int64",
};

static const char *const op_names[__XINA_OP_WIRE_MAX] = {
	[XINA_OP_SUM]	= "sum",
	[XINA_OP_MAX]	= "max",
	[XINA_OP_MIN]	= "min",
	[XINA_OP_AND]	= "and",
	[XINA_OP_OR]	= "or",
	[XINA_OP_XOR]	= "xor",
};

const char *xina_wire_dtype_name(unsigned int dtype)
{
	return dtype < __XINA_DTYPE_MAX && dtype_names[dtype] ?
	       dtype_names[dtype] : "?";
}

const char *xina_wire_op_name(unsigned int op)
{
	return op < __XINA_OP_WIRE_MAX && op_names[op] ? op_names[op] : "?";
}
