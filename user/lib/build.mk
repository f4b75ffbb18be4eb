# SPDX-License-Identifier: GPL-2.0
#
# user/lib: libxina, the worker library (libxina.a, libxina.so.0).
#
# libxina_xsk.c (AF_XDP) embeds bpf/xina_wkr.bpf.c through its skeleton and
# needs libxdp (and libbpf under it): whoever links libxina.a links
# $(LIBXINA_LIBS) too.  Objects of user/X/f.c go to $(O)/user/X/f.o.
#
# The API is what libxina.h declares LIBXINA_API, and libxina.map lists
# exactly that (checked here, in $(O)/libxina.syms): libxina.so.0 exports
# those names at version LIBXINA_0 and nothing else, and libxina.a is one
# relocatable object in which every other symbol is local, so that
# libxina's internals (xina_log, xina_keyfile_read, ...) can never clash
# with a program's own symbols, statically linked or not.

.PHONY: user

LIBXINA_SRCS := $(addprefix user/lib/,libxina.c libxina_io.c libxina_join.c libxina_f32.c \
		  libxina_pack.c libxina_pack512.c libxina_type.c libxina_xsk.c libxina_rtnl.c libxina_req.c \
		  libxina_ring.c libxina_fallback.c libxina_sparse.c) \
		user/common/xina_keyfile.c user/common/xina_nh.c
LIBXINA_OBJS := $(LIBXINA_SRCS:user/%.c=$(O)/user/%.o)
LIBXINA_PIC  := $(LIBXINA_SRCS:user/%.c=$(O)/user/%.pic.o)
LIBXINA_HDRS := $(addprefix user/lib/,libxina.h libxina_int.h libxina_rtnl.h libxina_ring.h) bpf/xina_lanes.h \
		bpf/xina_rtt.h \
		user/common/xina_keyfile.h user/common/xina_nh.h user/common/xina_clock.h bpf/xina_auth.h include/uapi/linux/xina.h
LIBXINA_LIBS := -lxdp -lbpf -lelf -lz -lm -lpthread
OBJCOPY ?= objcopy

$(O)/user/lib/libxina_xsk.o $(O)/user/lib/libxina_xsk.pic.o: $(O)/bpf/xina_wkr.skel.h

# The element loops (see libxina_pack.c): vectorised, never contracted.
$(O)/user/lib/libxina_pack.o $(O)/user/lib/libxina_pack.pic.o \
$(O)/user/lib/libxina_pack512.o $(O)/user/lib/libxina_pack512.pic.o: \
	XCFLAGS += -O3 -ffp-contract=off
# NH of every packet sent and received (user/common/xina_nh.c).
$(O)/user/common/xina_nh.o $(O)/user/common/xina_nh.pic.o: XCFLAGS += -O3

$(O)/user/%.o: user/%.c $(LIBXINA_HDRS) $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(XCFLAGS) -c -o $@ $<

$(O)/user/%.pic.o: user/%.c $(LIBXINA_HDRS) $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(XCFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<

# The public names, one a line, once libxina.map and libxina.h agree.
$(O)/libxina.syms: user/lib/libxina.map user/lib/libxina.h
	$(Q)mkdir -p $(@D)
	$(Q)sed -n 's/^[[:space:]]*\(xina_[a-z0-9_]*\);.*/\1/p' \
		user/lib/libxina.map | sort > $@.map
	$(Q)sed -n 's/^LIBXINA_API[^(]*[ *]\(xina_[a-z0-9_]*\)(.*/\1/p' \
		user/lib/libxina.h | sort > $@.hdr
	$(Q)if ! cmp -s $@.map $@.hdr; then \
		echo "user/lib/libxina.map and the LIBXINA_API functions of user/lib/libxina.h differ" \
		     "(<: only in the map, >: only in the header):" >&2; \
		diff $@.map $@.hdr | grep '^[<>]' >&2; \
		rm -f $@.map $@.hdr; exit 1; \
	fi
	$(Q)rm -f $@.hdr && mv $@.map $@

# One object, linked together first, then everything but the API made
# local (objcopy leaves undefined references, to libxdp and the rest,
# as they are).
$(O)/libxina.a: $(LIBXINA_OBJS) $(O)/libxina.syms
	$(Q)rm -f $@ $(O)/user/lib/libxina-all.o
	$(Q)$(LD) -r -o $(O)/user/lib/libxina-all.o $(LIBXINA_OBJS)
	$(Q)$(OBJCOPY) --keep-global-symbols=$(O)/libxina.syms \
		$(O)/user/lib/libxina-all.o
	$(Q)$(AR) rcs $@ $(O)/user/lib/libxina-all.o

# Hidden visibility and the version script: LIBXINA_API only, versioned.
$(O)/libxina.so.0: $(LIBXINA_PIC) user/lib/libxina.map $(O)/libxina.syms
	$(Q)$(CC) $(CFLAGS) -shared -Wl,-soname,libxina.so.0 \
		-Wl,--version-script=user/lib/libxina.map -Wl,-z,defs \
		-o $@ $(LIBXINA_PIC) $(LIBXINA_LIBS)

$(O)/libxina.so: $(O)/libxina.so.0
	$(Q)ln -sf libxina.so.0 $@

# libxina.pc with the default PREFIX; "make install" writes it again with
# its own (LIBXINA_PC_SED, as the unit's paths).
XINA_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"$$/\1/p' dkms.conf)
LIBXINA_PC_SED = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(XINA_VERSION)|g'
$(O)/libxina.pc: user/lib/libxina.pc.in dkms.conf Makefile
	$(Q)mkdir -p $(@D)
	$(Q)$(LIBXINA_PC_SED) $< > $@.tmp && mv $@.tmp $@

user: $(O)/libxina.a $(O)/libxina.so $(O)/libxina.pc
