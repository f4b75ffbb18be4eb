/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-3-Clause) */
/*
 * Names of the counters, wire types and operators of include/uapi/linux/xina.h, as every tool prints
 * them (xinactl, xina-swagg) and as sysfs names its files: lower case, the
 * enum name without its prefix.  JSON keys are built from them: never
 * rename one.
 */
#ifndef XINA_NAMES_H
#define XINA_NAMES_H

/* "?" for a value this build does not know. */
const char *xina_stat_name(unsigned int stat);	/* enum xina_stat */
const char *xina_gstat_name(unsigned int gstat);	/* enum xina_gstat */
const char *xina_wire_dtype_name(unsigned int dtype);	/* enum xina_dtype */
const char *xina_wire_op_name(unsigned int op);	/* enum xina_op, on the wire */

#endif /* XINA_NAMES_H */
