// SPDX-License-Identifier: GPL-2.0
/*
 * xina.ko: in-network aggregation (allreduce) on a Linux box.
 *
 * The module owns the slot memory of aggregation jobs, configured over the
 * generic netlink family "xina" (netlink.c), shown read-only in
 * /sys/kernel/xina (sysfs.c), and reached by the XDP fast path through
 * kfuncs (kfunc.c).  See Documentation/module.rst.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <net/genetlink.h>
#include <linux/moduleparam.h>
#include <linux/rcupdate.h>

#include "xina.h"

unsigned long xina_mem_limit __read_mostly = 256UL << 20;
module_param_named(mem_limit, xina_mem_limit, ulong, 0644);
MODULE_PARM_DESC(mem_limit,
		 "bytes of slot memory all jobs together may hold (default 256 MiB); lowering it does not shrink existing jobs");

static int __init xina_init(void)
{
	int err;

	err = xina_sysfs_init();
	if (err)
		return err;

	/* Before netlink: the handlers look jobs up per netns. */
	err = xina_pernet_init();
	if (err)
		goto err_sysfs;

	err = xina_kfunc_init();
	if (err)
		goto err_pernet;

	/* Last: from here on user space can create jobs. */
	err = xina_genl_init();
	if (err)
		goto err_kfunc;

	pr_info("version %s loaded\n", XINA_VERSION);
	return 0;

	/* The kfunc sets have no unregistration; they go with the module. */
err_kfunc:
	xina_kfunc_exit();
err_pernet:
	xina_pernet_exit();
err_sysfs:
	xina_sysfs_exit();
	return err;
}

static void __exit xina_exit(void)
{
	xina_genl_exit();
	/* Deletes the jobs of every netns. */
	xina_pernet_exit();
	/* Wait for the call_rcu() that free the deleted jobs. */
	rcu_barrier();
	xina_kfunc_exit();
	xina_sysfs_exit();
}

module_init(xina_init);
module_exit(xina_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("xina: in-network allreduce aggregation with XDP");
MODULE_AUTHOR("The xina developers");
MODULE_VERSION(XINA_VERSION);
MODULE_ALIAS_GENL_FAMILY(XINA_GENL_NAME);
