/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cpuset.h"
#include "macro.h"

/* The machine as the allocator sees it: NUMA nodes with their CPUs, memory and speed. */

typedef struct TopologyNode {
        unsigned id;
        CpuSet cpus;           /* may be empty: memory-only nodes (CXL, PMEM) exist */
        uint64_t memory_bytes; /* MemTotal of the node */
        uint64_t max_freq_khz; /* the highest cpuinfo_max_freq of its CPUs; 0 if unknown */
} TopologyNode;

typedef struct Topology {
        TopologyNode *nodes;
        size_t n_nodes;
        CpuSet cpus; /* all CPUs of all nodes */
        /* cpufreq's cpuinfo_max_freq per CPU in kHz; 0 where the kernel does not expose it
         * (typically in VMs, or without a cpufreq driver). */
        uint32_t cpu_max_freq_khz[CPU_SET_MAX];
} Topology;

/* Reads devices/system/node/node<N>/{cpulist,meminfo} and
 * devices/system/cpu/cpu<N>/cpufreq/cpuinfo_max_freq below sysfs_root_fd (a directory fd
 * for /sys, or a fake tree in tests). Nodes come out ordered by id. -ENOENT if there is no
 * node directory (a kernel built without NUMA; topology_load() handles that case). */
int topology_load_sysfs(int sysfs_root_fd, Topology **ret);

/* -ERANGE when a CPU's number is CPU_SET_MAX or more (the machine is larger than
 * supported). */
/* The running machine, through libnuma; when libnuma reports NUMA unavailable, one node 0
 * with all online CPUs and the MemTotal of /proc/meminfo. CPU speeds come from /sys. */
int topology_load(Topology **ret);

/* Orders nodes by memory size, then speed, both descending, then by id: the order in
 * which WCCS considers nodes. */
void topology_sort(Topology *t);

Topology *topology_free(Topology *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Topology *, topology_free);
#define _cleanup_topology_free_ _cleanup_(topology_freep)
