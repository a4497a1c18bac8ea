/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* A fixed-size CPU (or NUMA node) bitmap, plain data so the scheduler can copy it freely
 * and the simulator can hold hundreds of thousands without allocation. */
#define CPU_SET_MAX 1024

typedef struct CpuSet {
        uint64_t bits[CPU_SET_MAX / 64];
} CpuSet;

static inline void cpu_set_zero(CpuSet *s) {
        *s = (CpuSet) {};
}
static inline bool cpu_set_test(const CpuSet *s, unsigned i) {
        return i < CPU_SET_MAX && (s->bits[i / 64] >> (i % 64)) & 1;
}
static inline void cpu_set_add(CpuSet *s, unsigned i) {
        if (i < CPU_SET_MAX)
                s->bits[i / 64] |= UINT64_C(1) << (i % 64);
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
/* The next set index >= from, or -1. */
int cpu_set_next(const CpuSet *s, unsigned from) _pure_;

#define CPU_SET_FOREACH(i, s) for (int i = cpu_set_next((s), 0); i >= 0; i = cpu_set_next((s), (unsigned) i + 1))

/* "0-3,8,10-11" (the kernel's cpulist format, also with spaces/newline at the end).
 * -EINVAL on syntax, -ERANGE on an index >= CPU_SET_MAX. "" gives the empty set. */
int cpu_set_parse(const char *s, CpuSet *ret);
/* The kernel's cpulist format; "" for the empty set. Returns a malloc'ed string. */
char *cpu_set_format(const CpuSet *s);
/* The set as a bitmask byte array, lowest CPU in bit 0 of byte 0, as systemd's
 * AllowedCPUs D-Bus property wants it. Returns the length used (0 for empty). */
size_t cpu_set_to_mask(const CpuSet *s, uint8_t *buf, size_t size);
