/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The small vocabulary every file uses: cleanup attributes, ownership hand-over and
 * array sizes, after systemd's src/fundamental/macro-fundamental.h. */

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define _cleanup_(f) __attribute__((__cleanup__(f)))
#define _unused_ __attribute__((__unused__))
#define _printf_(a, b) __attribute__((__format__(printf, a, b)))
#define _pure_ __attribute__((__pure__))
#define _const_ __attribute__((__const__))
#define _noreturn_ __attribute__((__noreturn__))
#define _likely_(x) (__builtin_expect(!!(x), 1))
#define _unlikely_(x) (__builtin_expect(!!(x), 0))
#define _public_ __attribute__((__visibility__("default")))
#define _warn_unused_result_ __attribute__((__warn_unused_result__))
#define _sentinel_ __attribute__((__sentinel__))

#define ELEMENTSOF(x)                                                                      \
        (__builtin_choose_expr(!__builtin_types_compatible_p(typeof(x), typeof(&*(x))),    \
                               sizeof(x) / sizeof((x)[0]), (void) 0))

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define CLAMP(x, lo, hi) MIN(MAX((x), (lo)), (hi))
#define DIV_ROUND_UP(x, y) (((x) + (y) - 1) / (y))

/* Returns the value of the pointer and sets it to NULL: hands ownership over. */
#define TAKE_GENERIC(var, type, nullvalue)                                                 \
        ({                                                                                 \
                type *_pvar_ = &(var);                                                     \
                type _var_ = *_pvar_;                                                      \
                type _nullvalue_ = nullvalue;                                              \
                *_pvar_ = _nullvalue_;                                                     \
                _var_;                                                                     \
        })
#define TAKE_PTR(ptr) TAKE_GENERIC(ptr, typeof(ptr), NULL)
#define TAKE_FD(fd) TAKE_GENERIC(fd, int, -EBADF)

/* Defines func##p(type *p) that calls func(*p) when *p is not NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                            \
        static inline void func##p(type *p) {                                              \
                if (*p)                                                                    \
                        *p = func(*p);                                                     \
        }

#define DEFINE_TRIVIAL_CLEANUP_FUNC_VOID(type, func)                                       \
        static inline void func##p(type *p) {                                              \
                if (*p)                                                                    \
                        func(*p);                                                          \
        }

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

#define new(t, n) ((t *) reallocarray(NULL, (n), sizeof(t)))
#define new0(t, n) ((t *) calloc((n) ?: 1, sizeof(t)))

#define streq(a, b) (strcmp((a), (b)) == 0)
#define strneq(a, b, n) (strncmp((a), (b), (n)) == 0)
#define isempty(s) (!(s) || !(s)[0])
#define strna(s) ((s) ?: "n/a")
#define strempty(s) ((s) ?: "")
#define yes_no(b) ((b) ? "yes" : "no")

/* Grows *p (of *allocated elements of size sz) to hold at least need elements. */
void *greedy_realloc(void **p, size_t *allocated, size_t need, size_t sz);
/* Exchanges two lvalues of one type. */
#define SWAP_TWO(a, b)                                                                     \
        do {                                                                               \
                typeof(a) _swap_ = (a);                                                    \
                (a) = (b);                                                                 \
                (b) = _swap_;                                                              \
        } while (0)

#define GREEDY_REALLOC(array, allocated, need)                                             \
        greedy_realloc((void **) &(array), &(allocated), (need), sizeof((array)[0]))
