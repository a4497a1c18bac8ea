/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>
#include <time.h>

#define USEC_PER_SEC UINT64_C(1000000)

/* The clock in microseconds (CLOCK_MONOTONIC for intervals, CLOCK_REALTIME for records). */
static inline uint64_t now_usec(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}
