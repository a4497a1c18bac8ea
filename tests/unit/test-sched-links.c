/* SPDX-License-Identifier: GPL-2.0-or-later */
/* NVLink in GPU placement (SchedGpu.links): a job of several GPUs gets linked ones over the
 * lowest free ones, a job of one the least linked (keeping linked pairs whole), and a
 * machine without links places as before. Every case worked by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "sched.h"
#include "test-sched-helpers.h"

#define NOW 1000

static SchedNode nodes[2];
static SchedGpu gpus[8];
static SchedAllocation allocs[8];

/* One node of 16 CPUs and 64G with n_gpus GPUs; pairs[] the linked pairs (a, b). */
static SchedMachine machine(size_t n_gpus, const unsigned (*pairs)[2], size_t n_pairs) {
        SchedMachine m;

        machine_uniform(nodes, 1, 16, 64 * GIB, &m);
        for (size_t g = 0; g < n_gpus; g++)
                gpus[g] = (SchedGpu) { .node = 0 };
        for (size_t i = 0; i < n_pairs; i++) {
                gpus[pairs[i][0]].links |= UINT64_C(1) << pairs[i][1];
                gpus[pairs[i][1]].links |= UINT64_C(1) << pairs[i][0];
        }
        m.gpus = gpus;
        m.n_gpus = n_gpus;
        return m;
}

static SchedJob gpu_job(uint64_t id, unsigned n_gpus) {
        SchedJob j = job_pending(id, id, 1, 3600);

        j.gpus = (uint16_t) n_gpus;
        return j;
}

static void run(SchedJob *j, size_t slot, const char *list, uint64_t mask) {
        SchedAllocation *a = &allocs[slot];

        *a = (SchedAllocation) { .gpu_mask = mask, .node_mask = 1 };
        assert_int_equal(cpu_set_parse(list, &a->cpus), 0);
        j->state = SCHED_JOB_RUNNING;
        j->start_time = NOW - 10;
        j->alloc = a;
}

static uint64_t started_mask(const SchedResult *r, uint64_t id) {
        for (size_t i = 0; i < r->n_decisions; i++)
                if (r->decisions[i].type == SCHED_DECISION_START && r->decisions[i].job_id == id)
                        return r->decisions[i].alloc.gpu_mask;
        fail_msg("job %llu not started", (unsigned long long) id);
        return 0;
}

static int pass(const SchedMachine *m, SchedJob *jobs, size_t n, SchedResult *ret) {
        static SchedContext *ctx;
        SchedConfig c = SCHED_CONFIG_DEFAULT;

        sched_context_free(ctx);
        ctx = sched_context_new();
        assert_non_null(ctx);
        return sched_pass(ctx, &c, m, jobs, n, NOW, ret);
}

/* GPUs 0-1 and 2-3 linked, GPU 0 busy: the lowest free pair would be 1 and 2 (not
 * linked); a 2-GPU job gets 2 and 3. */
static void test_pair_over_lowest(void **state) {
        static const unsigned pairs[][2] = { { 0, 1 }, { 2, 3 } };
        SchedMachine m = machine(4, pairs, 2);
        SchedJob jobs[2] = { gpu_job(1, 1), gpu_job(2, 2) };
        SchedResult r;

        run(&jobs[0], 0, "0", 0x1);
        assert_int_equal(pass(&m, jobs, 2, &r), 0);
        assert_int_equal(started_mask(&r, 2), 0xc);

        /* Without links: the lowest, 1 and 2, as before. */
        m = machine(4, NULL, 0);
        jobs[1] = gpu_job(2, 2);
        assert_int_equal(pass(&m, jobs, 2, &r), 0);
        assert_int_equal(started_mask(&r, 2), 0x6);
}

/* GPUs 0-1 linked, 2 and 3 not: a 1-GPU job takes 2 (no link: the pair stays whole), the
 * next 2-GPU job the pair. */
static void test_single_keeps_pairs(void **state) {
        static const unsigned pairs[][2] = { { 0, 1 } };
        SchedMachine m = machine(4, pairs, 1);
        SchedJob jobs[2] = { gpu_job(1, 1), gpu_job(2, 2) };
        SchedResult r;

        assert_int_equal(pass(&m, jobs, 2, &r), 0);
        assert_int_equal(started_mask(&r, 1), 0x4);
        assert_int_equal(started_mask(&r, 2), 0x3);
}

/* 4 GPUs behind an NVSwitch (all linked) and 4 more linked in two pairs (4-5, 6-7), 0 and
 * 4 busy: a 3-GPU job gets three of the switch's (1, 2, 3), not 5 with two others. */
static void test_switch_group(void **state) {
        static const unsigned pairs[][2] = { { 0, 1 }, { 0, 2 }, { 0, 3 }, { 1, 2 }, { 1, 3 }, { 2, 3 },
                                             { 4, 5 }, { 6, 7 } };
        SchedMachine m = machine(8, pairs, ELEMENTSOF(pairs));
        SchedJob jobs[3] = { gpu_job(1, 1), gpu_job(2, 1), gpu_job(3, 3) };
        SchedResult r;

        run(&jobs[0], 0, "0", 0x1);
        run(&jobs[1], 1, "1", 0x10);
        assert_int_equal(pass(&m, jobs, 3, &r), 0);
        assert_int_equal(started_mask(&r, 3), 0xe);
}

/* Links over NUMA nearness: two nodes of 16 CPUs, GPUs 0 and 1 on node 0 (not linked),
 * 2-3 on node 1 (linked), 12 of node 1's CPUs busy. An 8-CPU 2-GPU job near its GPUs
 * would take node 0 and GPUs 0 and 1; it gets the linked 2 and 3, its CPUs from node 1
 * first (4) and node 0 (4). With --gres-flags=enforce-binding its CPUs must be on its
 * GPUs' nodes: node 0 and GPUs 0 and 1, as before. */
static void test_links_over_numa(void **state) {
        SchedMachine m;
        SchedJob jobs[2];
        SchedResult r;
        const SchedDecision *d = NULL;

        machine_uniform(nodes, 2, 16, 64 * GIB, &m);
        gpus[0] = (SchedGpu) { .node = 0 };
        gpus[1] = (SchedGpu) { .node = 0 };
        gpus[2] = (SchedGpu) { .node = 1, .links = 0x8 };
        gpus[3] = (SchedGpu) { .node = 1, .links = 0x4 };
        m.gpus = gpus;
        m.n_gpus = 4;
        for (int binding = 0; binding <= 1; binding++) {
                jobs[0] = job_pending(1, 1, 12, 3600);
                allocs[0] = (SchedAllocation) { .node_mask = 2 };
                assert_int_equal(cpu_set_parse("16-27", &allocs[0].cpus), 0);
                jobs[0].state = SCHED_JOB_RUNNING;
                jobs[0].start_time = NOW - 10;
                jobs[0].alloc = &allocs[0];
                jobs[1] = gpu_job(2, 2);
                jobs[1].cpus = 8;
                jobs[1].gpu_binding = binding;
                assert_int_equal(pass(&m, jobs, 2, &r), 0);
                for (size_t i = 0; i < r.n_decisions; i++)
                        if (r.decisions[i].job_id == 2)
                                d = &r.decisions[i];
                assert_non_null(d);
                if (!binding) {
                        assert_int_equal(d->alloc.gpu_mask, 0xc);
                        assert_int_equal(d->alloc.node_mask, 0x3);
                        assert_int_equal(cpu_set_count(&d->alloc.cpus), 8);
                        assert_true(cpu_set_test(&d->alloc.cpus, 28));
                } else {
                        assert_int_equal(d->alloc.gpu_mask, 0x3);
                        assert_int_equal(d->alloc.node_mask, 0x1);
                }
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pair_over_lowest),
                cmocka_unit_test(test_single_keeps_pairs),
                cmocka_unit_test(test_switch_group),
                cmocka_unit_test(test_links_over_numa),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
