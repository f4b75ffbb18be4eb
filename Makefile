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
#   make install    xinactl (+ xinactl.8, xina.service), libxina (+ libxina.pc,
#                   libxina.3), then ldconfig; xina.ko: install-module
#   make uninstall  what make install put there (not /etc/xina unless empty),
#                   and the directories it leaves empty of xina's
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
	   -I$(ROOT)/include/uapi -I$(O) -I$(ROOT)/user/lib -I$(ROOT)/user/common \
	   -I$(ROOT)/bpf

DEPS_STAMP := $(O)/.deps-build

.PHONY: all deps clean demo check check-host check-vm bench module install

all: bpf user $(O)/dist/xina.service

$(DEPS_STAMP): scripts/deps.sh
	$(Q)mkdir -p $(O)
	$(Q)scripts/deps.sh build
	$(Q)touch $@

deps: $(DEPS_STAMP)

-include bpf/build.mk
-include user/lib/build.mk
-include user/tools/build.mk
-include user/xinactl/build.mk
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
# with it: its manual, and xina.service, which applies
# $(SYSCONFDIR)/xina/xina.conf at boot (see xinactl(8)).  The unit goes to
# systemd's directory of the local administrator's units; "make install"
# does not enable it.  $(SYSCONFDIR)/xina (configuration and key files) is
# the administrator's: uninstall leaves it (removes it only when empty).
PREFIX ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
UNITDIR ?= /etc/systemd/system
# libxina: its pkg-config file where Debian's pkg-config looks for
# $(PREFIX) (/usr/local/lib/pkgconfig is on its path), libxina(3) and one
# man3 page per function that points at it.
PKGCONFIGDIR ?= $(PREFIX)/lib/pkgconfig
LIBXINA_MAN_LINKS := $(shell sed -n 's/^[[:space:]]*\(xina_[a-z0-9_]*\);.*/\1/p' \
			user/lib/libxina.map)
INSTALLED := $(SBINDIR)/xinactl $(PREFIX)/bin/xina-allreduce \
	     $(PREFIX)/bin/xina-swagg $(PREFIX)/lib/libxina.a \
	     $(PREFIX)/lib/libxina.so.0 $(PREFIX)/lib/libxina.so \
	     $(PREFIX)/include/libxina.h $(PREFIX)/include/linux/xina.h \
	     $(PKGCONFIGDIR)/libxina.pc $(MANDIR)/man3/libxina.3 \
	     $(LIBXINA_MAN_LINKS:%=$(MANDIR)/man3/%.3) \
	     $(MANDIR)/man8/xinactl.8 $(UNITDIR)/xina.service \
	     $(SYSCONFDIR)/xina/xina.conf.example

.PHONY: uninstall

# The unit with the paths of an install (built by "all" with the default
# ones, written again by "install" with that install's).
XINA_UNIT_SED := sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g'
$(O)/dist/xina.service: dist/xina.service.in Makefile
	$(Q)mkdir -p $(@D)
	$(Q)$(XINA_UNIT_SED) $< > $@.tmp && mv $@.tmp $@

# The dynamic linker's cache, after an install or uninstall on this
# system (not into a DESTDIR): libxina.so.0 is found (or forgotten) by
# name.  A PREFIX whose lib is not on the linker's path is said so.
LIBXINA_LDCONFIG = if [ -z "$(DESTDIR)" ]; then \
		echo "ldconfig"; ldconfig || exit; \
		if [ -e $(PREFIX)/lib/libxina.so.0 ] && \
		   ! ldconfig -p | grep -qF "=> $(PREFIX)/lib/libxina.so.0"; then \
			echo "  $(PREFIX)/lib is not on the dynamic linker's path:" \
			     "add it to /etc/ld.so.conf.d/ and run ldconfig"; \
		fi; \
	fi

install: all
	install -D -m 0755 $(O)/xinactl $(DESTDIR)$(SBINDIR)/xinactl
	install -D -m 0755 $(O)/xina-allreduce $(DESTDIR)$(PREFIX)/bin/xina-allreduce
	install -D -m 0755 $(O)/xina-swagg $(DESTDIR)$(PREFIX)/bin/xina-swagg
	install -D -m 0644 $(O)/libxina.a $(DESTDIR)$(PREFIX)/lib/libxina.a
	install -D -m 0755 $(O)/libxina.so.0 $(DESTDIR)$(PREFIX)/lib/libxina.so.0
	ln -sf libxina.so.0 $(DESTDIR)$(PREFIX)/lib/libxina.so
	install -D -m 0644 user/lib/libxina.h $(DESTDIR)$(PREFIX)/include/libxina.h
	install -D -m 0644 include/uapi/linux/xina.h \
		$(DESTDIR)$(PREFIX)/include/linux/xina.h
	install -d $(DESTDIR)$(PKGCONFIGDIR)
	$(LIBXINA_PC_SED) user/lib/libxina.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/libxina.pc
	chmod 0644 $(DESTDIR)$(PKGCONFIGDIR)/libxina.pc
	install -D -m 0644 man/libxina.3 $(DESTDIR)$(MANDIR)/man3/libxina.3
	$(Q)for f in $(LIBXINA_MAN_LINKS); do \
		echo ".so man3/libxina.3" > $(DESTDIR)$(MANDIR)/man3/$$f.3 && \
		chmod 0644 $(DESTDIR)$(MANDIR)/man3/$$f.3 || exit; done
	install -D -m 0644 man/xinactl.8 $(DESTDIR)$(MANDIR)/man8/xinactl.8
	install -d $(DESTDIR)$(UNITDIR)
	$(XINA_UNIT_SED) dist/xina.service.in > $(DESTDIR)$(UNITDIR)/xina.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/xina.service
	install -d -m 0700 $(DESTDIR)$(SYSCONFDIR)/xina
	install -m 0644 dist/xina.conf.example \
		$(DESTDIR)$(SYSCONFDIR)/xina/xina.conf.example
	$(Q)if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
		systemctl daemon-reload; fi
	$(Q)$(LIBXINA_LDCONFIG)
	@echo "  xina.service: put the configuration in $(SYSCONFDIR)/xina/xina.conf, then 'systemctl enable --now xina'"

uninstall:
	$(Q)if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
		systemctl disable --now xina.service 2>/dev/null || true; fi
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	$(Q)if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
		systemctl daemon-reload; fi
	$(Q)$(LIBXINA_LDCONFIG)
	$(Q)for d in $(PREFIX)/include/linux $(PKGCONFIGDIR) $(MANDIR)/man3 \
		     $(MANDIR)/man8 $(SYSCONFDIR)/xina; do \
		rmdir $(DESTDIR)$$d 2>/dev/null || true; done
	$(Q)if [ -d $(DESTDIR)$(SYSCONFDIR)/xina ]; then \
		echo "  left $(DESTDIR)$(SYSCONFDIR)/xina (configuration, key files) as it is"; fi

clean:
	rm -rf $(O)
