/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* INI files as systemd writes them, decoded by a table: each key of each section has a
 * parser and the offset of its field in the struct the section fills. The owner decides
 * what a section fills (section_begin) and what happens when it ends (section_end: merge
 * it somewhere, check it is complete). Errors are "file:line: what", in *ret_error, and
 * -EINVAL. Used by corral.conf and its drop-ins, and by the project files. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

typedef int (*IniParser)(const char *value, void *field);

typedef struct IniItem {
        const char *section, *key;
        IniParser parse;
        size_t offset, size;
        const char *expect; /* what a valid value is, for the error message */
} IniItem;

#define INI_ITEM(sec, k, p, type, f, e) { sec, k, p, offsetof(type, f), sizeof(((type *) 0)->f), e }
/* A section's keys are tracked in a 64-bit mask, bit k for the section's k-th item: a
 * table lists each section's items together, at most this many of them. */
#define INI_ITEMS_MAX 64

typedef struct IniOps {
        /* The struct the keys of a section go into, or NULL if the section is unknown
         * (the file's error then lists known). *ret_set is cleared by the caller. */
        void *(*section_begin)(void *userdata, const char *section);
        /* The section is over (next header or end of file). set: bit k for the section's
         * k-th item given (ini_item_set()). Returns < 0 and sets *ret_error (use
         * ini_error()) to fail the file. */
        int (*section_end)(void *userdata, const char *section, void *target, uint64_t set, const char *path,
                           unsigned line, char **ret_error);
        const char *known; /* "[Manager], [Queue]", for the error message */
} IniOps;

/* Parses path; a missing file is no error. max_size: larger files are refused. */
int ini_load(const char *path, size_t max_size, const IniItem *items, size_t n_items, const IniOps *ops,
             void *userdata, char **ret_error);

/* Whether items[i] is in a section's set (IniOps.section_end). */
bool ini_item_set(const IniItem *items, size_t i, uint64_t set) _pure_;

/* Sets *ret_error to "file:line: <what>" and returns -EINVAL. */
int ini_error(char **ret_error, const char *path, unsigned line, const char *fmt, ...) _printf_(4, 5);

/* Value parsers for tables. */
int ini_parse_string(const char *v, void *field);      /* char *; empty: NULL */
int ini_parse_bool(const char *v, void *field);        /* bool */
int ini_parse_sec(const char *v, void *field);         /* uint64_t seconds; infinity: 0 */
int ini_parse_u32(const char *v, void *field);         /* uint32_t */
int ini_parse_u64(const char *v, void *field);         /* uint64_t */
int ini_parse_i32(const char *v, void *field);         /* int32_t, -1000000..1000000 */
int ini_parse_bytes(const char *v, void *field);       /* uint64_t, 4G etc. */
int ini_parse_strv(const char *v, void *field);        /* char **, whitespace-separated; appends; empty: clears */
int ini_parse_double(const char *v, void *field);      /* double, finite, >= 0 */
/* ini_parse_strv(), then every entry must pass valid(). */
int ini_parse_strv_checked(const char *v, void *field, bool (*valid)(const char *s));
