/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <stdio.h>
#include <string.h>

#include "errno-util.h"
#include "fd-util.h"
#include "parse-util.h"
#include "topology.h"

Topology *topology_free(Topology *t) {
        if (!t)
                return NULL;
        free(t->nodes);
        free(t);
        return NULL;
}

static Topology *topology_new(void) {
        return new0(Topology, 1);
}

static int topology_add_node(Topology *t, unsigned id, const CpuSet *cpus, uint64_t memory_bytes) {
        TopologyNode *n;

        n = reallocarray(t->nodes, t->n_nodes + 1, sizeof(TopologyNode));
        if (!n)
                return -ENOMEM;
        t->nodes = n;
        t->nodes[t->n_nodes++] = (TopologyNode) {
                .id = id,
                .cpus = *cpus,
                .memory_bytes = memory_bytes,
        };
        cpu_set_or(&t->cpus, cpus);
        return 0;
}

/* The "MemTotal:" value of a meminfo file, both the per-node form
 * ("Node 0 MemTotal:       1014524 kB") and /proc/meminfo's ("MemTotal:  16309420 kB"). */
static int parse_memtotal(const char *s, uint64_t *ret) {
        const char *p = strstr(s, "MemTotal:");
        _cleanup_free_ char *num = NULL;
        uint64_t kb;
        size_t n;

        if (!p)
                return -EBADMSG;
        p += strlen("MemTotal:");
        p += strspn(p, " \t");
        n = strspn(p, "0123456789");
        if (n == 0 || !strneq(p + n, " kB", 3))
                return -EBADMSG;
        num = strndup(p, n);
        if (!num)
                return -ENOMEM;
        if (safe_atou64(num, &kb) < 0 || kb > UINT64_MAX / 1024)
                return -EBADMSG;
        *ret = kb * 1024;
        return 0;
}

static int read_cpulist(int dirfd, const char *path, CpuSet *ret) {
        _cleanup_free_ char *s = NULL;
        int r;

        r = read_file_at(dirfd, path, 64 * 1024, &s, NULL);
        if (r < 0)
                return r;
        return cpu_set_parse(s, ret);
}

/* Fills in per-CPU maximum frequencies and each node's maximum over its CPUs. */
static int load_freqs(int sysfs_fd, Topology *t) {
        CPU_SET_FOREACH(cpu, &t->cpus) {
                _cleanup_free_ char *s = NULL;
                char path[96];
                uint64_t khz;
                size_t n;
                int r;

                (void) snprintf(path, sizeof path, "devices/system/cpu/cpu%d/cpufreq/cpuinfo_max_freq", cpu);
                r = read_file_at(sysfs_fd, path, 64, &s, &n);
                if (r == -ENOENT)
                        continue;
                if (r < 0)
                        return r;
                if (n > 0 && s[n - 1] == '\n')
                        s[n - 1] = 0;
                if (safe_atou64(s, &khz) < 0 || khz > UINT32_MAX)
                        return -EBADMSG;
                t->cpu_max_freq_khz[cpu] = (uint32_t) khz;
        }

        for (size_t i = 0; i < t->n_nodes; i++) {
                TopologyNode *node = &t->nodes[i];

                node->max_freq_khz = 0;
                CPU_SET_FOREACH(cpu, &node->cpus)
                        node->max_freq_khz = MAX(node->max_freq_khz, (uint64_t) t->cpu_max_freq_khz[cpu]);
        }
        return 0;
}

static int cmp_id(const void *a, const void *b) {
        const TopologyNode *x = a, *y = b;

        return (x->id > y->id) - (x->id < y->id);
}

int topology_load_sysfs(int sysfs_root_fd, Topology **ret) {
        _cleanup_topology_free_ Topology *t = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        int r;

        assert(ret);

        r = opendir_at(sysfs_root_fd, "devices/system/node", 0, &d);
        if (r < 0)
                return r;

        t = topology_new();
        if (!t)
                return -ENOMEM;

        for (struct dirent *de; (errno = 0, de = readdir(d)); ) {
                _cleanup_free_ char *meminfo = NULL;
                char path[64];
                uint64_t mem;
                unsigned id;
                CpuSet cpus;

                if (!strneq(de->d_name, "node", 4) || safe_atou(de->d_name + 4, &id) < 0)
                        continue; /* "possible", "online", "has_cpu", ... */

                (void) snprintf(path, sizeof path, "node%u/cpulist", id);
                r = read_cpulist(dirfd(d), path, &cpus);
                if (r < 0)
                        return r;
                (void) snprintf(path, sizeof path, "node%u/meminfo", id);
                r = read_file_at(dirfd(d), path, 64 * 1024, &meminfo, NULL);
                if (r < 0)
                        return r;
                r = parse_memtotal(meminfo, &mem);
                if (r < 0)
                        return r;
                r = topology_add_node(t, id, &cpus, mem);
                if (r < 0)
                        return r;
        }
        if (errno != 0)
                return negative_errno();
        if (t->n_nodes == 0)
                return -ENOENT;
        qsort(t->nodes, t->n_nodes, sizeof(TopologyNode), cmp_id);

        r = load_freqs(sysfs_root_fd, t);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(t);
        return 0;
}

static int load_libnuma(Topology *t) {
        struct bitmask *bm;
        int max, r = 0;

        max = numa_max_node();
        if (max < 0)
                return -ENODEV;
        bm = numa_allocate_cpumask();
        if (!bm)
                return -ENOMEM;

        for (int n = 0; n <= max; n++) {
                long long size;
                CpuSet cpus = {};

                /* Node numbers may have holes. */
                if (!numa_bitmask_isbitset(numa_nodes_ptr, (unsigned) n))
                        continue;
                size = numa_node_size64(n, NULL);
                if (size < 0)
                        continue;
                numa_bitmask_clearall(bm);
                if (numa_node_to_cpus(n, bm) < 0) {
                        r = errno_or_else(EIO);
                        break;
                }
                for (unsigned i = 0; i < bm->size && r >= 0; i++)
                        if (numa_bitmask_isbitset(bm, i)) {
                                if (i >= CPU_SET_MAX)
                                        r = -ERANGE; /* more CPUs than supported: never a truncation */
                                else
                                        cpu_set_add(&cpus, i);
                        }
                if (r < 0)
                        break;
                r = topology_add_node(t, (unsigned) n, &cpus, (uint64_t) size);
                if (r < 0)
                        break;
        }
        numa_free_cpumask(bm);
        if (r < 0)
                return r;
        return t->n_nodes > 0 ? 0 : -ENODEV;
}

static int load_single_node(int sysfs_fd, Topology *t) {
        _cleanup_free_ char *meminfo = NULL;
        uint64_t mem;
        CpuSet cpus;
        int r;

        r = read_cpulist(sysfs_fd, "devices/system/cpu/online", &cpus);
        if (r < 0)
                return r;
        r = read_file_at(AT_FDCWD, "/proc/meminfo", 1024 * 1024, &meminfo, NULL);
        if (r < 0)
                return r;
        r = parse_memtotal(meminfo, &mem);
        if (r < 0)
                return r;
        return topology_add_node(t, 0, &cpus, mem);
}

int topology_load(Topology **ret) {
        _cleanup_topology_free_ Topology *t = NULL;
        _cleanup_close_ int sysfs_fd = -EBADF;
        int r;

        assert(ret);

        sysfs_fd = open("/sys", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sysfs_fd < 0)
                return negative_errno();

        t = topology_new();
        if (!t)
                return -ENOMEM;

        if (numa_available() < 0)
                r = load_single_node(sysfs_fd, t);
        else
                r = load_libnuma(t);
        if (r < 0)
                return r;

        r = load_freqs(sysfs_fd, t);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(t);
        return 0;
}

static int cmp_wccs(const void *a, const void *b) {
        const TopologyNode *x = a, *y = b;

        if (x->memory_bytes != y->memory_bytes)
                return x->memory_bytes > y->memory_bytes ? -1 : 1;
        if (x->max_freq_khz != y->max_freq_khz)
                return x->max_freq_khz > y->max_freq_khz ? -1 : 1;
        return cmp_id(a, b);
}

void topology_sort(Topology *t) {
        assert(t);
        if (t->n_nodes > 1)
                qsort(t->nodes, t->n_nodes, sizeof(TopologyNode), cmp_wccs);
}
