/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Slurm's feature expressions (--constraint, -C): names joined by "&" (and) and "|" (or),
 * "&" binding tighter, with parentheses for grouping, e.g. "a100|h100", "gpu&nvlink",
 * "(a100|h100)&nvlink". Names are [A-Za-z0-9_.-]+ and compare case-insensitively.
 * Slurm's counts ("a100*2") and bracketed node-set alternatives ("[a|b]") ask for
 * several nodes and mean nothing on one machine: they are not valid here. */

#include <stdbool.h>

#include "macro.h"

/* At most this deep in parentheses, so a hostile expression cannot take the stack. */
#define CONSTRAINT_DEPTH_MAX 16

bool constraint_is_valid(const char *expr) _pure_;

/* Whether the features (a NULL-terminated list; NULL: none) satisfy expr; an invalid
 * expression matches nothing. */
bool constraint_matches(const char *expr, char *const *features) _pure_;
