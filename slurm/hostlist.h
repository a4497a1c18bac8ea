/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Slurm's host lists, as scontrol show hostnames expands them: names separated by commas
 * or white space, each with bracketed ranges ("node[1-3,5]", "node[01-10]": a range is
 * as wide as its first number, zero-padded; "r[1-2]n[1-2]": every combination, the left
 * range outermost), in order, duplicates kept. */

#include <stddef.h>

#include "macro.h"

/* Bounds on what one list may expand to (Slurm has none; a typo like "n[1-999999999]"
 * must not fill the memory). */
#define SLURM_HOSTLIST_HOSTS_MAX 65536U
#define SLURM_HOSTLIST_NAME_MAX 1024U

/* The names of list, a NULL-terminated array (free with strv_free()): 0, -EINVAL for a
 * list that is not one (an unclosed or empty bracket, a range that is not "N" or "N-M" with
 * N <= M), -E2BIG past the bounds, -ENOMEM. */
int slurm_hostlist_expand(const char *list, char ***ret, size_t *ret_n);
