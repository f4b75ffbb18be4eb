# SPDX-License-Identifier: GPL-2.0
#
# make bench [QUICK=1] [LINK_RATE=BITS/S]: benchmarks of xina against its
# peers (OpenMPI, Gloo, the user-space aggregator), CPU-bound and with every
# worker link limited to LINK_RATE, see Documentation/benchmarks.md.
# Results go to $(O)/bench/.  Not part of "make check": timings never gate.

BENCH_BIN := $(O)/bench/bin
BENCH_SRC := user/bench
BENCH_PROGS := $(BENCH_BIN)/xina-nsrun $(BENCH_BIN)/xina-bench-mpi \
	       $(BENCH_BIN)/xina-bench-addloop $(BENCH_BIN)/xina-bench-addloop-simd \
	       $(BENCH_BIN)/xina-bench-fastpath $(BENCH_BIN)/xina-bench-xina \
	       $(BENCH_BIN)/xina-bench-packloop
BENCH_CFLAGS := $(CFLAGS) $(XCFLAGS)

.PHONY: bench bench-progs

# The dependencies first (OpenMPI, torch, gnuplot; scikit-learn for the
# training runs), then what "all" builds and libxina-mpi.so (MPI programs
# through the switch), then the run: a recipe, so that the order holds
# under make -j too.
bench:
	$(Q)scripts/deps.sh build bench python
	$(Q)$(MAKE) --no-print-directory all bench-progs mpi
	$(Q)QUICK=$(QUICK) LINK_RATE=$(LINK_RATE) scripts/bench/run.sh

bench-progs: $(BENCH_PROGS)

$(BENCH_BIN)/bench_util.o: $(BENCH_SRC)/bench_util.c $(BENCH_SRC)/bench_util.h
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BENCH_CFLAGS) -c -o $@ $<

$(BENCH_BIN)/xina-nsrun: $(BENCH_SRC)/nsrun.c
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BENCH_CFLAGS) -o $@ $< -lpthread

$(BENCH_BIN)/xina-bench-mpi: $(BENCH_SRC)/mpi_allreduce.c $(BENCH_BIN)/bench_util.o
	$(Q)mkdir -p $(@D)
	$(Q)mpicc $(BENCH_CFLAGS) -o $@ $^

# The add loop twice: scalar (what BPF, without SIMD, could reach at best)
# and vectorised for this CPU (what a kfunc with kernel_fpu_begin could).
$(BENCH_BIN)/xina-bench-addloop: $(BENCH_SRC)/addloop.c $(BENCH_BIN)/bench_util.o
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BENCH_CFLAGS) -fno-tree-vectorize -o $@ $^

$(BENCH_BIN)/xina-bench-addloop-simd: $(BENCH_SRC)/addloop.c $(BENCH_BIN)/bench_util.o
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BENCH_CFLAGS) -O3 -march=native -DADDLOOP_NAME='"addloop_simd"' -o $@ $^

$(BENCH_BIN)/xina-bench-fastpath: $(BENCH_SRC)/fastpath.c $(BENCH_BIN)/bench_util.o \
				  $(O)/bpf/xina.skel.h
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BENCH_CFLAGS) -o $@ $(filter %.c %.o,$^) -lbpf -lelf -lz

$(BENCH_BIN)/xina-bench-xina: $(BENCH_SRC)/xina_bench.c $(BENCH_BIN)/bench_util.o $(O)/libxina.a
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BENCH_CFLAGS) -o $@ $^ $(LIBXINA_LIBS)

# The worker's element loops per type (user/bench/packloop.c), on
# libxina_pack.c built with libxina's flags for it (user/lib/build.mk).
$(BENCH_BIN)/xina-bench-packloop: $(BENCH_SRC)/packloop.c user/lib/libxina_pack.c \
				  user/lib/libxina_pack512.c \
				  $(BENCH_BIN)/bench_util.o $(LIBXINA_HDRS)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BENCH_CFLAGS) -O3 -ffp-contract=off -o $@ \
		$(filter %.c %.o,$^) -lm
