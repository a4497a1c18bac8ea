/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>

/* String interning: one shared copy of each distinct string, kept for the life of the
 * process. For the few names that 100,000 jobs repeat (users, projects, queues, the
 * scheduler's reasons), so that each job holds pointers instead of copies. Not for
 * strings of unbounded variety. Returns NULL on allocation failure (or for NULL). */
const char *intern(const char *s);
/* The shared copy of s if it has been interned, else NULL; never adds one (for names a
 * user supplies, which must not grow the table). */
const char *intern_find(const char *s);
/* The same by 32-bit ids, for what many structures hold (a job's user, project, queue and
 * reason: half a pointer's size): 1, 2, ... in the order names are first interned; 0 is
 * NULL, and what intern_id() returns on allocation failure. intern_name() turns an id
 * back into the shared copy (NULL for 0). */
uint32_t intern_id(const char *s);
uint32_t intern_find_id(const char *s);
const char *intern_name(uint32_t id);
/* FNV-1a of a string: the table's hash, for other tables keyed by names. */
uint64_t string_hash(const char *s);
