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
 * corrald must never wait on a user's file. A file's server can be the user herself: a
 * FUSE file system she mounted in a user namespace of her own, reached through an
 * overlayfs there so that root's calls carry her credentials; root's fstat() then waits
 * for her GETATTR answer, her close() for FLUSH, for ever, in an uninterruptible sleep.
 * So the descriptor's status comes from statx() with AT_STATX_DONT_SYNC and no times
 * asked (the inode as the kernel holds it: FUSE, overlayfs, NFS, CIFS and Ceph answer
 * it without a request), and a regular file is taken only on a local disk or memory
 * file system, named by its device in corrald's own mount table: FUSE, overlayfs, every
 * network file system, and a file system mounted only in another mount namespace (the
 * user's own) are refused. fstatfs() is not used: a file system answers it itself.
 * Pipes, sockets, terminals and /dev/null have no server of their own. Closing is the
 * caller's business (fd-closer.c: never on the loop).
 *
 * SO_PEERCRED was considered and not taken: it says who is at the other end of a
 * connected socket, not whose the descriptor is, and means nothing for a pipe or a
 * terminal; /proc/self/fdinfo has no owner either. Root's descriptors are not checked:
 * root may open any of them anyway. Every other kind (directories, devices other than
 * terminals and /dev/null, O_PATH descriptors, eventfds and the like) is refused, as is
 * a stdin not open for reading or an output not open for writing. */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fd-util.h"
#include "interactive-fd.h"
#include "macro.h"

/* corrald's mount table is the administrator's: a few hundred lines. */
#define MOUNTINFO_MAX (4U * 1024U * 1024U)

/* A decimal number as the kernel prints one: digits only, no sign, no leading zero. */
static int parse_uint(const char *p, const char *end, unsigned *ret) {
        unsigned v = 0;
        int n = 0;

        while (p + n < end && p[n] >= '0' && p[n] <= '9') {
                if (n > 0 && v == 0)
                        return -EINVAL;
                if (v > (UINT_MAX - 9) / 10)
                        return -ERANGE;
                v = v * 10 + (unsigned) (p[n] - '0');
                n++;
        }
        if (n == 0)
                return -EINVAL;
        *ret = v;
        return n;
}

/* "MAJOR:MINOR": its length, or -EINVAL. */
static int parse_dev(const char *p, const char *end, unsigned *ret_major, unsigned *ret_minor) {
        int a, b;

        a = parse_uint(p, end, ret_major);
        if (a < 0 || p + a >= end || p[a] != ':')
                return -EINVAL;
        b = parse_uint(p + a + 1, end, ret_minor);
        if (b < 0 || p + a + 1 + b >= end)
                return -EINVAL;
        return a + 1 + b;
}

int mountinfo_fstype(const char *mountinfo, unsigned mnt_id, unsigned major, unsigned minor, char *buf,
                     size_t size) {
        const char *line = mountinfo;

        while (line && *line) {
                const char *eol = strchr(line, '\n'), *p, *sep, *type = NULL, *end;
                unsigned id, ma, mi;
                bool match;
                int n;

                if (!eol)
                        eol = line + strlen(line);
                /* "ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER" */
                n = parse_uint(line, eol, &id);
                p = n > 0 && line[n] == ' ' ? memchr(line + n + 1, ' ', (size_t) (eol - line - n - 1)) : NULL;
                if (p)
                        p++;
                if (!p || p >= eol || (n = parse_dev(p, eol, &ma, &mi)) < 0 || p[n] != ' ')
                        goto next;
                match = mnt_id > 0 ? id == mnt_id : ma == major && mi == minor;
                if (!match)
                        goto next;
                for (sep = p; (sep = memchr(sep, ' ', (size_t) (eol - sep))); sep++)
                        if (sep + 3 <= eol && sep[1] == '-' && sep[2] == ' ') {
                                type = sep + 3;
                                break;
                        }
                if (!type)
                        goto next;
                end = memchr(type, ' ', (size_t) (eol - type));
                if (!end)
                        end = eol;
                if (end == type)
                        return -EINVAL;
                if ((size_t) (end - type) >= size)
                        return -ENAMETOOLONG;
                memcpy(buf, type, (size_t) (end - type));
                buf[end - type] = '\0';
                return 0;
        next:
                line = *eol ? eol + 1 : NULL;
        }
        return -ENOENT;
}

bool interactive_fstype_is_local(const char *fstype) {
        /* An allow-list: a file system not named here may have a server that does not
         * answer (fuse.*, nfs, cifs, ceph, 9p, lustre, gpfs…) or stack on one (overlay). */
        static const char *const local[] = {
                "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "jfs", "reiserfs", "nilfs2", "zfs",
                "bcachefs", "tmpfs", "ramfs", "vfat", "exfat", "ntfs3",
        };
        for (size_t i = 0; i < ELEMENTSOF(local); i++)
                if (streq(fstype, local[i]))
                        return true;
        return false;
}

static int check_regular(int proc_fd, const struct statx *stx, const char **why) {
        _cleanup_free_ char *text = NULL;
        char type[64];
        int r;

        r = read_file_at(proc_fd, "self/mountinfo", MOUNTINFO_MAX, &text, NULL);
        if (r < 0) {
                *why = "corrald cannot read its mount table to tell where the file lives";
                return -EMEDIUMTYPE;
        }
        r = mountinfo_fstype(text, stx->stx_mask & STATX_MNT_ID ? (unsigned) stx->stx_mnt_id : 0,
                             stx->stx_dev_major, stx->stx_dev_minor, type, sizeof type);
        if (r == -ENOENT) {
                *why = "the file lives on a file system mounted in another mount namespace";
                return -EMEDIUMTYPE;
        }
        if (r < 0 || !interactive_fstype_is_local(type)) {
                if (r >= 0 && (streq(type, "fuse") || strncmp(type, "fuse.", 5) == 0 || streq(type, "fuseblk")))
                        *why = "the file lives on a FUSE file system; corrald takes files on local file "
                               "systems only (pass a pipe instead)";
                else
                        *why = "the file lives on a network or stacked file system; corrald takes files on "
                               "local file systems only (pass a pipe instead)";
                return -EMEDIUMTYPE;
        }
        return 0;
}

int interactive_fd_check(int proc_fd, int fd, unsigned index, uid_t uid, const char **ret_why) {
        const char *why = NULL;
        struct statx stx;
        int fl, acc, r = 0;

        fl = fcntl(fd, F_GETFL);
        /* No STATX_*TIME: NFS writes a file's dirty pages back before it gives them. */
        if (fl < 0 || statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC | AT_SYMLINK_NOFOLLOW,
                            STATX_TYPE | STATX_MODE | STATX_UID | STATX_MNT_ID, &stx) < 0 ||
            (stx.stx_mask & (STATX_TYPE | STATX_UID)) != (STATX_TYPE | STATX_UID)) {
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
        } else if (S_ISCHR(stx.stx_mode) && !isatty(fd)) {
                if (makedev(stx.stx_rdev_major, stx.stx_rdev_minor) != makedev(1, 3)) {
                        why = "it is a device other than a terminal or /dev/null";
                        r = -EMEDIUMTYPE;
                }
        } else if (!S_ISCHR(stx.stx_mode) && !S_ISFIFO(stx.stx_mode) && !S_ISSOCK(stx.stx_mode) &&
                   !S_ISREG(stx.stx_mode)) {
                why = "it is not a terminal, a pipe, a socket or a regular file";
                r = -EMEDIUMTYPE;
        } else if (uid != 0 && stx.stx_uid != uid) {
                why = S_ISCHR(stx.stx_mode) ? "the terminal belongs to another user" : "it belongs to another user";
                r = -EPERM;
        } else if (S_ISREG(stx.stx_mode))
                /* Root's files too: its stalled FUSE server stalls everyone's corrald. */
                r = check_regular(proc_fd, &stx, &why);
out:
        if (ret_why)
                *ret_why = why;
        return r;
}
