# SPDX-License-Identifier: GPL-2.0
#
# user/lib: libxina, the worker library (libxina.a, libxina.so.0).
#
# libxina_xsk.c (AF_XDP) embeds bpf/xina_wkr.bpf.c through its skeleton and
# needs libxdp (and libbpf under it): whoever links libxina.a links
# $(LIBXINA_LIBS) too.  Objects of user/X/f.c go to $(O)/user/X/f.o.

.PHONY: user

LIBXINA_SRCS := $(addprefix user/lib/,libxina.c libxina_io.c libxina_join.c libxina_f32.c \
		  libxina_pack.c libxina_xsk.c libxina_rtnl.c) \
		user/common/xina_keyfile.c
LIBXINA_OBJS := $(LIBXINA_SRCS:user/%.c=$(O)/user/%.o)
LIBXINA_PIC  := $(LIBXINA_SRCS:user/%.c=$(O)/user/%.pic.o)
LIBXINA_HDRS := $(addprefix user/lib/,libxina.h libxina_int.h libxina_rtnl.h) \
		user/common/xina_keyfile.h bpf/xina_auth.h include/uapi/linux/xina.h
LIBXINA_LIBS := -lxdp -lbpf -lelf -lz -lm

$(O)/user/lib/libxina_xsk.o $(O)/user/lib/libxina_xsk.pic.o: $(O)/bpf/xina_wkr.skel.h

# The element loops (see libxina_pack.c): vectorised, never contracted.
$(O)/user/lib/libxina_pack.o $(O)/user/lib/libxina_pack.pic.o: \
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

user: $(O)/libxina.a $(O)/libxina.so
