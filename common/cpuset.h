/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* A fixed-size CPU (or NUMA node) bitmap, plain data so the scheduler can copy it freely
 * and the simulator can hold thousands without allocation. 8192 is the most CPUs a
 * Debian kernel is built for (CONFIG_NR_CPUS). The words in use are tracked as a range,
 * [lo, hi), outside which every word is zero: a set of a few neighbouring CPUs (a job's)
 * costs a word or two to combine, count or walk whatever the machine's size, so a
 * 128-CPU machine pays nothing for the room. Sets are still compared, combined and
 * copied only through the functions below, or by assignment. */
#define CPU_SET_MAX 8192
#define CPU_SET_WORDS (CPU_SET_MAX / 64)

typedef struct CpuSet {
        uint16_t lo, hi;        /* words outside [lo, hi) are zero; lo == hi: empty */
        uint64_t bits[CPU_SET_WORDS];
} CpuSet;

static inline void cpu_set_zero(CpuSet *s) {
        *s = (CpuSet) {};
}
static inline bool cpu_set_test(const CpuSet *s, unsigned i) {
        return i < CPU_SET_MAX && (s->bits[i / 64] >> (i % 64)) & 1;
}
static inline void cpu_set_add(CpuSet *s, unsigned i) {
        uint16_t w = (uint16_t) (i / 64);

        if (i >= CPU_SET_MAX)
                return;
        if (s->lo == s->hi)
                s->lo = w, s->hi = (uint16_t) (w + 1);
        else if (w < s->lo)
                s->lo = w;
        else if (w >= s->hi)
                s->hi = (uint16_t) (w + 1);
        s->bits[w] |= UINT64_C(1) << (i % 64);
}
static inline void cpu_set_del(CpuSet *s, unsigned i) {
        if (i < CPU_SET_MAX)
                s->bits[i / 64] &= ~(UINT64_C(1) << (i % 64));
}

unsigned cpu_set_count(const CpuSet *s) _pure_;
bool cpu_set_is_empty(const CpuSet *s) _pure_;
bool cpu_set_equal(const CpuSet *a, const CpuSet *b) _pure_;
bool cpu_set_intersects(const CpuSet *a, const CpuSet *b) _pure_;
void cpu_set_or(CpuSet *dst, const CpuSet *src);
void cpu_set_and(CpuSet *dst, const CpuSet *src);
void cpu_set_andnot(CpuSet *dst, const CpuSet *src);
/* cpu_set_count() of a & b, without making it. */
unsigned cpu_set_count_and(const CpuSet *a, const CpuSet *b) _pure_;
/* The next set index >= from, or -1. */
int cpu_set_next(const CpuSet *s, unsigned from) _pure_;

#define CPU_SET_FOREACH(i, s) for (int i = cpu_set_next((s), 0); i >= 0; i = cpu_set_next((s), (unsigned) i + 1))

/* "0-3,8,10-11" (the kernel's cpulist format, also with spaces/newline at the end).
 * -EINVAL on syntax, -ERANGE on an index >= CPU_SET_MAX (a machine larger than
 * supported: never truncated). "" gives the empty set. */
int cpu_set_parse(const char *s, CpuSet *ret);
/* The kernel's cpulist format; "" for the empty set. Returns a malloc'ed string. */
char *cpu_set_format(const CpuSet *s);
/* The set as a bitmask byte array, lowest CPU in bit 0 of byte 0, as systemd's
 * AllowedCPUs D-Bus property wants it. Returns the length used (0 for empty). */
size_t cpu_set_to_mask(const CpuSet *s, uint8_t *buf, size_t size);
