# SPDX-License-Identifier: GPL-2.0
#
# user/: rules of the user-space pieces, included by the top-level Makefile.

.PHONY: user

# ---- libxina, xina-allreduce, xina-swagg -----------------------------------
# libxina_xsk.c (AF_XDP) embeds bpf/xina_wkr.bpf.c through its skeleton and
# needs libxdp (and libbpf under it): whoever links libxina.a links
# $(LIBXINA_LIBS) too.
LIBXINA_SRCS := user/libxina.c user/libxina_io.c user/libxina_f32.c \
		user/libxina_pack.c user/libxina_xsk.c user/libxina_rtnl.c \
		user/xina_keyfile.c
LIBXINA_OBJS := $(LIBXINA_SRCS:user/%.c=$(O)/user/%.o)
LIBXINA_PIC  := $(LIBXINA_SRCS:user/%.c=$(O)/user/%.pic.o)
LIBXINA_HDRS := user/libxina.h user/libxina_int.h user/libxina_rtnl.h \
		user/xina_keyfile.h bpf/xina_auth.h include/uapi/linux/xina.h
LIBXINA_LIBS := -lxdp -lbpf -lelf -lz -lm

$(O)/user/libxina_xsk.o $(O)/user/libxina_xsk.pic.o: $(O)/bpf/xina_wkr.skel.h

# The element loops (see libxina_pack.c): vectorised, never contracted.
$(O)/user/libxina_pack.o $(O)/user/libxina_pack.pic.o: \
	XCFLAGS += -O3 -ffp-contract=off

$(O)/user/%.o: user/%.c $(LIBXINA_HDRS) $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(XCFLAGS) -c -o $@ $<

$(O)/user/%.pic.o: user/%.c $(LIBXINA_HDRS) $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(XCFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<

$(O)/libxina.a: $(LIBXINA_OBJS)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

# Only the LIBXINA_API symbols are exported (hidden visibility otherwise).
$(O)/libxina.so.0: $(LIBXINA_PIC)
	$(Q)$(CC) $(CFLAGS) -shared -Wl,-soname,libxina.so.0 -o $@ $^ $(LIBXINA_LIBS)

$(O)/libxina.so: $(O)/libxina.so.0
	$(Q)ln -sf libxina.so.0 $@

$(O)/xina-allreduce: $(O)/user/xina_allreduce.o $(O)/libxina.a
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LIBXINA_LIBS)

$(O)/xina-swagg: $(O)/user/xina_swagg.o $(O)/user/xina_names.o \
		$(O)/user/xina_keyfile.o
	$(Q)$(CC) $(CFLAGS) -o $@ $^

# Negative tests of libxina and of the aggregators, run by selftests.
$(O)/xina-libtest: $(O)/user/xina_libtest.o $(O)/libxina.a
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LIBXINA_LIBS)

user: $(O)/libxina.a $(O)/libxina.so $(O)/xina-allreduce $(O)/xina-swagg \
      $(O)/xina-libtest
# ---- end of libxina, xina-allreduce, xina-swagg -----------------------------

# ---- xinactl ----------------------------------------------------------------
# The BPF object is embedded through its skeleton, so every xinactl object
# depends on it.  user/xinactl_nl.c (module backend over generic netlink,
# libmnl) is picked up once it exists.
XINACTL_SRCS := user/xinactl.c user/xinactl_job.c user/xinactl_dev.c \
		user/xinactl_stats.c user/xinactl_maps.c user/xinactl_conf.c \
		user/xina_json.c user/xina_names.c user/xina_keyfile.c \
		$(wildcard user/xinactl_nl.c)
XINACTL_OBJS := $(XINACTL_SRCS:user/%.c=$(O)/user/xinactl/%.o)
XINACTL_HDRS := user/xinactl.h user/xina_json.h user/xina_names.h bpf/xina_maps.h \
		bpf/xina_auth.h user/xina_keyfile.h \
		include/uapi/linux/xina.h $(O)/bpf/xina.skel.h
XINACTL_CFLAGS := $(if $(wildcard user/xinactl_nl.c),-DXINACTL_HAVE_NL)

$(O)/user/xinactl/%.o: user/%.c $(XINACTL_HDRS) $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(XCFLAGS) $(XINACTL_CFLAGS) -c -o $@ $<

$(O)/xinactl: $(XINACTL_OBJS)
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) -o $@ $^ -lbpf -lelf -lz -lmnl

user: $(O)/xinactl
# ---- end of xinactl ---------------------------------------------------------
