/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* A stable natural merge sort with the comparison inlined, on caller-provided scratch
 * space: passes sort up to 100k entries each time and neither qsort's indirect calls nor
 * its hidden malloc are welcome there.
 *
 * Passes feed it what the previous pass sorted, which has changed little: the ordered
 * runs already in the input are found and only they are merged (timsort's run stack,
 * without galloping), and a merge first skips, by binary search, the head of the left run
 * and the tail of the right run that are already in place. So input in order costs one
 * scan, a sorted queue with a few new jobs appended costs a scan and a merge of the new
 * ones, and random input costs n log n as any merge sort.
 *
 * Leaves the result in a; tmp must hold n entries; ctx is passed to less(ctx, x, y).
 * Returns whether anything moved. */

#define SORT_MIN_RUN 32
#define SORT_STACK_MAX 96 /* run lengths grow at least as Fibonacci's numbers: enough for 2^64 */

#define DEFINE_MERGE_SORT(name, type, less)                                                \
        /* First index in a[0, n) whose entry is greater than *v (upper bound). */         \
        static inline size_t name##_upper(const type *a, size_t n, const type *v,          \
                                          const void *ctx) {                               \
                size_t lo = 0, hi = n;                                                     \
                while (lo < hi) {                                                          \
                        size_t mid = lo + (hi - lo) / 2;                                   \
                        if (less(ctx, v, &a[mid]))                                         \
                                hi = mid;                                                  \
                        else                                                               \
                                lo = mid + 1;                                              \
                }                                                                          \
                return lo;                                                                 \
        }                                                                                  \
        /* First index in a[0, n) whose entry is not less than *v (lower bound). */        \
        static inline size_t name##_lower(const type *a, size_t n, const type *v,          \
                                          const void *ctx) {                               \
                size_t lo = 0, hi = n;                                                     \
                while (lo < hi) {                                                          \
                        size_t mid = lo + (hi - lo) / 2;                                   \
                        if (less(ctx, &a[mid], v))                                         \
                                lo = mid + 1;                                              \
                        else                                                               \
                                hi = mid;                                                  \
                }                                                                          \
                return lo;                                                                 \
        }                                                                                  \
        /* Merges the adjacent ordered runs a[0, n1) and a[n1, n1 + n2), stably. */        \
        static void name##_merge(type *a, size_t n1, size_t n2, type *tmp, const void *ctx) { \
                type *l = a, *r = a + n1;                                                  \
                size_t skip;                                                               \
                /* What of the left run precedes the right's first is in place. */        \
                skip = name##_upper(l, n1, &r[0], ctx);                                    \
                l += skip;                                                                 \
                n1 -= skip;                                                                \
                if (n1 == 0)                                                               \
                        return;                                                            \
                /* And what of the right run follows the left's last. */                   \
                n2 = name##_lower(r, n2, &l[n1 - 1], ctx);                                 \
                if (n2 == 0)                                                               \
                        return;                                                            \
                if (n1 <= n2) {                                                            \
                        /* Left into tmp, merged forwards into place. */                   \
                        size_t i = 0, j = 0, o = 0;                                        \
                        memcpy(tmp, l, n1 * sizeof(type));                                 \
                        while (i < n1 && j < n2)                                           \
                                l[o++] = less(ctx, &r[j], &tmp[i]) ? r[j++] : tmp[i++];    \
                        memcpy(l + o, tmp + i, (n1 - i) * sizeof(type));                   \
                } else {                                                                   \
                        /* Right into tmp, merged backwards into place. */                 \
                        size_t i = n1, j = n2, o = n1 + n2;                                \
                        memcpy(tmp, r, n2 * sizeof(type));                                 \
                        while (i > 0 && j > 0)                                             \
                                l[--o] = less(ctx, &tmp[j - 1], &l[i - 1]) ? l[--i] : tmp[--j]; \
                        memcpy(l + o - j, tmp, j * sizeof(type));                          \
                }                                                                          \
        }                                                                                  \
        /* Merges the stack's runs m and m + 1 into m; returns the new stack size. */      \
        static size_t name##_merge_at(type *a, type *tmp, size_t *run_start, size_t *run_len, \
                                      size_t k, size_t m, const void *ctx) {               \
                name##_merge(a + run_start[m], run_len[m], run_len[m + 1], tmp, ctx);      \
                run_len[m] += run_len[m + 1];                                              \
                for (size_t s = m + 1; s + 1 < k; s++) {                                   \
                        run_start[s] = run_start[s + 1];                                   \
                        run_len[s] = run_len[s + 1];                                       \
                }                                                                          \
                return k - 1;                                                              \
        }                                                                                  \
        static bool name(type *a, type *tmp, size_t n, const void *ctx) {                  \
                size_t run_start[SORT_STACK_MAX], run_len[SORT_STACK_MAX], k = 0;          \
                size_t sorted = 1;                                                         \
                /* Queues change little between passes: already in order is common. */    \
                while (sorted < n && !less(ctx, &a[sorted], &a[sorted - 1]))               \
                        sorted++;                                                          \
                if (sorted >= n)                                                           \
                        return false;                                                      \
                for (size_t lo = 0; lo < n;) {                                             \
                        /* The first run is known: it ends where order first broke. */    \
                        size_t hi = lo == 0 ? sorted : lo + 1;                             \
                        while (hi < n && !less(ctx, &a[hi], &a[hi - 1]))                   \
                                hi++;                                                      \
                        /* Short runs are grown by insertion: cheaper than merging them. */ \
                        if (hi - lo < SORT_MIN_RUN) {                                      \
                                size_t end = MIN(lo + SORT_MIN_RUN, n);                    \
                                for (size_t i = hi; i < end; i++) {                        \
                                        type v = a[i];                                     \
                                        size_t j = i;                                      \
                                        while (j > lo && less(ctx, &v, &a[j - 1])) {       \
                                                a[j] = a[j - 1];                           \
                                                j--;                                       \
                                        }                                                  \
                                        a[j] = v;                                          \
                                }                                                          \
                                hi = end;                                                  \
                        }                                                                  \
                        run_start[k] = lo;                                                 \
                        run_len[k++] = hi - lo;                                            \
                        lo = hi;                                                           \
                        /* Timsort's invariants (as corrected in 2015): each run longer \
                         * than the next two together, so the stack stays logarithmic. */ \
                        while (k > 1) {                                                    \
                                size_t m = k - 2;                                          \
                                if ((m > 0 && run_len[m - 1] <= run_len[m] + run_len[m + 1]) || \
                                    (m > 1 && run_len[m - 2] <= run_len[m - 1] + run_len[m])) { \
                                        if (run_len[m - 1] < run_len[m + 1])               \
                                                m--;                                       \
                                } else if (run_len[m] > run_len[m + 1])                    \
                                        break;                                             \
                                k = name##_merge_at(a, tmp, run_start, run_len, k, m, ctx); \
                        }                                                                  \
                }                                                                          \
                while (k > 1) {                                                            \
                        size_t m = k - 2;                                                  \
                        if (m > 0 && run_len[m - 1] < run_len[m + 1])                      \
                                m--;                                                       \
                        k = name##_merge_at(a, tmp, run_start, run_len, k, m, ctx);        \
                }                                                                          \
                return true;                                                               \
        }
