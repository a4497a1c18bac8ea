/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* What the benchmarks share: a monotonic clock in seconds, and the xorshift64* generator
 * their workloads are drawn from, seeded alike so that every run measures the same work.
 * BENCH_CPU=1: the calling thread's CPU time instead, steadier on a shared machine and
 * blind to waits (right for work that has none, such as a scheduling pass). */

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline double now_sec(void) {
        struct timespec ts;

        clock_gettime(getenv("BENCH_CPU") ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* The next number of the xorshift64* sequence at *state. */
static inline uint64_t rng_next(uint64_t *state) {
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        return *state * UINT64_C(2685821657736338717);
}
