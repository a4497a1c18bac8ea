/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <string.h>
#include <sys/types.h>

#include "macro.h"

/* enum <-> string tables: declare `static const char *const foo_table[_FOO_MAX]` and
 * DEFINE_STRING_TABLE_LOOKUP(foo, Foo) gives foo_to_string() and foo_from_string(),
 * the latter returning -EINVAL for unknown names. */

ssize_t string_table_lookup(const char *const *table, size_t len, const char *key);

#define DECLARE_STRING_TABLE_LOOKUP(name, type)                                            \
        const char *name##_to_string(type i) _const_;                                      \
        type name##_from_string(const char *s) _pure_

#define DEFINE_STRING_TABLE_LOOKUP(name, type)                                             \
        const char *name##_to_string(type i) {                                             \
                if (i < 0 || (size_t) i >= ELEMENTSOF(name##_table))                       \
                        return NULL;                                                       \
                return name##_table[i];                                                    \
        }                                                                                  \
        type name##_from_string(const char *s) {                                           \
                return (type) string_table_lookup(name##_table, ELEMENTSOF(name##_table), s); \
        }
