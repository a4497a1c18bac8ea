/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The descriptors of an interactive job (corral run) come from its client over the
 * socket (SCM_RIGHTS). The kernel only lets a process send what it holds, but what a
 * process holds is not always its own: a shell started with su or sudo from another
 * user's session keeps that user's terminal as its stdin, a descriptor leaks across an
 * exec. The job makes its stdin terminal its controlling terminal and the foreground of
 * it, so a descriptor that is not the caller's would give the job another user's
 * keystrokes and screen. So each one must be the caller's by ownership, as the kernel
 * records it in the inode fstat() reads:
 *
 *   - a terminal: its owner, the user a login or the opener of /dev/ptmx (devpts) made
 *     it; `corral run` opens a fresh pseudo-terminal of its own, owned by the caller;
 *   - a pipe or a socket: its creator (pipefs and sockfs give a new inode the creating
 *     process's fsuid), or a named FIFO's owner;
 *   - a regular file: its owner;
 *   - /dev/null, which is everybody's.
 *
 * SO_PEERCRED was considered and not taken: it says who is at the other end of a
 * connected socket, not whose the descriptor is, and means nothing for a pipe or a
 * terminal; /proc/self/fdinfo has no owner either. Root's descriptors are not checked:
 * root may open any of them anyway. Every other kind (directories, devices other than
 * terminals and /dev/null, O_PATH descriptors, eventfds and the like) is refused, as is
 * a stdin not open for reading or an output not open for writing. */

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "interactive-fd.h"

int interactive_fd_check(int fd, unsigned index, uid_t uid, const char **ret_why) {
        const char *why = NULL;
        struct stat st;
        int fl, acc, r = 0;

        fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fstat(fd, &st) < 0) {
                why = "it is not an open file descriptor";
                r = -EBADF;
                goto out;
        }
        acc = fl & O_ACCMODE;
        if (fl & O_PATH) {
                why = "it is an O_PATH descriptor";
                r = -EBADF;
        } else if (index == 0 && acc != O_RDONLY && acc != O_RDWR) {
                why = "the input is not open for reading";
                r = -EBADF;
        } else if (index > 0 && acc != O_WRONLY && acc != O_RDWR) {
                why = "the output is not open for writing";
                r = -EBADF;
        } else if (S_ISCHR(st.st_mode) && !isatty(fd)) {
                if (st.st_rdev != makedev(1, 3)) {
                        why = "it is a device other than a terminal or /dev/null";
                        r = -EMEDIUMTYPE;
                }
        } else if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode) &&
                   !S_ISREG(st.st_mode)) {
                why = "it is not a terminal, a pipe, a socket or a regular file";
                r = -EMEDIUMTYPE;
        } else if (uid != 0 && st.st_uid != uid) {
                why = S_ISCHR(st.st_mode) ? "the terminal belongs to another user"
                                          : "it belongs to another user";
                r = -EPERM;
        }
out:
        if (ret_why)
                *ret_why = why;
        return r;
}
