/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <string.h>

/* A stable merge sort with the comparison inlined, on caller-provided scratch space:
 * passes sort up to 100k entries each time and neither qsort's indirect calls nor its
 * hidden malloc are welcome there. Bottom-up, so no recursion; input already in order
 * costs one scan, and runs already in order are copied, not merged. Leaves the result in a;
 * tmp must hold n entries; ctx is passed to less(ctx, x, y). Returns whether anything moved. */
#define DEFINE_MERGE_SORT(name, type, less)                                                \
        static bool name(type *a, type *tmp, size_t n, const void *ctx) {                  \
                type *src = a, *dst = tmp;                                                 \
                size_t sorted = 1;                                                         \
                /* Queues change little between passes: already in order is common. */    \
                while (sorted < n && !less(ctx, &a[sorted], &a[sorted - 1]))               \
                        sorted++;                                                          \
                if (sorted >= n)                                                           \
                        return false;                                                      \
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
                                if (mid >= hi || !less(ctx, &src[mid], &src[mid - 1])) {   \
                                        /* Already in order: copy, do not merge. */        \
                                        memcpy(dst + lo, src + lo, (hi - lo) * sizeof(type)); \
                                        continue;                                          \
                                }                                                          \
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
                        memcpy(a, src, n * sizeof(type));                                  \
                return true;                                                               \
        }
