# SPDX-License-Identifier: GPL-2.0
#
# kmod/: xina.ko against Debian 12's kernels, 6.1 and 6.12, with module
# BTF, and the VM that tests it.
#
#   make module          $(O)/kmod/$(KVER)/xina.ko (W=1, module BTF, resolved
#                        BTF ids); KVER: an installed kernel, default the
#                        newest 6.1
#   make checkpatch      scripts/checkpatch.pl --strict over kmod/
#   make check-vm        boot each kernel of VM_KERNELS under qemu, run
#                        selftests/vm (VM_KERNELS="6.1 6.12" by default:
#                        kernel series or installed versions)
#   make install-module  xina.ko through dkms on this machine
#                        (DKMS_KVER=<kernel> for another than the running one)
#
# Debian's 6.1 headers ship neither vmlinux nor resolve_btfids, which
# kbuild needs for module BTF: vmlinux is extracted from the packaged
# vmlinuz and resolve_btfids is built from linux-source-6.1, both under
# $(O), and the two steps kbuild would do (pahole, resolve_btfids) are done
# here.  The 6.12 headers ship both (a BTF-only vmlinux), and kbuild does
# them itself.  The ELF vmlinux is extracted for every kernel: the VM boots
# it.

# The newest installed kernel of series $(1) (6.1 does not match 6.12).
kmod_kver = $(shell ls -d /lib/modules/$(1).*-amd64 2>/dev/null | sort -V | \
		    tail -1 | xargs -r basename)
ifeq ($(origin KVER),undefined)
KVER := $(call kmod_kver,6.1)
endif
VM_KERNELS ?= 6.1 6.12
export VM_KERNELS
KDIR ?= /lib/modules/$(KVER)/build
KMOD_OUT := $(O)/kmod/$(KVER)
KMOD_SRC := $(KMOD_OUT)/src
KMOD_LSRC := $(O)/linux-source
KMOD_DEPS := $(O)/.deps-vm
KMOD_FILES := Kbuild $(wildcard kmod/*.c kmod/*.h) kmod/Kbuild \
	      include/uapi/linux/xina.h bpf/xina_auth.h bpf/xina_join.h \
	      bpf/xina_lanes.h
RESOLVE_BTFIDS := $(KMOD_LSRC)/resolve_btfids/resolve_btfids
KMOD_VMLINUX := $(O)/vmlinux-$(KVER)
PAHOLE_FLAGS = $(shell PAHOLE=pahole \
		 $(KMOD_LSRC)/linux-source-6.1/scripts/pahole-flags.sh)

.PHONY: module checkpatch check-vm install-module

$(KMOD_DEPS): scripts/deps.sh
	$(Q)mkdir -p $(O)
	$(Q)scripts/deps.sh vm
	$(Q)touch $@

# Only what the build needs: scripts/ (checkpatch, extract-vmlinux,
# pahole-flags) and tools/ (resolve_btfids).
$(KMOD_LSRC)/.stamp: | $(KMOD_DEPS)
	$(Q)mkdir -p $(KMOD_LSRC)
	@echo "  UNTAR   linux-source-6.1 (scripts, tools)"
	$(Q)tar -C $(KMOD_LSRC) -xJf /usr/src/linux-source-6.1.tar.xz \
		linux-source-6.1/scripts linux-source-6.1/tools \
		linux-source-6.1/include linux-source-6.1/arch/x86/include \
		linux-source-6.1/Makefile
	$(Q)touch $@

$(RESOLVE_BTFIDS): $(KMOD_LSRC)/.stamp
	$(Q)mkdir -p $(@D)
	@echo "  BUILD   resolve_btfids"
	$(Q)$(MAKE) -s -C $(KMOD_LSRC)/linux-source-6.1/tools/bpf/resolve_btfids \
		OUTPUT=$(abspath $(@D))/ >/dev/null

$(KMOD_VMLINUX): $(KMOD_LSRC)/.stamp
	@echo "  EXTRACT $@"
	$(Q)$(KMOD_LSRC)/linux-source-6.1/scripts/extract-vmlinux \
		/boot/vmlinuz-$(KVER) > $@.tmp
	$(Q)mv $@.tmp $@

# Build in a copy under $(O): kbuild writes its objects next to the sources.
$(KMOD_OUT)/xina.ko: $(KMOD_FILES) $(RESOLVE_BTFIDS) $(KMOD_VMLINUX) \
		     | $(KMOD_DEPS)
	$(Q)test -n "$(KVER)" -a -d "$(KDIR)" || \
		{ echo "kmod: no headers for kernel '$(KVER)' (KDIR=$(KDIR))" >&2; exit 1; }
	$(Q)mkdir -p $(KMOD_SRC)/kmod $(KMOD_SRC)/include/uapi/linux $(KMOD_SRC)/bpf
	$(Q)cp Kbuild $(KMOD_SRC)/
	$(Q)cp kmod/Kbuild kmod/*.c kmod/*.h $(KMOD_SRC)/kmod/
	$(Q)cp include/uapi/linux/xina.h $(KMOD_SRC)/include/uapi/linux/
	$(Q)cp bpf/xina_auth.h bpf/xina_join.h bpf/xina_lanes.h $(KMOD_SRC)/bpf/
	$(Q)env -u O $(MAKE) -s -C $(KDIR) M=$(abspath $(KMOD_SRC)) W=1 O= modules \
		> $(KMOD_OUT)/build.log 2>&1 || \
		{ cat $(KMOD_OUT)/build.log; exit 1; }
	$(Q)! grep -v '^Skipping BTF generation' $(KMOD_OUT)/build.log
	$(Q)cp $(KMOD_SRC)/kmod/xina.ko $@.tmp
	$(Q)if ! readelf -S $@.tmp | grep -q ' \.BTF '; then \
		echo "  BTF     $@"; \
		LLVM_OBJCOPY=objcopy pahole -J $(PAHOLE_FLAGS) \
			--btf_base $(KMOD_VMLINUX) $@.tmp && \
		$(RESOLVE_BTFIDS) -b $(KMOD_VMLINUX) $@.tmp || exit 1; \
	fi
	$(Q)readelf -S $@.tmp | grep -q ' \.BTF_ids ' || \
		{ echo "kmod: $@ has no .BTF_ids: no kfunc would register" >&2; exit 1; }
	$(Q)mv $@.tmp $@

module: $(KMOD_OUT)/xina.ko

checkpatch: $(KMOD_LSRC)/.stamp
	$(Q)$(KMOD_LSRC)/linux-source-6.1/scripts/checkpatch.pl --strict \
		--no-tree -q --show-types \
		-f Kbuild kmod/Kbuild $(wildcard kmod/*.c kmod/*.h)
	@echo "  CHECKPATCH kmod/ clean"

# The VM half: checkpatch over kmod/ (one test of the half: the module in
# the style netdev asks for), then the guests, each whatever the other did;
# checkpatch's verdict is added to the guests' counts.
check-vm: $(KMOD_DEPS)
	$(Q)rm -f $(O)/check-vm.result
	$(Q)cp=0; vm=0; \
	$(MAKE) --no-print-directory checkpatch || cp=1; \
	scripts/vm.sh $(if $(VM_KERNELS),-K "$(VM_KERNELS)") || vm=$$?; \
	r=$(O)/check-vm.result; \
	if [ -s $$r ]; then \
		awk -v cp=$$cp '{ if (cp) $$2++; else $$1++; print }' $$r \
			> $$r.tmp && mv $$r.tmp $$r; \
	fi; \
	[ $$cp -eq 0 ] && exit $$vm; \
	echo "check-vm: checkpatch found style problems in kmod/ (make checkpatch)" >&2; \
	exit 1

# The fast path per packet, module backend against map backend, in the VM.
.PHONY: bench-vm
bench-vm: $(KMOD_DEPS) $(O)/bench/bin/xina-bench-fastpath
	$(Q)scripts/vm.sh -t 900 -k -K "$(KVER)" -- xina_bench.sh
	$(Q)grep -h '^# {' $(O)/vm/$(KVER)/console.log | sed 's/^# //' > $(O)/vm/bench.json
	@echo "  BENCH   $(O)/vm/bench.json"

# For an operator: the module through dkms (rebuilt on kernel updates).
DKMS_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf 2>/dev/null)
DKMS_DIR := $(DESTDIR)/usr/src/xina-$(DKMS_VERSION)

install-module:
	$(Q)command -v dkms >/dev/null || \
		{ echo "install-module: dkms not installed (apt-get install dkms)" >&2; exit 1; }
	$(Q)install -d $(DKMS_DIR)/kmod $(DKMS_DIR)/include/uapi/linux $(DKMS_DIR)/scripts \
		$(DKMS_DIR)/bpf
	$(Q)install -m 644 Kbuild dkms.conf $(DKMS_DIR)/
	$(Q)install -m 644 kmod/Kbuild kmod/*.c kmod/*.h $(DKMS_DIR)/kmod/
	$(Q)install -m 644 include/uapi/linux/xina.h $(DKMS_DIR)/include/uapi/linux/
	$(Q)install -m 644 bpf/xina_auth.h bpf/xina_join.h bpf/xina_lanes.h $(DKMS_DIR)/bpf/
	$(Q)install -m 755 scripts/dkms-btf.sh $(DKMS_DIR)/scripts/
	$(Q)dkms add xina/$(DKMS_VERSION) 2>/dev/null || true
	$(Q)dkms build xina/$(DKMS_VERSION) $(if $(DKMS_KVER),-k $(DKMS_KVER))
	$(Q)dkms install xina/$(DKMS_VERSION) $(if $(DKMS_KVER),-k $(DKMS_KVER))

# Programs the guest runs (selftests/vm), built here for the Debian guest.
VM_PROGS_OUT := $(O)/vm-progs
VM_CFLAGS := -O2 -g -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare \
	     -std=gnu11 \
	     -I$(ROOT)/include/uapi -I$(ROOT)/selftests/vm -I$(KSFT_DIR) \
	     -I$(ROOT)/user/common
# What the guest's C tests build on: xinactl's netlink client
# (user/common/xina_nl.c) and the kselftest harness (selftests/build.mk).
VM_TEST_DEPS := user/common/xina_nl.c user/common/xina_nl.h \
		selftests/vm/xnl.h $(KSFT_STAMP)
VM_PROGS := $(VM_PROGS_OUT)/xina_nl $(VM_PROGS_OUT)/xina_kfunc \
	    $(VM_PROGS_OUT)/xina_kfunc.bpf.o $(VM_PROGS_OUT)/xina_probe

.PHONY: vm-progs
# With the user-space tools the guest's end-to-end tests use.
vm-progs: $(VM_PROGS) $(O)/xinactl $(O)/xina-allreduce bpf \
	  $(O)/bpf/xina_kf.bpf.o

$(VM_PROGS_OUT)/xina_nl: selftests/vm/xina_nl.c $(VM_TEST_DEPS) \
			 include/uapi/linux/xina.h
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(VM_CFLAGS) -o $@ $< user/common/xina_nl.c -lmnl

$(VM_PROGS_OUT)/xina_kfunc: selftests/vm/xina_kfunc.c $(VM_TEST_DEPS) \
			    selftests/xina_ref.h \
			    kmod/xina_kfunc.h include/uapi/linux/xina.h \
			    $(O)/bpf/xina_kf.skel.h
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(VM_CFLAGS) -I$(O) -o $@ $< user/common/xina_nl.c \
		-lbpf -lelf -lz -lmnl

# The datagram probe of selftests/xina_loss.sh, for netem in the guest.
$(VM_PROGS_OUT)/xina_probe: selftests/xina_probe.c
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(VM_CFLAGS) -o $@ $<

$(VM_PROGS_OUT)/xina_kfunc.bpf.o: selftests/vm/xina_kfunc.bpf.c \
				  kmod/xina_kfunc.h include/uapi/linux/xina.h \
				  | $(KMOD_DEPS)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -O2 -g -target bpf -mcpu=v3 -Wall -Werror \
		-I/usr/include/x86_64-linux-gnu -I$(ROOT)/include/uapi \
		-c $< -o $@

# The fast path with the module backend: bpf/xina.bpf.c with -DXINA_KFUNC
# (kmod/xina_kf.bpf.h), and its skeleton under the same name "xina", so
# that it has the layout of the map backend's (same maps and programs) and
# xinactl can load either.
$(O)/bpf/xina_kf.bpf.o: bpf/xina.bpf.c bpf/xina_maps.h bpf/xina_auth.h bpf/xina_join.h \
			bpf/xina_lanes.h bpf/xina_rtt.h \
			kmod/xina_kf.bpf.h \
			kmod/xina_kf_tc.bpf.h kmod/xina_kfunc.h \
			include/uapi/linux/xina.h | $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	@echo "  BPF     $@"
	$(Q)$(CLANG) $(BPF_CFLAGS) -DXINA_KFUNC -I$(ROOT)/kmod -c $< -o $@

$(O)/bpf/xina_kf.skel.h: $(O)/bpf/xina_kf.bpf.o $(O)/bpf/xina.skel.h
	@echo "  GENSKEL $@"
	$(Q)$(BPFTOOL) gen skeleton $< name xina > $@.tmp || \
		{ rm -f $@.tmp; exit 1; }
	$(Q)for s in '/^struct xina {/,/^};/p' '/struct xina__rodata {/,/}/p'; do \
		sed -n "$$s" $(O)/bpf/xina.skel.h > $@.a; \
		sed -n "$$s" $@.tmp > $@.b; \
		cmp -s $@.a $@.b || { echo "$@: layout differs from xina.skel.h" >&2; \
			rm -f $@.a $@.b $@.tmp; exit 1; }; \
	done; rm -f $@.a $@.b
	$(Q)mv $@.tmp $@

# xinactl's module backend embeds the module-backend fast path.
$(O)/user/xinactl/xinactl_nl.o: $(O)/bpf/xina_kf.skel.h
