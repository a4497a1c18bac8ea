/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* Pure parsers for the cgroup v2 accounting files: a string in, a struct out, no I/O.
 * Keys the kernel adds later are ignored; a line that is not "key value" (or, in io.stat,
 * "MAJ:MIN key=value...") fails the whole parse with -EBADMSG, because a half-understood
 * file is worse than a clearly missing one. Keys not present read as 0. */

typedef struct CgroupCpuStat {
        uint64_t usage_usec;
        uint64_t user_usec;
        uint64_t system_usec;
        uint64_t nr_throttled;   /* only with the cpu controller enabled */
        uint64_t throttled_usec; /* only with the cpu controller enabled */
} CgroupCpuStat;

typedef struct CgroupIoDevice {
        unsigned major, minor;
        uint64_t rbytes, wbytes;
        uint64_t rios, wios;
        uint64_t dbytes, dios; /* discards, since Linux 5.8 */
} CgroupIoDevice;

typedef struct CgroupIoStat {
        CgroupIoDevice *devices;
        size_t n_devices;
} CgroupIoStat;

typedef struct CgroupMemoryEvents {
        uint64_t low, high, max;
        uint64_t oom, oom_kill;
        uint64_t oom_group_kill; /* since Linux 5.17 */
} CgroupMemoryEvents;

typedef struct CgroupEvents {
        bool populated;
        bool frozen; /* false on kernels without the freezer (< 5.2) */
} CgroupEvents;

/* A pressure (PSI) file, cpu.pressure / memory.pressure / io.pressure: the total time, in
 * µs, that some (at least one) or all (full) of the cgroup's tasks stalled on the
 * resource. "full" is absent from cpu.pressure before Linux 5.13: then 0. */
typedef struct CgroupPressure {
        uint64_t some_usec, full_usec;
} CgroupPressure;

int cg_parse_cpu_stat(const char *s, CgroupCpuStat *ret);
int cg_parse_pressure(const char *s, CgroupPressure *ret);
int cg_parse_memory_events(const char *s, CgroupMemoryEvents *ret);
int cg_parse_events(const char *s, CgroupEvents *ret);

/* Fills ret with a malloc'ed per-device array; free with cgroup_io_stat_done(). */
int cg_parse_io_stat(const char *s, CgroupIoStat *ret);
void cgroup_io_stat_done(CgroupIoStat *st);
/* Sums over all devices into one CgroupIoDevice (major/minor 0). */
void cgroup_io_stat_total(const CgroupIoStat *st, CgroupIoDevice *ret);

/* A single-number file such as memory.peak or pids.max, with one optional trailing
 * newline; "max" gives UINT64_MAX. */
int cg_parse_u64_or_max(const char *s, uint64_t *ret);
