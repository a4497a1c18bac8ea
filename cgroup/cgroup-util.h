/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "macro.h"

/* Where the cgroup2 filesystem is mounted in production. Every cgroup/ entry point takes a
 * directory fd for this root instead, so tests run against a fake tree in a tmpdir. */
#define CGROUP_ROOT "/sys/fs/cgroup"

/* Opens the cgroup directory path (as in /proc/<pid>/cgroup: "/a/b.scope"; a leading '/'
 * is optional and "/" or "" is the root itself) below root_fd. ".." components are
 * refused with -EINVAL so a path never leaves the hierarchy. -ENOENT when the cgroup does
 * not exist (any more). */
int cg_open(int root_fd, const char *path);

/* Reads one attribute file of an opened cgroup directory. */
int cg_read_attr(int cg_fd, const char *attr, char **ret);
