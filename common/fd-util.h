/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "macro.h"

/* Closes fd if valid, preserving errno; returns -EBADF so it can reset a variable. */
int safe_close(int fd);

static inline void closep(int *fd) {
        *fd = safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline FILE *safe_fclose(FILE *f) {
        if (f)
                fclose(f);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(FILE *, safe_fclose);
#define _cleanup_fclose_ _cleanup_(safe_fclosep)

static inline DIR *safe_closedir(DIR *d) {
        if (d)
                closedir(d);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, safe_closedir);
#define _cleanup_closedir_ _cleanup_(safe_closedirp)

/* Opens the directory path relative to dirfd (flags are added to O_RDONLY | O_DIRECTORY |
 * O_CLOEXEC, e.g. O_NOFOLLOW) as a DIR. */
int opendir_at(int dirfd, const char *path, int flags, DIR **ret);

/* Reads a whole small file relative to dirfd (AT_FDCWD for plain paths) into a
 * NUL-terminated buffer. Fails with -EFBIG past max bytes. */
int read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_size);

/* Writes a string to an existing file relative to dirfd (no O_CREAT), as sysfs and
 * cgroupfs want: one write(2). */
int write_string_file_at(int dirfd, const char *path, const char *s);

/* Writes all bytes, retrying on EINTR and short writes. */
int loop_write(int fd, const void *buf, size_t n);

/* One fixed-size record over a SOCK_SEQPACKET socket with at most one descriptor beside
 * it (SCM_RIGHTS; fd < 0 for none; MSG_NOSIGNAL is added). Sending: 0, or -errno (-EIO
 * for a short send). Receiving: 0 with *ret_fd the descriptor (CLOEXEC) or -EBADF;
 * -ECONNRESET at EOF; -EBADMSG for a record of another size or a truncated one. */
int record_send(int sock, const void *buf, size_t n, int fd, int flags);
int record_recv(int sock, void *buf, size_t n, int *ret_fd, int flags);
