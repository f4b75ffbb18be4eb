# SPDX-License-Identifier: GPL-2.0
#
# xina top-level Makefile.  Everything is built under $(O) (default build/).
#
#   make            bpf/ and user/ (installs Debian build deps if missing)
#   make demo       the main job: a verified 4-worker allreduce in a rack
#   make check      all selftests: host (BPF map backend) and VM (xina.ko)
#   make check-host / make check-vm   one half of it
#   make bench      benchmarks against the peers (QUICK=1 for a short run)
#   make module     xina.ko against Debian's 6.1 headers (with module BTF)
#   make install    xinactl, libxina, the BPF objects; xina.ko via dkms
#
# The pieces add their rules from */build.mk.

O ?= build
export O
ROOT := $(CURDIR)
V ?= 0
ifeq ($(V),0)
Q := @
else
Q :=
endif

CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
CFLAGS ?= -O2 -g
XCFLAGS := -Wall -Wextra -Wno-unused-parameter -std=gnu11 -I$(ROOT)/include \
	   -I$(ROOT)/include/uapi -I$(O) -I$(ROOT)/user -I$(ROOT)/bpf

DEPS_STAMP := $(O)/.deps-build

.PHONY: all deps clean demo check check-host check-vm bench module install

all: bpf user

$(DEPS_STAMP): scripts/deps.sh
	$(Q)mkdir -p $(O)
	$(Q)scripts/deps.sh build
	$(Q)touch $@

deps: $(DEPS_STAMP)

-include bpf/build.mk
-include user/build.mk
-include selftests/build.mk
-include kmod/build.mk
-include scripts/build.mk
-include user/python/build.mk
-include user/mpi/build.mk
-include scripts/train.mk

demo: all
	$(Q)scripts/demo.sh

# Both halves run, whatever the other did; the closing line adds up their
# counts of tests and checks ($(O)/check-{host,vm}.result: tests passed,
# failed, skipped, checks passed, failed, skipped).  A half that failed
# without a result (it could not build, or the VM could not run) or with
# no failed test in it counts as one failed test.  Exit status 1 when
# anything failed.
check:
	$(Q)rm -f $(O)/check-host.result $(O)/check-vm.result
	$(Q)host=0; vm=0; \
	$(MAKE) --no-print-directory check-host || host=$$?; \
	$(MAKE) --no-print-directory check-vm || vm=$$?; \
	for half in host:$$host vm:$$vm; do \
		r=$(O)/check-$${half%%:*}.result; \
		echo "$${half%%:*} $${half#*:} $$(cat $$r 2>/dev/null)"; \
	done | awk ' \
		NF != 8 { note = note sprintf("; %s: no result (exit %d)", $$1, $$2); \
			  tf++; next } \
		$$2 != 0 && $$4 == 0 { note = note sprintf("; %s: exit %d", $$1, $$2); \
			  tf++ } \
		{ tp += $$3; tf += $$4; ts += $$5; cp += $$6; cf += $$7; cs += $$8 } \
		END { printf "check: tests: %d passed, %d failed, %d skipped; " \
			     "checks: %d passed, %d failed, %d skipped%s\n", \
			     tp, tf, ts, cp, cf, cs, note; exit tf != 0 }'

# The host half: BPF map backend, on this kernel, in namespaces.
check-host: all selftests
	$(Q)rm -f $(O)/check-host.result
	$(Q)selftests/run.sh

# xinactl embeds the fast path (and xina_kf.bpf.o for the module backend);
PREFIX ?= /usr/local
install: all
	install -D -m 0755 $(O)/xinactl $(DESTDIR)$(PREFIX)/sbin/xinactl
	install -D -m 0755 $(O)/xina-allreduce $(DESTDIR)$(PREFIX)/bin/xina-allreduce
	install -D -m 0755 $(O)/xina-swagg $(DESTDIR)$(PREFIX)/bin/xina-swagg
	install -D -m 0644 $(O)/libxina.a $(DESTDIR)$(PREFIX)/lib/libxina.a
	install -D -m 0755 $(O)/libxina.so.0 $(DESTDIR)$(PREFIX)/lib/libxina.so.0
	ln -sf libxina.so.0 $(DESTDIR)$(PREFIX)/lib/libxina.so
	install -D -m 0644 user/libxina.h $(DESTDIR)$(PREFIX)/include/libxina.h
	install -D -m 0644 include/uapi/linux/xina.h \
		$(DESTDIR)$(PREFIX)/include/linux/xina.h

clean:
	rm -rf $(O)
