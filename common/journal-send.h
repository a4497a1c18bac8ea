/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Journal entries in journald's native protocol (systemd's JOURNAL_NATIVE_PROTOCOL), as
 * sd_journal_sendv() writes them, without libsystemd: the programs every job starts (corral,
 * the supervisor) then load three shared libraries instead of nine, which is milliseconds
 * of each launch in a slow guest. */

typedef struct JournalField {
        const char *name;  /* upper case, digits and '_' (journald drops other names) */
        const char *value; /* any bytes */
        size_t len;        /* of value; SIZE_MAX: up to its NUL */
} JournalField;

#define JOURNAL_SOCKET "/run/systemd/journal/socket"

/* One entry of n fields to journald's socket at path (JOURNAL_SOCKET; tests name their own).
 * Too large for a datagram: passed as a sealed memfd, as libsystemd does. 0 or -errno. */
int journal_send_to(const char *path, const JournalField *fields, size_t n);

static inline int journal_send(const JournalField *fields, size_t n) {
        return journal_send_to(JOURNAL_SOCKET, fields, n);
}

/* Until journald has read everything this process sent (or timeout_usec passed: -ETIMEDOUT).
 * journald learns a datagram's unit from its sender's /proc/PID/cgroup when it reads it: a
 * process that is gone (reaped) by then leaves its last entries without _SYSTEMD_UNIT, so
 * `journalctl -u` and corral logs miss them. A process whose last words matter calls this
 * before it exits. 0 at once when nothing was sent. */
int journal_wait_consumed(uint64_t timeout_usec);

/* The datagram journald reads for these fields, in *ret (free it), its size in *ret_size.
 * A value with a newline is sent as NAME '\n' le64(length) value '\n'; others as
 * NAME=value '\n'. */
int journal_serialize(const JournalField *fields, size_t n, char **ret, size_t *ret_size);
