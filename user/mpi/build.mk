# SPDX-License-Identifier: GPL-2.0
#
# user/mpi: libxina-mpi.so, MPI_Allreduce through xina for unmodified MPI
# programs (LD_PRELOAD; see the comment at the top of libxina_mpi.c).
# Built with OpenMPI's mpicc (scripts/deps.sh python installs it), found
# next to it by libxina.so.0 ($ORIGIN: build/ and the install directory).

.PHONY: mpi install-mpi uninstall-mpi

$(O)/libxina-mpi.so: user/mpi/libxina_mpi.c user/lib/libxina.h $(O)/libxina.so.0 \
		     $(DEPS_PYTHON)
	$(Q)mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)mpicc $(CFLAGS) $(XCFLAGS) -fPIC -shared -o $@ $< \
		-L$(O) -l:libxina.so.0 -Wl,-rpath,'$$ORIGIN'

mpi: $(O)/libxina-mpi.so
selftests: mpi

# Installed with the rest where OpenMPI's compiler is at hand.
ifneq ($(shell command -v mpicc 2>/dev/null),)
install: install-mpi
endif
install-mpi: $(O)/libxina-mpi.so
	install -D -m 0755 $(O)/libxina-mpi.so $(DESTDIR)$(PREFIX)/lib/libxina-mpi.so
uninstall: uninstall-mpi
uninstall-mpi:
	rm -f $(DESTDIR)$(PREFIX)/lib/libxina-mpi.so

# selftests/xina_mpi.sh runs ranks in the rack through xina-nsrun and
# xina-bench-mpi (the OpenMPI peer of the benchmarks) under the interposer.
$(BENCH_BIN)/xina-bench-mpi: | $(DEPS_PYTHON)
selftests: $(BENCH_BIN)/xina-nsrun $(BENCH_BIN)/xina-bench-mpi
