# SPDX-License-Identifier: GPL-2.0
#
# user/xinactl: the control tool, one file per object (jobs, devices, stats,
# the BPF maps of the map backend, the configuration file, the module
# backend over generic netlink through xina's one client,
# user/common/xina_nl.c, on libmnl).  The BPF object is embedded through
# its skeleton, so every xinactl object depends on it.  Its objects (the
# shared ones of user/common included) go to $(O)/user/xinactl/.

XINACTL_SRCS := $(addprefix user/xinactl/,xinactl.c xinactl_job.c \
		  xinactl_dev.c xinactl_stats.c xinactl_maps.c xinactl_conf.c \
		  xinactl_nl.c) \
		$(addprefix user/common/,xina_json.c xina_names.c xina_keyfile.c \
		  xina_nl.c)
XINACTL_OBJS := $(addprefix $(O)/user/xinactl/,$(notdir $(XINACTL_SRCS:.c=.o)))
XINACTL_HDRS := user/xinactl/xinactl.h user/common/xina_json.h \
		user/common/xina_names.h user/common/xina_keyfile.h \
		user/common/xina_nl.h user/common/xina_clock.h \
		bpf/xina_maps.h bpf/xina_auth.h bpf/xina_rtt.h \
		include/uapi/linux/xina.h \
		$(O)/bpf/xina.skel.h

$(O)/user/xinactl/%.o: user/xinactl/%.c $(XINACTL_HDRS) $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(XCFLAGS) -c -o $@ $<

$(O)/user/xinactl/%.o: user/common/%.c $(XINACTL_HDRS) $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(XCFLAGS) -c -o $@ $<

$(O)/xinactl: $(XINACTL_OBJS)
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) -o $@ $^ -lbpf -lelf -lz -lmnl

user: $(O)/xinactl
