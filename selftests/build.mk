# SPDX-License-Identifier: GPL-2.0
#
# selftests/: C tests built to $(O)/selftests/, run by selftests/run.sh.
#
#   make selftests    build every C selftest
#
# Each test adds itself to SELFTESTS and gives its own rule below.

ST_OUT := $(O)/selftests
ST_LDLIBS := -lbpf -lelf -lz

# The C tests are written against the kernel's kselftest harness
# (kselftest_harness.h: TEST, FIXTURE, ASSERT_*/EXPECT_*, TAP output), taken
# from Debian's linux-source-6.1 as it is: only its two headers are
# unpacked, here, for the host's tests and the guest's (kmod/build.mk).
KSFT_DIR := $(O)/kselftest
KSFT_STAMP := $(KSFT_DIR)/.stamp
ST_CFLAGS := -I$(KSFT_DIR) -Wno-sign-compare

$(KSFT_STAMP): scripts/deps.sh
	$(Q)scripts/deps.sh test
	$(Q)mkdir -p $(KSFT_DIR)
	@echo "  UNTAR   kselftest_harness.h, kselftest.h (linux-source-6.1)"
	$(Q)tar -C $(KSFT_DIR) -xJf /usr/src/linux-source-6.1.tar.xz \
		--strip-components=4 \
		linux-source-6.1/tools/testing/selftests/kselftest_harness.h \
		linux-source-6.1/tools/testing/selftests/kselftest.h
	$(Q)touch $@

SELFTESTS :=

.PHONY: selftests

# xdp_pass: somebody else's XDP program, for tests of what xina does
# next to one (an object only, loaded by ip(8) or libbpf).
SELFTESTS += $(ST_OUT)/xdp_pass.bpf.o
$(ST_OUT)/xdp_pass.bpf.o: selftests/xdp_pass.bpf.c | $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	@echo "  BPF     $@"
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# xina_fastpath: the XDP fast path through BPF_PROG_TEST_RUN.
SELFTESTS += $(ST_OUT)/xina_fastpath
$(ST_OUT)/xina_fastpath: selftests/xina_fastpath.c $(KSFT_STAMP) \
			 selftests/xina_ref.h selftests/xina_log.h \
			 bpf/xina_maps.h bpf/xina_rtt.h \
			 include/uapi/linux/xina.h \
			 $(O)/bpf/xina.skel.h
	$(Q)mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(XCFLAGS) $(ST_CFLAGS) $< -o $@ $(ST_LDLIBS)

# xina_auth: SipHash, NH, the key derivation and key files in user space.
SELFTESTS += $(ST_OUT)/xina_auth
$(ST_OUT)/xina_auth: selftests/xina_auth.c $(KSFT_STAMP) bpf/xina_auth.h \
		     selftests/xina_log.h \
		     user/common/xina_keyfile.c user/common/xina_keyfile.h \
		     user/common/xina_nh.c user/common/xina_nh.h \
		     include/uapi/linux/xina.h
	$(Q)mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(XCFLAGS) $(ST_CFLAGS) $< user/common/xina_keyfile.c \
		user/common/xina_nh.c -o $@

# xina_pack: libxina's float32 and 16-bit float loops against the scheme's
# definition, built with libxina's flags for that file (user/lib/build.mk).
SELFTESTS += $(ST_OUT)/xina_pack
$(ST_OUT)/xina_pack: selftests/xina_pack.c $(KSFT_STAMP) selftests/xina_log.h \
		     user/lib/libxina_pack.c user/lib/libxina_pack512.c \
		     $(LIBXINA_HDRS)
	$(Q)mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(XCFLAGS) $(ST_CFLAGS) -O3 -ffp-contract=off $< \
		user/lib/libxina_pack.c user/lib/libxina_pack512.c -o $@ -lm

# xina_rtt: the round-trip estimator of the fast path's uplink, libxina and
# xina-swagg --up against RFC 6298 in double arithmetic.
SELFTESTS += $(ST_OUT)/xina_rtt
$(ST_OUT)/xina_rtt: selftests/xina_rtt.c $(KSFT_STAMP) bpf/xina_rtt.h
	$(Q)mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(XCFLAGS) $(ST_CFLAGS) $< -o $@ -lm

# xina_probe: numbered datagrams through an impaired link, for
# xina_loss.sh (netem's duplicates and reordering; no test of its own).
SELFTESTS += $(ST_OUT)/xina_probe
$(ST_OUT)/xina_probe: selftests/xina_probe.c
	$(Q)mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(XCFLAGS) $< -o $@

# xina_ringtest: one rank of libxina's host fallback ring, for
# xina_ring.sh; built with AddressSanitizer and UBSan (it parses what
# peers send).
SELFTESTS += $(ST_OUT)/xina_ringtest
$(ST_OUT)/xina_ringtest: selftests/xina_ringtest.c selftests/xina_ref.h \
			 user/lib/libxina_ring.c \
			 user/lib/libxina_ring.h bpf/xina_auth.h bpf/xina_lanes.h \
			 user/common/xina_keyfile.c user/common/xina_keyfile.h \
			 user/common/xina_nh.c user/common/xina_nh.h \
			 include/uapi/linux/xina.h
	$(Q)mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(XCFLAGS) -fsanitize=address,undefined \
		-fno-sanitize-recover=all -fno-omit-frame-pointer -o $@ $< \
		user/lib/libxina_ring.c user/common/xina_keyfile.c \
		user/common/xina_nh.c

# xina-swagg with AddressSanitizer: swagg_e2e.sh gives it bad command
# lines, and a write out of bounds is a failure rather than luck.
SELFTESTS += $(ST_OUT)/xina-swagg-asan
$(ST_OUT)/xina-swagg-asan: user/tools/xina_swagg.c user/tools/xina_swagg_up.c \
			   user/tools/xina_swagg.h bpf/xina_rtt.h \
			   user/common/xina_names.c \
			   user/common/xina_keyfile.c user/common/xina_keyfile.h \
			   user/common/xina_names.h user/common/xina_nh.c \
			   user/common/xina_nh.h include/uapi/linux/xina.h
	$(Q)mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(XCFLAGS) -fsanitize=address -fno-omit-frame-pointer \
		-o $@ user/tools/xina_swagg.c user/tools/xina_swagg_up.c \
		user/common/xina_names.c user/common/xina_keyfile.c \
		user/common/xina_nh.c

# xina-libtest: negative tests of libxina and of the aggregators (a fake
# switch, bad calls), driven by xina_lib.sh and swagg_e2e.sh.  The key file
# reader is libxina's internal (local in libxina.a): linked on its own.
$(O)/xina-libtest: $(O)/selftests/xina_libtest.o $(O)/user/common/xina_keyfile.o \
		   $(O)/libxina.a
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LIBXINA_LIBS)

$(O)/selftests/xina_libtest.o: selftests/xina_libtest.c $(LIBXINA_HDRS) $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(XCFLAGS) -c -o $@ $<
selftests: $(O)/xina-libtest

# README's libxina example, taken from README.md (the first ```c block
# under "### libxina") as it is: built as C11 and as C++17 against
# $(O)/libxina.so.0, and statically against $(O)/libxina.a, warnings as
# errors.  xina_pkg.sh runs the three against xina-swagg.
README_EX := $(ST_OUT)/readme/sum
README_EX_FLAGS := -Wall -Wextra -pedantic -Werror -I$(ROOT)/user/lib \
		   -I$(ROOT)/include/uapi
CXX ?= g++
$(README_EX).c: README.md
	$(Q)mkdir -p $(@D)
	$(Q)awk '/^### libxina$$/ { h = 1; next } \
		 h && /^```c$$/ { c = 1; next } \
		 c && /^```$$/ { done = 1; exit } \
		 c { print } \
		 END { if (!done) { print "README.md: no ```c block under ### libxina" > "/dev/stderr"; exit 1 } }' \
		$< > $@.tmp && mv $@.tmp $@
$(README_EX).cc: $(README_EX).c
	$(Q)cp $< $@
$(README_EX)-c: $(README_EX).c user/lib/libxina.h $(O)/libxina.so
	@echo "  CC      $@"
	$(Q)$(CC) -std=c11 $(CFLAGS) $(README_EX_FLAGS) -o $@ $< \
		-L$(O) -lxina -Wl,-rpath,$(abspath $(O))
$(README_EX)-cxx: $(README_EX).cc user/lib/libxina.h $(O)/libxina.so
	@echo "  CXX     $@"
	$(Q)$(CXX) -std=c++17 $(CFLAGS) $(README_EX_FLAGS) -o $@ $< \
		-L$(O) -lxina -Wl,-rpath,$(abspath $(O))
$(README_EX)-static: $(README_EX).c user/lib/libxina.h $(O)/libxina.a
	@echo "  CC      $@"
	$(Q)$(CC) -std=c11 $(CFLAGS) $(README_EX_FLAGS) -static -o $@ $< \
		$(O)/libxina.a $(LIBXINA_LIBS)
SELFTESTS += $(README_EX)-c $(README_EX)-cxx $(README_EX)-static

# Rules of further tests go above this line.
selftests: $(SELFTESTS)
