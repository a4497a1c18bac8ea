/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

/* The cgroup v2 freezer (Linux 5.2+): cgroup.freeze is the request, the "frozen" key of
 * cgroup.events the result, and the two differ while tasks are still on their way (a
 * task in uninterruptible sleep freezes only when it leaves it). All functions take the
 * cgroup2 root as a directory fd and return -EOPNOTSUPP when the kernel has no freezer. */

/* Requests freezing (true) or thawing (false); does not wait. */
int cg_freeze(int root_fd, const char *path, bool freeze);

/* 1 if cgroup.events says frozen, 0 if not. */
int cg_is_frozen(int root_fd, const char *path);

/* A fresh inotify fd (non-blocking, close-on-exec) that becomes readable whenever the
 * cgroup.events of path changes (populated or frozen flipping), for an event loop such as
 * sd-event. Read and discard the events, then re-read cgroup.events. */
int cg_events_watch_fd(int root_fd, const char *path);

/* Adds another cgroup's cgroup.events to an existing inotify fd; returns the watch
 * descriptor, to map events back to cgroups. */
int cg_events_watch_add(int inotify_fd, int root_fd, const char *path);
