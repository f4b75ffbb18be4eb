# SPDX-License-Identifier: GPL-2.0
#
# user/tools: xina-allreduce (the driver of the demo, the tests and the
# benchmarks, over libxina) and xina-swagg (the same protocol as the
# switch, in a user-space aggregator; with --up, a rack agent whose uplink
# is xina_swagg_up.c).

$(O)/xina-allreduce: $(O)/user/tools/xina_allreduce.o $(O)/libxina.a
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LIBXINA_LIBS)

$(O)/xina-swagg: $(O)/user/tools/xina_swagg.o $(O)/user/tools/xina_swagg_up.o \
		 $(O)/user/common/xina_names.o \
		 $(O)/user/common/xina_keyfile.o $(O)/user/common/xina_nh.o
	$(Q)$(CC) $(CFLAGS) -o $@ $^

$(O)/user/tools/xina_swagg.o $(O)/user/tools/xina_swagg_up.o: \
	user/tools/xina_swagg.h bpf/xina_lanes.h bpf/xina_rtt.h \
	user/common/xina_nh.h user/common/xina_clock.h

# xina-swagg's element loops (SW_CLONES in xina_swagg.c): vectorised.
$(O)/user/tools/xina_swagg.o: XCFLAGS += -O3

user: $(O)/xina-allreduce $(O)/xina-swagg
