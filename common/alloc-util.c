/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>

#include "macro.h"

void *greedy_realloc(void **p, size_t *allocated, size_t need, size_t sz) {
        size_t n;
        void *q;

        assert(p);
        assert(allocated);

        if (*allocated >= need)
                return *p;
        if (need > SIZE_MAX / 2 / sz)
                return NULL;
        n = MAX(need * 2, (size_t) 16);
        q = reallocarray(*p, n, sz);
        if (!q)
                return NULL;
        *p = q;
        *allocated = n;
        return q;
}
