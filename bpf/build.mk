# SPDX-License-Identifier: GPL-2.0
#
# bpf/: the XDP fast path and its libbpf skeletons.
#
#   $(O)/bpf/xina.bpf.o       xina_xdp, xina_fanout (map backend)
#   $(O)/bpf/xina_wkr.bpf.o   xina_wkr, libxina's AF_XDP redirect (embedded)
#   $(O)/bpf/*.skel.h         their libbpf skeletons (bpftool gen skeleton)
#
# -mcpu=v3: atomic fetch-add with a result (meta->done), supported since 5.1.

BPF_OUT := $(O)/bpf
BPF_CFLAGS := -O2 -g -target bpf -mcpu=v3 -Wall -Werror \
	      -I/usr/include/x86_64-linux-gnu -I$(ROOT)/include/uapi \
	      -I$(ROOT)/bpf
BPF_OBJS := $(BPF_OUT)/xina.bpf.o \
	    $(BPF_OUT)/xina_wkr.bpf.o

.PHONY: bpf
bpf: $(BPF_OBJS) $(BPF_OUT)/xina.skel.h \
     $(BPF_OUT)/xina_wkr.skel.h

$(BPF_OUT)/%.bpf.o: bpf/%.bpf.c bpf/xina_maps.h bpf/xina_auth.h bpf/xina_join.h \
		    bpf/xina_lanes.h bpf/xina_rtt.h \
		    include/uapi/linux/xina.h \
		    | $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	@echo "  BPF     $@"
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BPF_OUT)/%.skel.h: $(BPF_OUT)/%.bpf.o
	@echo "  GENSKEL $@"
	$(Q)$(BPFTOOL) gen skeleton $< name $* > $@.tmp || \
		{ rm -f $@.tmp; exit 1; }
	$(Q)mv $@.tmp $@
