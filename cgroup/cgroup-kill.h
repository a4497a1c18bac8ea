/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "macro.h"

/* Kills every process in the cgroup and its descendants atomically through cgroup.kill
 * (Linux 5.14+). -EOPNOTSUPP when the kernel has no cgroup.kill: fall back to
 * cg_kill_fallback(). */
int cg_kill(int root_fd, const char *path);

/* Sends sig to every pid listed in cgroup.procs of path and all cgroups below it, and
 * repeats the walk until a pass finds no pid it has not signalled yet (a process may fork
 * while we walk). Unlike cgroup.kill this is racy against pid reuse; freeze the cgroup
 * first where the freezer exists. Returns the number of processes signalled; a process
 * that is gone already (ESRCH) is not an error. */
int cg_kill_fallback(int root_fd, const char *path, int sig);
