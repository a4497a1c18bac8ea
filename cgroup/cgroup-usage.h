/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cgroup-stat.h"
#include "macro.h"

/* Everything the accounting records of one job's cgroup. Each group of fields has a has_*
 * flag: the file may be absent without that being an error (controller not enabled in
 * the parent's cgroup.subtree_control, memory.peak before Linux 5.19, pids.peak before
 * 6.1, ...). Consumers must check the flag, never treat 0 as "unknown". */
typedef struct CgroupUsage {
        bool has_cpu;
        CgroupCpuStat cpu;

        bool has_memory_current, has_memory_peak, has_memory_events;
        uint64_t memory_current; /* bytes */
        uint64_t memory_peak;    /* bytes */
        CgroupMemoryEvents memory_events;

        bool has_pids_current, has_pids_peak;
        uint64_t pids_current;
        uint64_t pids_peak;

        bool has_io;
        CgroupIoStat io; /* owned; release with cgroup_usage_done() */

        bool has_events;
        CgroupEvents events;

        /* Stall totals (PSI), absent without CONFIG_PSI or with psi=0. */
        bool has_cpu_pressure, has_memory_pressure, has_io_pressure;
        CgroupPressure cpu_pressure, memory_pressure, io_pressure;
} CgroupUsage;

/* Reads cpu.stat, memory.{current,peak,events}, pids.{current,peak}, io.stat,
 * cgroup.events and {cpu,memory,io}.pressure of cgroup_path below root_fd. -ENOENT if the cgroup directory does not
 * exist; a missing file only leaves its has_* flag false; a file that exists but cannot
 * be parsed fails with -EBADMSG. On failure *ret is left untouched. */
int cg_read_usage(int root_fd, const char *cgroup_path, CgroupUsage *ret);

void cgroup_usage_done(CgroupUsage *u);
