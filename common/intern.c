/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "intern.h"
#include "macro.h"

static char **table;
static size_t table_size, table_used;

uint64_t string_hash(const char *s) {
        uint64_t h = UINT64_C(1469598103934665603); /* FNV-1a */
        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * UINT64_C(1099511628211);
        return h;
}

static bool grow(void) {
        size_t n = table_size ? table_size * 2 : 64;
        char **t = calloc(n, sizeof(char *));

        if (!t)
                return false;
        for (size_t i = 0; i < table_size; i++)
                if (table[i]) {
                        size_t k = string_hash(table[i]) & (n - 1);
                        while (t[k])
                                k = (k + 1) & (n - 1);
                        t[k] = table[i];
                }
        free(table);
        table = t;
        table_size = n;
        return true;
}

const char *intern(const char *s) {
        size_t k;

        if (!s)
                return NULL;
        if ((table_used + 1) * 2 > table_size && !grow())
                return NULL;
        for (k = string_hash(s) & (table_size - 1); table[k]; k = (k + 1) & (table_size - 1))
                if (streq(table[k], s))
                        return table[k];
        table[k] = strdup(s);
        if (!table[k])
                return NULL;
        table_used++;
        return table[k];
}

const char *intern_find(const char *s) {
        if (!s || table_size == 0)
                return NULL;
        for (size_t k = string_hash(s) & (table_size - 1); table[k]; k = (k + 1) & (table_size - 1))
                if (streq(table[k], s))
                        return table[k];
        return NULL;
}
