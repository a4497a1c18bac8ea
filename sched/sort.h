/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* A stable merge sort with the comparison inlined, on caller-provided scratch space:
 * passes sort up to 100k entries each time and neither qsort's indirect calls nor its
 * hidden malloc are welcome there. Bottom-up, so no recursion. Leaves the result in a;
 * tmp must hold n entries; ctx is passed to less(ctx, x, y). */
#define DEFINE_MERGE_SORT(name, type, less)                                                \
        static void name(type *a, type *tmp, size_t n, const void *ctx) {                                   \
                type *src = a, *dst = tmp;                                                 \
                /* Insertion-sort runs of 16 first: cheaper than merging tiny runs. */     \
                for (size_t lo = 0; lo < n; lo += 16) {                                    \
                        size_t hi = MIN(lo + 16, n);                                       \
                        for (size_t i = lo + 1; i < hi; i++) {                             \
                                type v = a[i];                                             \
                                size_t j = i;                                              \
                                while (j > lo && less(ctx, &v, &a[j - 1])) {                    \
                                        a[j] = a[j - 1];                                   \
                                        j--;                                               \
                                }                                                          \
                                a[j] = v;                                                  \
                        }                                                                  \
                }                                                                          \
                for (size_t w = 16; w < n; w *= 2) {                                       \
                        for (size_t lo = 0; lo < n; lo += 2 * w) {                         \
                                size_t mid = MIN(lo + w, n), hi = MIN(lo + 2 * w, n);      \
                                size_t i = lo, j = mid, o = lo;                            \
                                while (i < mid && j < hi)                                  \
                                        dst[o++] = less(ctx, &src[j], &src[i]) ? src[j++] : src[i++]; \
                                while (i < mid)                                            \
                                        dst[o++] = src[i++];                               \
                                while (j < hi)                                             \
                                        dst[o++] = src[j++];                               \
                        }                                                                  \
                        type *t = src;                                                     \
                        src = dst;                                                         \
                        dst = t;                                                           \
                }                                                                          \
                if (src != a)                                                              \
                        for (size_t i = 0; i < n; i++)                                     \
                                a[i] = src[i];                                             \
        }
