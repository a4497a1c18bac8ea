/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/types.h>

#include "macro.h"

/* The cgroup v2 path of pid ("/system.slice/foo.service") from the "0::" line of
 * <proc>/<pid>/cgroup, with proc_fd a directory fd for procfs (a fake tree in tests);
 * pid 0 means the caller. -ESRCH if there is no such process, -ENODATA if it has no
 * unified-hierarchy line (a cgroup v1 only system). A cgroup that was removed while the
 * process is a zombie is reported by the kernel with a " (deleted)" suffix, which is kept. */
int cg_path_of_pid_at(int proc_fd, pid_t pid, char **ret);

/* The same against the real /proc. */
int cg_path_of_pid(pid_t pid, char **ret);
