/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "strv.h"

#define DELIMITERS ", \t\n"
/* A range's numbers: Slurm reads them as unsigned long; nine digits keep the arithmetic
 * far from overflow and are more than any cluster's names use. */
#define NUMBER_DIGITS_MAX 9

typedef struct Hosts {
        char **names;
        size_t n, allocated;
} Hosts;

static void hosts_done(Hosts *h) {
        for (size_t i = 0; i < h->n; i++)
                free(h->names[i]);
        free(h->names);
        *h = (Hosts) {};
}

static int hosts_add(Hosts *h, const char *name, size_t len) {
        char *s;

        if (h->n >= SLURM_HOSTLIST_HOSTS_MAX)
                return -E2BIG;
        /* One more for the terminating NULL. */
        if (!GREEDY_REALLOC(h->names, h->allocated, h->n + 2))
                return -ENOMEM;
        s = strndup(name, len);
        if (!s)
                return -ENOMEM;
        h->names[h->n++] = s;
        h->names[h->n] = NULL;
        return 0;
}

/* "N" or "N-M" at s (len bytes): its bounds and width. */
static int parse_range(const char *s, size_t len, unsigned long *ret_lo, unsigned long *ret_hi, int *ret_width) {
        size_t lo_len = strspn(s, "0123456789"), hi_len;
        unsigned long lo, hi;

        if (lo_len == 0 || lo_len > NUMBER_DIGITS_MAX || lo_len > len)
                return -EINVAL;
        lo = strtoul(s, NULL, 10);
        if (lo_len == len)
                hi = lo;
        else {
                if (s[lo_len] != '-')
                        return -EINVAL;
                hi_len = strspn(s + lo_len + 1, "0123456789");
                if (hi_len == 0 || hi_len > NUMBER_DIGITS_MAX || lo_len + 1 + hi_len != len)
                        return -EINVAL;
                hi = strtoul(s + lo_len + 1, NULL, 10);
                if (hi < lo)
                        return -EINVAL;
        }
        *ret_lo = lo;
        *ret_hi = hi;
        *ret_width = (int) lo_len;
        return 0;
}

/* The names of prefix (plen bytes, already expanded) followed by rest (one name of the
 * list, up to its end). */
static int expand(Hosts *h, char *prefix, size_t plen, const char *rest, const char *end) {
        const char *open = memchr(rest, '[', (size_t) (end - rest)), *close, *p;
        size_t lit;
        int r;

        if (!open) {
                if (memchr(rest, ']', (size_t) (end - rest)))
                        return -EINVAL;
                lit = (size_t) (end - rest);
                if (plen + lit > SLURM_HOSTLIST_NAME_MAX)
                        return -E2BIG;
                memcpy(prefix + plen, rest, lit);
                return hosts_add(h, prefix, plen + lit);
        }
        close = memchr(open, ']', (size_t) (end - open));
        lit = (size_t) (open - rest);
        if (!close || close == open + 1 || memchr(rest, ']', lit) || memchr(open + 1, '[', (size_t) (close - open - 1)))
                return -EINVAL;
        if (plen + lit > SLURM_HOSTLIST_NAME_MAX)
                return -E2BIG;
        memcpy(prefix + plen, rest, lit);
        plen += lit;
        for (p = open + 1; p < close;) {
                size_t n = strcspn(p, ",]");
                unsigned long lo, hi;
                int width;

                r = parse_range(p, n, &lo, &hi, &width);
                if (r < 0)
                        return r;
                /* Bounded before the work: a huge range fails at once, not after
                 * SLURM_HOSTLIST_HOSTS_MAX names. */
                if (hi - lo >= SLURM_HOSTLIST_HOSTS_MAX)
                        return -E2BIG;
                for (unsigned long v = lo; v <= hi; v++) {
                        char num[NUMBER_DIGITS_MAX + 2];
                        int k = snprintf(num, sizeof num, "%0*lu", width, v);

                        if (plen + (size_t) k > SLURM_HOSTLIST_NAME_MAX)
                                return -E2BIG;
                        memcpy(prefix + plen, num, (size_t) k);
                        r = expand(h, prefix, plen + (size_t) k, close + 1, end);
                        if (r < 0)
                                return r;
                }
                p += n;
                if (*p == ',')
                        p++;
        }
        return 0;
}

int slurm_hostlist_expand(const char *list, char ***ret, size_t *ret_n) {
        _cleanup_(hosts_done) Hosts h = {};
        char prefix[SLURM_HOSTLIST_NAME_MAX + 1];
        const char *p = list;
        int r;

        assert(ret);
        if (!list)
                return -EINVAL;
        while (*p) {
                const char *end = p;
                int depth = 0;

                /* A name ends at a delimiter outside brackets: "n[1,3],m". */
                for (; *end && (depth > 0 || !strchr(DELIMITERS, *end)); end++)
                        if (*end == '[')
                                depth++;
                        else if (*end == ']' && depth > 0)
                                depth--;
                if (depth > 0)
                        return -EINVAL;
                if (end > p) {
                        r = expand(&h, prefix, 0, p, end);
                        if (r < 0)
                                return r;
                }
                p = *end ? end + 1 : end;
        }
        if (h.n == 0 && !GREEDY_REALLOC(h.names, h.allocated, 1))
                return -ENOMEM;
        if (h.n == 0)
                h.names[0] = NULL;
        if (ret_n)
                *ret_n = h.n;
        h.n = 0;
        *ret = TAKE_PTR(h.names);
        return 0;
}
