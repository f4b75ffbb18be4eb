# SPDX-License-Identifier: GPL-2.0
#
# make train: a real model (scikit-learn's digits, an MLP) trained with
# PyTorch DDP on 4 worker namespaces of a rack, gradients through the xina
# switch, and the same run on DDP's Gloo backend; prints the accuracy and
# step time of both and fails if the accuracies differ by more than the
# stated tolerance (scripts/train.py).  About a minute on 2 CPUs.

.PHONY: train

train: all
	$(Q)scripts/deps.sh python
	$(Q)/usr/bin/python3 scripts/train.py $(TRAIN_ARGS)
