/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <string.h>

#include "macro.h"

/* Every int-returning function returns >= 0 on success and -errno on failure. These turn
 * libc's "-1 and errno" convention into that one. */

static inline int negative_errno(void) {
        /* Some libc calls fail without setting errno; never let that look like success. */
        return errno > 0 ? -errno : -EIO;
}

/* Evaluates a libc call returning -1/errno and yields 0 or -errno. */
#define RET_NERRNO(expr)                                                                   \
        ({                                                                                 \
                long _r_ = (long) (expr);                                                  \
                _r_ < 0 ? negative_errno() : (int) _r_;                                    \
        })

/* strerror for a negative or positive errno; thread-safe variant not needed in a
 * single-threaded daemon. */
static inline const char *errno_str(int err) {
        return strerror(err < 0 ? -err : err);
}

static inline int errno_or_else(int fallback) {
        return errno > 0 ? -errno : -abs(fallback);
}
