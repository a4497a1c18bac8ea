/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* corral logs on a job's output files, which the job's user chose and controls: opened
 * only as a regular file and with no more rights than that user's, read no further than
 * a cap, and escaped on the way to a terminal. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "text-util.h"

/* What corral logs shows of a file unless --max-bytes says otherwise: its last 16 MiB. */
#define LOGS_MAX_BYTES_DEFAULT (UINT64_C(16) << 20)

/* Opens path for reading on behalf of the job's owner uid (primary group gid):
 *  - the owner's own call follows symlinks, as the job did when it opened the file;
 *  - root's (euid 0) call for another user opens it in a child that has taken the owner's
 *    uid, gid and groups, so only what that user could reach is reached; the last
 *    component must not be a symlink;
 *  - anyone else (an operator) opens it with their own rights, not following a symlink
 *    as the last component either.
 * It is opened as O_PATH first, so a FIFO or a device is never opened at all: anything but a
 * regular file is -EBADFD, a symlink not followed -ELOOP. The descriptor is O_CLOEXEC. */
int logs_open(const char *path, uid_t uid, gid_t gid, int *ret_fd);

/* Reads from a file or a pipe and writes on, escaped for a terminal (everything but tab
 * and newline, as text_escape_stream() does) or as it is. */
typedef struct LogsPump {
        int in_fd, out_fd;
        bool escape;
        uint64_t left;          /* bytes still to read; UINT64_MAX: up to EOF */
        size_t n_pending;       /* the start of a UTF-8 sequence cut by the last read */
        char buf[64 * 1024];
        char ebuf[TEXT_ESCAPE_MAX(64 * 1024)];
} LogsPump;

/* A pump for in_fd; NULL when out of memory. */
LogsPump *logs_pump_new(int in_fd, int out_fd, bool escape, uint64_t limit);
/* One read and its write: 1 when more may come, 0 at the end (EOF or the limit), or
 * -errno. EAGAIN and EINTR are 1. */
int logs_pump_step(LogsPump *p);

/* The regular file fd, its last max_bytes (0: all of it) as it was when this started, to
 * out_fd: a file that grows while it is read ends where it ended then. *ret_skipped: the
 * bytes before those. */
int logs_copy(int fd, int out_fd, uint64_t max_bytes, bool escape, uint64_t *ret_skipped);
/* Positions fd at the start of its last max_bytes (0: at its start); *ret_skipped as above. */
int logs_seek_tail(int fd, uint64_t max_bytes, uint64_t *ret_skipped);
