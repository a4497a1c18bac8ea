/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Whether a descriptor a client passed for an interactive job's stdin (index 0), stdout
 * (1) or stderr (2) is one corrald hands to the job: see interactive-fd.c for the rules
 * and why. Reads the descriptor's status only (fcntl, fstat, TCGETS), never its data. */

#include <stdbool.h>
#include <sys/types.h>

/* 0, or -EPERM (not the caller's), -EBADF (wrong access mode, O_PATH) or -EMEDIUMTYPE
 * (a kind of file that is refused), with *ret_why the reason in words for the user. */
int interactive_fd_check(int fd, unsigned index, uid_t uid, const char **ret_why);
