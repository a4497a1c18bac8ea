/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Whether a descriptor a client passed for an interactive job's stdin (index 0), stdout
 * (1) or stderr (2) is one corrald hands to the job: see interactive-fd.c for the rules
 * and why. Reads the descriptor's status from the kernel's caches only (fcntl, statx
 * with AT_STATX_DONT_SYNC, TCGETS on a character device), never its data, and never
 * anything a file system's server could leave unanswered. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The type of a mounted file system, as /proc/self/mountinfo's text (mountinfo,
 * NUL-terminated) names it, into buf: the mount whose id is mnt_id, or when mnt_id is 0
 * the first whose device is major:minor (btrfs gives each subvolume's files a device of
 * its own, so the mount id, from statx(), comes first). 0, -ENOENT when no such mount is
 * in the text (a file system mounted only in another mount namespace), -ENAMETOOLONG or
 * -EINVAL. */
int mountinfo_fstype(const char *mountinfo, unsigned mnt_id, unsigned major, unsigned minor, char *buf,
                     size_t size);

/* Whether a regular file on a file system of this type is one corrald takes: a local
 * disk or memory file system. */
bool interactive_fstype_is_local(const char *fstype);

/* 0, or -EPERM (not the caller's), -EBADF (wrong access mode, O_PATH) or -EMEDIUMTYPE
 * (a kind of file that is refused, or a file on a file system that is), with *ret_why
 * the reason in words for the user. proc_fd is a directory holding self/mountinfo
 * (/proc; a tmpdir in tests), read only for a regular file. */
int interactive_fd_check(int proc_fd, int fd, unsigned index, uid_t uid, const char **ret_why);
