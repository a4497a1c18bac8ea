/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpuset.h"

/* Every function keeps the invariant: words outside [lo, hi) are zero. */

static void shrink(CpuSet *s) {
        while (s->lo < s->hi && !s->bits[s->lo])
                s->lo++;
        while (s->hi > s->lo && !s->bits[s->hi - 1])
                s->hi--;
        if (s->lo == s->hi)
                s->lo = s->hi = 0;
}

unsigned cpu_set_count(const CpuSet *s) {
        unsigned n = 0;
        for (size_t i = s->lo; i < s->hi; i++)
                n += (unsigned) __builtin_popcountll(s->bits[i]);
        return n;
}

unsigned cpu_set_count_and(const CpuSet *a, const CpuSet *b) {
        size_t lo = MAX(a->lo, b->lo), hi = MIN(a->hi, b->hi);
        unsigned n = 0;

        for (size_t i = lo; i < hi; i++)
                n += (unsigned) __builtin_popcountll(a->bits[i] & b->bits[i]);
        return n;
}

bool cpu_set_is_empty(const CpuSet *s) {
        for (size_t i = s->lo; i < s->hi; i++)
                if (s->bits[i])
                        return false;
        return true;
}

bool cpu_set_equal(const CpuSet *a, const CpuSet *b) {
        size_t lo = MIN(a->lo, b->lo), hi = MAX(a->hi, b->hi);

        if (a->lo == a->hi)
                lo = b->lo;
        else if (b->lo == b->hi)
                lo = a->lo;
        /* Words outside either range are zero in it: compare the union. */
        for (size_t i = lo; i < hi; i++)
                if (a->bits[i] != b->bits[i])
                        return false;
        return true;
}

bool cpu_set_intersects(const CpuSet *a, const CpuSet *b) {
        size_t lo = MAX(a->lo, b->lo), hi = MIN(a->hi, b->hi);

        for (size_t i = lo; i < hi; i++)
                if (a->bits[i] & b->bits[i])
                        return true;
        return false;
}

void cpu_set_or(CpuSet *dst, const CpuSet *src) {
        if (src->lo == src->hi)
                return;
        for (size_t i = src->lo; i < src->hi; i++)
                dst->bits[i] |= src->bits[i];
        if (dst->lo == dst->hi)
                dst->lo = src->lo, dst->hi = src->hi;
        else {
                dst->lo = MIN(dst->lo, src->lo);
                dst->hi = MAX(dst->hi, src->hi);
        }
}

void cpu_set_and(CpuSet *dst, const CpuSet *src) {
        /* src's words outside its range are zero: this clears dst's there too. */
        for (size_t i = dst->lo; i < dst->hi; i++)
                dst->bits[i] &= src->bits[i];
        shrink(dst);
}

void cpu_set_andnot(CpuSet *dst, const CpuSet *src) {
        size_t lo = MAX(dst->lo, src->lo), hi = MIN(dst->hi, src->hi);

        for (size_t i = lo; i < hi; i++)
                dst->bits[i] &= ~src->bits[i];
}

int cpu_set_next(const CpuSet *s, unsigned from) {
        unsigned w = MAX(from / 64, (unsigned) s->lo);

        for (; w < s->hi; w++) {
                uint64_t m = s->bits[w];
                if (w == from / 64)
                        m &= ~UINT64_C(0) << (from % 64);
                if (m)
                        return (int) (w * 64 + (unsigned) __builtin_ctzll(m));
        }
        return -1;
}

static int eat_index(const char **p, unsigned *ret) {
        unsigned long v;
        char *end;

        if (!isdigit((unsigned char) **p))
                return -EINVAL;
        errno = 0;
        v = strtoul(*p, &end, 10);
        if (errno == ERANGE || v >= CPU_SET_MAX)
                return -ERANGE;
        *p = end;
        *ret = (unsigned) v;
        return 0;
}

int cpu_set_parse(const char *s, CpuSet *ret) {
        CpuSet set = {};
        const char *p = s;
        int r;

        if (!s)
                return -EINVAL;
        while (*p == ' ')
                p++;
        while (*p && *p != '\n') {
                unsigned a, b;

                if ((r = eat_index(&p, &a)) < 0)
                        return r;
                b = a;
                if (*p == '-') {
                        p++;
                        if ((r = eat_index(&p, &b)) < 0)
                                return r;
                        if (b < a)
                                return -EINVAL;
                }
                for (unsigned i = a; i <= b; i++)
                        cpu_set_add(&set, i);
                if (*p == ',') {
                        p++;
                        if (!isdigit((unsigned char) *p))
                                return -EINVAL;
                } else if (*p && *p != '\n' && *p != ' ')
                        return -EINVAL;
                while (*p == ' ')
                        p++;
        }
        if (*p == '\n' && p[1] != '\0')
                return -EINVAL;
        *ret = set;
        return 0;
}

char *cpu_set_format(const CpuSet *s) {
        /* At most 5 characters per CPU: 4 digits and a separator. */
        char *buf = malloc((size_t) cpu_set_count(s) * 5 + 1), *p;
        int i;

        if (!buf)
                return NULL;
        p = buf;
        *p = 0;
        i = cpu_set_next(s, 0);
        while (i >= 0) {
                int j = i;
                while (j + 1 < CPU_SET_MAX && cpu_set_test(s, (unsigned) j + 1))
                        j++;
                if (p != buf)
                        *p++ = ',';
                p += j > i ? sprintf(p, "%d-%d", i, j) : sprintf(p, "%d", i);
                i = cpu_set_next(s, (unsigned) j + 1);
        }
        return buf;
}

size_t cpu_set_to_mask(const CpuSet *s, uint8_t *buf, size_t size) {
        size_t used = 0;

        memset(buf, 0, size);
        CPU_SET_FOREACH(i, s) {
                if ((size_t) i / 8 >= size)
                        break;
                buf[i / 8] |= (uint8_t) (1u << (i % 8));
                used = (size_t) i / 8 + 1;
        }
        return used;
}
