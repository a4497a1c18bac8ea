/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "executor/topology.h"
#include "fd-util.h"
#include "tmp-tree.h"

static int tree_setup(void **state) {
        return tree_setup_prefix(state, "test-topology");
}

static void put(int root, const char *path, const char *content) {
        char buf[256], *p;
        int fd;

        (void) snprintf(buf, sizeof buf, "%s", path);
        for (p = buf; (p = strchr(p, '/')); p++) {
                *p = 0;
                (void) mkdirat(root, buf, 0755);
                *p = '/';
        }
        fd = openat(root, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, content, strlen(content)), 0);
        safe_close(fd);
}

static void put_node(int root, unsigned id, const char *cpulist, unsigned long kb) {
        char path[96], content[256];

        (void) snprintf(path, sizeof path, "devices/system/node/node%u/cpulist", id);
        (void) snprintf(content, sizeof content, "%s\n", cpulist);
        put(root, path, content);
        (void) snprintf(path, sizeof path, "devices/system/node/node%u/meminfo", id);
        (void) snprintf(content, sizeof content,
                        "Node %u MemTotal:       %lu kB\n"
                        "Node %u MemFree:         123456 kB\n"
                        "Node %u MemUsed:         100 kB\n", id, kb, id, id);
        put(root, path, content);
}

static void put_freq(int root, unsigned cpu, const char *khz) {
        char path[96];

        (void) snprintf(path, sizeof path, "devices/system/cpu/cpu%u/cpufreq/cpuinfo_max_freq", cpu);
        put(root, path, khz);
}

static void test_two_nodes(void **state) {
        Tree *t = *state;
        _cleanup_topology_free_ Topology *topo = NULL;
        _cleanup_free_ char *c0 = NULL, *c1 = NULL;

        /* node0: less memory, has cpufreq; node1: more memory, no cpufreq (as in a VM). */
        put_node(t->fd, 0, "0-1", 1014524);
        put_node(t->fd, 1, "2-3", 2029048);
        put(t->fd, "devices/system/node/possible", "0-1\n");
        put(t->fd, "devices/system/node/online", "0-1\n");
        put_freq(t->fd, 0, "2000000\n");
        put_freq(t->fd, 1, "2400000\n");

        assert_int_equal(topology_load_sysfs(t->fd, &topo), 0);
        assert_int_equal(topo->n_nodes, 2);
        /* Loaded in id order. */
        assert_int_equal(topo->nodes[0].id, 0);
        assert_int_equal(topo->nodes[1].id, 1);
        c0 = cpu_set_format(&topo->nodes[0].cpus);
        c1 = cpu_set_format(&topo->nodes[1].cpus);
        assert_string_equal(c0, "0-1");
        assert_string_equal(c1, "2-3");
        assert_int_equal(cpu_set_count(&topo->cpus), 4);
        assert_int_equal(topo->nodes[0].memory_bytes, UINT64_C(1014524) * 1024);
        assert_int_equal(topo->nodes[1].memory_bytes, UINT64_C(2029048) * 1024);
        assert_int_equal(topo->cpu_max_freq_khz[0], 2000000);
        assert_int_equal(topo->cpu_max_freq_khz[1], 2400000);
        assert_int_equal(topo->cpu_max_freq_khz[2], 0);
        assert_int_equal(topo->nodes[0].max_freq_khz, 2400000);
        assert_int_equal(topo->nodes[1].max_freq_khz, 0);

        /* Memory first: the bigger node leads although it is slower (unknown speed). */
        topology_sort(topo);
        assert_int_equal(topo->nodes[0].id, 1);
        assert_int_equal(topo->nodes[1].id, 0);
}

static void test_sort_ties(void **state) {
        Tree *t = *state;
        _cleanup_topology_free_ Topology *topo = NULL;

        /* Equal memory: the faster node first; equal memory and speed: by id. */
        put_node(t->fd, 0, "0", 1000);
        put_node(t->fd, 1, "1", 1000);
        put_node(t->fd, 2, "2", 1000);
        put_node(t->fd, 3, "", 4000); /* memory-only node */
        put_freq(t->fd, 0, "1000000");
        put_freq(t->fd, 1, "3000000");
        put_freq(t->fd, 2, "1000000");

        assert_int_equal(topology_load_sysfs(t->fd, &topo), 0);
        assert_int_equal(topo->n_nodes, 4);
        assert_true(cpu_set_is_empty(&topo->nodes[3].cpus));
        topology_sort(topo);
        assert_int_equal(topo->nodes[0].id, 3);
        assert_int_equal(topo->nodes[1].id, 1);
        assert_int_equal(topo->nodes[2].id, 0);
        assert_int_equal(topo->nodes[3].id, 2);
}

/* The largest machine Debian's kernels are built for: 8,192 CPUs on 64 nodes; one CPU
 * more is an error (-ERANGE), never a truncated machine. */
static void test_large(void **state) {
        Tree *t = *state;
        _cleanup_topology_free_ Topology *topo = NULL;
        char list[32];

        for (unsigned k = 0; k < 64; k++) {
                (void) snprintf(list, sizeof list, "%u-%u", k * 128, k * 128 + 127);
                put_node(t->fd, k, list, 1000);
        }
        put_freq(t->fd, 8191, "3000000\n");
        assert_int_equal(topology_load_sysfs(t->fd, &topo), 0);
        assert_int_equal(topo->n_nodes, 64);
        assert_int_equal(cpu_set_count(&topo->cpus), 8192);
        assert_int_equal(cpu_set_count(&topo->nodes[63].cpus), 128);
        assert_true(cpu_set_test(&topo->nodes[63].cpus, 8191));
        assert_int_equal(topo->cpu_max_freq_khz[8191], 3000000);
        assert_int_equal(topo->nodes[63].max_freq_khz, 3000000);
        topo = topology_free(topo);

        put_node(t->fd, 64, "8192", 1000);
        assert_int_equal(topology_load_sysfs(t->fd, &topo), -ERANGE);
        assert_null(topo);
}

static void test_errors(void **state) {
        Tree *t = *state;
        Topology *topo = NULL;

        /* No node directory at all. */
        assert_int_equal(topology_load_sysfs(t->fd, &topo), -ENOENT);
        put(t->fd, "devices/system/node/possible", "0\n");
        assert_int_equal(topology_load_sysfs(t->fd, &topo), -ENOENT);

        put(t->fd, "devices/system/node/node0/cpulist", "0-1\n");
        put(t->fd, "devices/system/node/node0/meminfo", "Node 0 MemFree: 5 kB\n");
        assert_int_equal(topology_load_sysfs(t->fd, &topo), -EBADMSG);
        put(t->fd, "devices/system/node/node0/meminfo", "Node 0 MemTotal: lots kB\n");
        assert_int_equal(topology_load_sysfs(t->fd, &topo), -EBADMSG);
        put(t->fd, "devices/system/node/node0/meminfo", "Node 0 MemTotal: 5 kB\n");
        put(t->fd, "devices/system/node/node0/cpulist", "0-x\n");
        assert_int_equal(topology_load_sysfs(t->fd, &topo), -EINVAL);
        put(t->fd, "devices/system/node/node0/cpulist", "0\n");
        put_freq(t->fd, 0, "fast\n");
        assert_int_equal(topology_load_sysfs(t->fd, &topo), -EBADMSG);
        assert_null(topo);
        put_freq(t->fd, 0, "1200000\n");
        assert_int_equal(topology_load_sysfs(t->fd, &topo), 0);
        assert_int_equal(topo->nodes[0].memory_bytes, 5 * 1024);
        assert_int_equal(topo->nodes[0].max_freq_khz, 1200000);
        topology_free(topo);
}

static void test_this_machine(void **state) {
        _cleanup_topology_free_ Topology *topo = NULL;
        size_t cpus = 0;
        uint64_t mem = 0;

        assert_int_equal(topology_load(&topo), 0);
        assert_true(topo->n_nodes >= 1);
        for (size_t i = 0; i < topo->n_nodes; i++) {
                cpus += cpu_set_count(&topo->nodes[i].cpus);
                mem += topo->nodes[i].memory_bytes;
        }
        assert_true(cpus >= 1);
        assert_int_equal(cpus, cpu_set_count(&topo->cpus));
        assert_true(mem > 0);
        topology_sort(topo);
        for (size_t i = 1; i < topo->n_nodes; i++)
                assert_true(topo->nodes[i - 1].memory_bytes >= topo->nodes[i].memory_bytes);
}

#define T(f) cmocka_unit_test_setup_teardown(f, tree_setup, tree_teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_two_nodes),
                T(test_sort_ties),
                T(test_errors),
                T(test_large),
                cmocka_unit_test(test_this_machine),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
