# SPDX-License-Identifier: GPL-2.0
#
# user/python: the Python package xina over libxina.so (ctypes), and its
# PyTorch DDP hook (xina.ddp).  Pure Python: "make" only checks that it
# parses; it runs from the tree with PYTHONPATH=user/python (it finds
# $(O)/libxina.so.0 itself) or installed by "make install".

PYTHON ?= /usr/bin/python3
PY_SRCS := $(wildcard user/python/xina/*.py)
PY_VER = $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
# Debian's python3 reads $(PREFIX)/lib/python3.X/dist-packages.
PYTHON_SITE ?= $(PREFIX)/lib/python$(PY_VER)/dist-packages

.PHONY: python install-python uninstall-python

# What the tests, make train and libxina-mpi.so need from Debian: numpy,
# torch, scikit-learn (its digits data set), OpenMPI and mpi4py.
DEPS_PYTHON := $(O)/.deps-python
$(DEPS_PYTHON): scripts/deps.sh
	$(Q)mkdir -p $(O)
	$(Q)scripts/deps.sh python
	$(Q)touch $@
selftests: $(DEPS_PYTHON)

$(O)/python/parsed: $(PY_SRCS)
	$(Q)mkdir -p $(@D)
	$(Q)$(PYTHON) -c 'import ast, sys; [ast.parse(open(f).read(), f) for f in sys.argv[1:]]' $^
	$(Q)touch $@

python: $(O)/python/parsed
user: python

install: install-python
install-python: all
	install -d $(DESTDIR)$(PYTHON_SITE)/xina
	install -m 0644 $(PY_SRCS) $(DESTDIR)$(PYTHON_SITE)/xina/

uninstall: uninstall-python
uninstall-python:
	rm -f $(addprefix $(DESTDIR)$(PYTHON_SITE)/xina/,$(notdir $(PY_SRCS)))
	-rmdir $(DESTDIR)$(PYTHON_SITE)/xina 2>/dev/null
