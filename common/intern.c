/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "intern.h"
#include "macro.h"

/* The shared copies by id (names[id - 1]), and an open-addressed table of their ids by
 * hash (0: empty). */
static char **names;
static uint32_t n_names, names_allocated;
static uint32_t *table;
static size_t table_size;

uint64_t string_hash(const char *s) {
        uint64_t h = UINT64_C(1469598103934665603); /* FNV-1a */
        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * UINT64_C(1099511628211);
        return h;
}

static bool grow(void) {
        size_t n = table_size ? table_size * 2 : 64;
        uint32_t *t = calloc(n, sizeof(uint32_t));

        if (!t)
                return false;
        for (uint32_t id = 1; id <= n_names; id++) {
                size_t k = string_hash(names[id - 1]) & (n - 1);
                while (t[k])
                        k = (k + 1) & (n - 1);
                t[k] = id;
        }
        free(table);
        table = t;
        table_size = n;
        return true;
}

/* The slot of s in the table: its id's, or the empty one where it would go. */
static size_t slot(const char *s) {
        size_t k = string_hash(s) & (table_size - 1);
        while (table[k] && !streq(names[table[k] - 1], s))
                k = (k + 1) & (table_size - 1);
        return k;
}

uint32_t intern_id(const char *s) {
        size_t k;

        if (!s)
                return 0;
        if (((size_t) n_names + 1) * 2 > table_size && !grow())
                return 0;
        k = slot(s);
        if (table[k])
                return table[k];
        if (n_names == UINT32_MAX - 1)
                return 0;
        if (n_names == names_allocated) {
                uint32_t n = names_allocated ? names_allocated * 2 : 64;
                char **a = realloc(names, n * sizeof(char *));
                if (!a)
                        return 0;
                names = a;
                names_allocated = n;
        }
        names[n_names] = strdup(s);
        if (!names[n_names])
                return 0;
        table[k] = ++n_names;
        return n_names;
}

const char *intern(const char *s) {
        return intern_name(intern_id(s));
}

uint32_t intern_find_id(const char *s) {
        if (!s || table_size == 0)
                return 0;
        return table[slot(s)];
}

const char *intern_find(const char *s) {
        return intern_name(intern_find_id(s));
}

const char *intern_name(uint32_t id) {
        return id > 0 && id <= n_names ? names[id - 1] : NULL;
}
