/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Hand-computed scenarios for sched/. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "sched.h"
#include "test-sched-helpers.h"

typedef struct Run {
        SchedContext *ctx;
        SchedResult res;
} Run;

static SchedAllocation allocs[64];

/* Marks jobs[i] running since start on the given nodes' first cpus CPUs. */
static void run_on(SchedJob *j, const SchedMachine *m, size_t slot, uint64_t start, uint64_t node_mask,
                   unsigned cpus, uint64_t mem, bool whole) {
        SchedAllocation *a = &allocs[slot];

        *a = (SchedAllocation) { .node_mask = node_mask };
        for (size_t k = 0; k < m->n_nodes; k++) {
                unsigned taken = 0;
                if (!(node_mask & (UINT64_C(1) << k)))
                        continue;
                CPU_SET_FOREACH(c, &m->nodes[k].cpus)
                        if (whole || taken < cpus) {
                                cpu_set_add(&a->cpus, (unsigned) c);
                                taken++;
                        }
                a->mem[k] = whole ? m->nodes[k].memory : mem;
        }
        j->state = SCHED_JOB_RUNNING;
        j->start_time = start;
        j->alloc = a;
        j->exclusive = whole;
}

static void pass(Run *r, const SchedConfig *cfg, const SchedMachine *m, SchedJob *jobs, size_t n, uint64_t now) {
        if (!r->ctx)
                r->ctx = sched_context_new();
        assert_non_null(r->ctx);
        assert_int_equal(sched_pass(r->ctx, cfg, m, jobs, n, now, &r->res), 0);
}

static bool started(const Run *r, uint64_t id, SchedAllocation *ret) {
        for (size_t i = 0; i < r->res.n_decisions; i++)
                if (r->res.decisions[i].job_id == id) {
                        if (ret)
                                *ret = r->res.decisions[i].alloc;
                        return true;
                }
        return false;
}

static const SchedWait *waiting(const Run *r, uint64_t id) {
        for (size_t i = 0; i < r->res.n_waiting; i++)
                if (r->res.waiting[i].job_id == id)
                        return &r->res.waiting[i];
        fail_msg("job %llu is not waiting", (unsigned long long) id);
        return NULL;
}

static void expect_wait(const Run *r, uint64_t id, SchedReason reason, uint64_t est) {
        const SchedWait *w = waiting(r, id);

        if (w->reason != reason || w->est_start != est)
                fail_msg("job %llu: reason %s est %llu, want %s est %llu", (unsigned long long) id,
                         sched_reason_to_string(w->reason), (unsigned long long) w->est_start,
                         sched_reason_to_string(reason), (unsigned long long) est);
}

static void run_done(Run *r) {
        r->ctx = sched_context_free(r->ctx);
}

/* WCCS's example: 4 nodes, the top job needs all 4 and waits 15 minutes for a running
 * one; a 1-node job of at most 15 minutes is backfilled, one of 30 minutes is not. */
static void test_wccs_seed(void **state) {
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedNode nodes[4];
        SchedMachine m;
        SchedJob jobs[4];
        Run r = {};

        machine_uniform(nodes, 4, 4, 16 * GIB, &m);
        jobs[0] = job_pending(1, 0, 4, 1800);
        run_on(&jobs[0], &m, 0, 0, 1u << 0, 4, 0, true);
        jobs[1] = job_pending(2, 100, 16, 3600);
        jobs[1].exclusive = true;
        jobs[2] = job_pending(3, 200, 4, 1800);  /* 30 minutes */
        jobs[2].exclusive = true;
        jobs[3] = job_pending(4, 300, 4, 900);   /* 15 minutes */
        jobs[3].exclusive = true;

        pass(&r, &cfg, &m, jobs, 4, 900);
        expect_wait(&r, 2, SCHED_REASON_RESOURCES, 1800);
        /* An estimate, after the top job's hour on the whole machine. */
        expect_wait(&r, 3, SCHED_REASON_PRIORITY, 5400);
        assert_true(started(&r, 4, NULL));
        assert_true(waiting(&r, 3)->bypassed);
        assert_true(waiting(&r, 2)->bypassed);
        assert_int_equal(r.res.n_decisions, 1);

        /* With fcfs nothing passes the top job. */
        cfg.policy = &sched_policy_fcfs;
        pass(&r, &cfg, &m, jobs, 4, 900);
        assert_int_equal(r.res.n_decisions, 0);
        expect_wait(&r, 2, SCHED_REASON_RESOURCES, 1800);
        /* Job 4 would fit the hole now, but in order it comes after job 3. */
        expect_wait(&r, 3, SCHED_REASON_PRIORITY, 5400);
        expect_wait(&r, 4, SCHED_REASON_PRIORITY, 5400);

        /* Estimates for the first estimate_depth jobs behind the top one only. */
        cfg.estimate_depth = 1;
        pass(&r, &cfg, &m, jobs, 4, 900);
        expect_wait(&r, 3, SCHED_REASON_PRIORITY, 5400);
        expect_wait(&r, 4, SCHED_REASON_PRIORITY, SCHED_TIME_INFINITY);
        cfg.estimate_depth = 0;
        pass(&r, &cfg, &m, jobs, 4, 900);
        expect_wait(&r, 2, SCHED_REASON_RESOURCES, 1800);
        expect_wait(&r, 3, SCHED_REASON_PRIORITY, SCHED_TIME_INFINITY);
        run_done(&r);
}

/* The 30-minute job does start when it runs on a node the top job will not need. */
static void test_backfill_spare_node(void **state) {
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedNode nodes[5];
        SchedMachine m;
        SchedJob jobs[5];
        SchedAllocation a;
        Run r = {};

        machine_uniform(nodes, 5, 4, 16 * GIB, &m);
        jobs[0] = job_pending(1, 0, 4, 1800);
        run_on(&jobs[0], &m, 0, 0, 1u << 0, 4, 0, true);
        jobs[1] = job_pending(2, 0, 4, 1800);
        run_on(&jobs[1], &m, 1, 0, 1u << 1, 4, 0, true);
        jobs[2] = job_pending(3, 0, 4, 7200);
        run_on(&jobs[2], &m, 2, 0, 1u << 2, 4, 0, true);
        jobs[3] = job_pending(4, 100, 12, 3600);
        jobs[3].exclusive = true;
        jobs[4] = job_pending(5, 200, 4, 1800);
        jobs[4].exclusive = true;

        pass(&r, &cfg, &m, jobs, 5, 900);
        expect_wait(&r, 4, SCHED_REASON_RESOURCES, 1800);
        assert_true(started(&r, 5, &a));
        /* The top job takes nodes 0, 1, 3 then (preferred order); node 4 is spare. */
        assert_int_equal(a.node_mask, 1u << 4);
        run_done(&r);
}

static void test_dependencies(void **state) {
        static const struct {
                SchedDepType type;
                SchedDepStatus status;
                SchedReason reason; /* NONE: starts */
        } t[] = {
                { SCHED_DEP_AFTEROK,    SCHED_DEP_UNKNOWN,         SCHED_REASON_DEPENDENCY },
                { SCHED_DEP_AFTEROK,    SCHED_DEP_STARTED,         SCHED_REASON_DEPENDENCY },
                { SCHED_DEP_AFTEROK,    SCHED_DEP_FINISHED_OK,     SCHED_REASON_NONE },
                { SCHED_DEP_AFTEROK,    SCHED_DEP_FINISHED_FAILED, SCHED_REASON_DEPENDENCY_NEVER_SATISFIED },
                { SCHED_DEP_AFTERNOTOK, SCHED_DEP_FINISHED_OK,     SCHED_REASON_DEPENDENCY_NEVER_SATISFIED },
                { SCHED_DEP_AFTERNOTOK, SCHED_DEP_FINISHED_FAILED, SCHED_REASON_NONE },
                { SCHED_DEP_AFTERNOTOK, SCHED_DEP_STARTED,         SCHED_REASON_DEPENDENCY },
                { SCHED_DEP_AFTERANY,   SCHED_DEP_STARTED,         SCHED_REASON_DEPENDENCY },
                { SCHED_DEP_AFTERANY,   SCHED_DEP_FINISHED_FAILED, SCHED_REASON_NONE },
                { SCHED_DEP_AFTERANY,   SCHED_DEP_FINISHED_OK,     SCHED_REASON_NONE },
                { SCHED_DEP_AFTER,      SCHED_DEP_UNKNOWN,         SCHED_REASON_DEPENDENCY },
                { SCHED_DEP_AFTER,      SCHED_DEP_STARTED,         SCHED_REASON_NONE },
        };
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedNode nodes[1];
        SchedMachine m;
        Run r = {};

        machine_uniform(nodes, 1, 4, 16 * GIB, &m);
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                SchedDep d = { .job_id = 99, .type = t[i].type, .status = t[i].status };
                SchedJob jobs[2] = { job_pending(1, 0, 1, 60), job_pending(2, 10, 1, 60) };

                jobs[0].deps = &d;
                jobs[0].n_deps = 1;
                pass(&r, &cfg, &m, jobs, 2, 100);
                assert_true(started(&r, 2, NULL)); /* never blocked by the other */
                if (t[i].reason == SCHED_REASON_NONE)
                        assert_true(started(&r, 1, NULL));
                else
                        expect_wait(&r, 1, t[i].reason, SCHED_TIME_INFINITY);
        }
        run_done(&r);
}

static void test_hold_begin_toobig_limit(void **state) {
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedNode nodes[2];
        SchedMachine m;
        SchedJob jobs[6];
        Run r = {};

        machine_uniform(nodes, 2, 4, 16 * GIB, &m);
        jobs[0] = job_pending(1, 0, 2, 60);
        jobs[0].held = true;
        jobs[1] = job_pending(2, 0, 9, 60);      /* 8 CPUs exist */
        jobs[2] = job_pending(3, 0, 1, 60);
        jobs[2].memory = 33 * GIB;               /* 32G exist */
        jobs[3] = job_pending(4, 0, 1, 60);
        jobs[3].begin_time = 500;
        jobs[4] = job_pending(5, 0, 1, 7200);
        jobs[5] = job_pending(6, 0, 8, 60);
        cfg.max_walltime = 3600;

        pass(&r, &cfg, &m, jobs, 6, 100);
        expect_wait(&r, 1, SCHED_REASON_HELD, SCHED_TIME_INFINITY);
        expect_wait(&r, 2, SCHED_REASON_TOO_BIG, SCHED_TIME_INFINITY);
        expect_wait(&r, 3, SCHED_REASON_TOO_BIG, SCHED_TIME_INFINITY);
        expect_wait(&r, 4, SCHED_REASON_BEGIN_TIME, 500);
        expect_wait(&r, 5, SCHED_REASON_TIME_LIMIT, SCHED_TIME_INFINITY);
        assert_true(started(&r, 6, NULL));
        assert_int_equal(r.res.n_decisions, 1);

        pass(&r, &cfg, &m, jobs, 5, 500);
        assert_true(started(&r, 4, NULL));
        run_done(&r);
}

/* Queue walltime limits are the scheduler's to apply: a job without a limit runs under
 * the queue's default, else its maximum; one asking for more than the maximum waits
 * with TimeLimit. The reservation of the top job shows which limit was planned with. */
static void test_queue_walltime(void **state) {
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedNode nodes[1];
        SchedMachine m;
        SchedJob jobs[4];
        Run r = {};

        assert_int_equal(sched_effective_walltime(0, 600, 3600), 600);
        assert_int_equal(sched_effective_walltime(SCHED_TIME_INFINITY, 0, 3600), 3600);
        assert_int_equal(sched_effective_walltime(0, 0, 0), SCHED_TIME_INFINITY);
        assert_int_equal(sched_effective_walltime(100, 600, 3600), 100);

        machine_uniform(nodes, 1, 4, 16 * GIB, &m);
        jobs[0] = job_pending(1, 0, 4, 0);               /* no limit: the default, 600 */
        jobs[0].default_walltime = 600;
        jobs[0].max_walltime = 3600;
        jobs[1] = job_pending(2, 1, 4, 0);               /* no default: the maximum */
        jobs[1].max_walltime = 3600;
        jobs[2] = job_pending(3, 2, 1, 7200);            /* over its queue's maximum */
        jobs[2].max_walltime = 3600;
        jobs[3] = job_pending(4, 3, 4, 60);
        pass(&r, &cfg, &m, jobs, 4, 100);
        assert_true(started(&r, 1, NULL));
        expect_wait(&r, 3, SCHED_REASON_TIME_LIMIT, SCHED_TIME_INFINITY);
        /* Job 1 ends by 100 + 600: that is when job 2 can start. */
        expect_wait(&r, 2, SCHED_REASON_RESOURCES, 700);
        run_done(&r);
}

/* "%2": at most two tasks of the array run at once, the first in priority order first;
 * a running task counts; other arrays and plain jobs are not held back. */
static void test_array_throttle(void **state) {
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedNode nodes[1];
        SchedMachine m;
        SchedJob jobs[7];
        Run r = {};

        machine_uniform(nodes, 1, 8, 16 * GIB, &m);
        for (int i = 0; i < 5; i++) {
                jobs[i] = job_pending(10 + (uint64_t) i, 0, 1, 60);
                jobs[i].array_id = 10;
                jobs[i].array_max_running = 2;
        }
        run_on(&jobs[0], &m, 0, 50, 1, 1, 0, false);
        jobs[5] = job_pending(20, 0, 1, 60);             /* another array, unthrottled */
        jobs[5].array_id = 20;
        jobs[6] = job_pending(30, 0, 1, 60);
        pass(&r, &cfg, &m, jobs, 7, 100);
        assert_true(started(&r, 11, NULL));
        assert_false(started(&r, 12, NULL));
        expect_wait(&r, 12, SCHED_REASON_ARRAY_TASK_LIMIT, SCHED_TIME_INFINITY);
        expect_wait(&r, 13, SCHED_REASON_ARRAY_TASK_LIMIT, SCHED_TIME_INFINITY);
        expect_wait(&r, 14, SCHED_REASON_ARRAY_TASK_LIMIT, SCHED_TIME_INFINITY);
        assert_true(started(&r, 20, NULL));
        assert_true(started(&r, 30, NULL));
        assert_string_equal(sched_reason_to_string(SCHED_REASON_ARRAY_TASK_LIMIT), "JobArrayTaskLimit");
        run_done(&r);
}

/* Maui's targeted queue time: past its queue's target a job's priority grows as
 * weight x (e^(waited/target) - 1), so a bonus job that waited twice its target (1000 x
 * (e^2 - 1) = 6389) passes a fresh normal one (1000). */
static void test_target_queue_time(void **state) {
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedNode nodes[1];
        SchedMachine m;
        SchedJob jobs[3];
        Run r = {};

        machine_uniform(nodes, 1, 1, 16 * GIB, &m);
        jobs[0] = job_pending(1, 0, 1, 100000);
        run_on(&jobs[0], &m, 0, 0, 1, 1, 0, false); /* the machine is busy */
        jobs[1] = job_pending(2, 7200, 1, 60);
        jobs[1].queue_priority = 1;
        jobs[2] = job_pending(3, 0, 1, 60);
        jobs[2].target_queue_time = 3600;
        pass(&r, &cfg, &m, jobs, 3, 7200);
        assert_int_equal(r.res.waiting[0].job_id, 3);
        assert_true(r.res.waiting[0].priority > 6389.0 && r.res.waiting[0].priority < 6389.1);
        assert_true(r.res.waiting[1].priority == 1000.0);
        /* The terms add up to the priority the pass used. */
        {
                SchedPriorityTerm t[_SCHED_TERM_MAX];
                double sum = sched_priority_terms(&cfg, &jobs[2], 7200, t);
                assert_true(sum > r.res.waiting[0].priority - 1e-6 && sum < r.res.waiting[0].priority + 1e-6);
                assert_string_equal(t[SCHED_TERM_TARGET].name, "target");
                assert_true(t[SCHED_TERM_TARGET].input == 2.0);
                assert_true(t[SCHED_TERM_AGE].value > 0.0083 && t[SCHED_TERM_AGE].value < 0.0084);
        }
        /* Without the weight, the queues decide again. */
        cfg.weights.target = 0.0;
        pass(&r, &cfg, &m, jobs, 3, 7200);
        assert_int_equal(r.res.waiting[0].job_id, 2);
        run_done(&r);
}

/* NCI's queue shuffling: each waiting job scored by the CPUs of the jobs before it in
 * its queue from its user or project (whatever their state), lightest first. */
static void test_shuffle(void **state) {
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedNode nodes[1];
        SchedMachine m;
        SchedJob jobs[5];
        static const uint32_t user[] = { 1, 1, 2, 3, 1 }, project[] = { 7, 7, 8, 7, 7 }, cpus[] = { 4, 1, 1, 1, 2 };
        static const uint64_t want[] = { 3, 2, 4, 5 }; /* scores 0, 4, 5, 6 */
        Run r = {};

        cfg.ordering = SCHED_ORDERING_SHUFFLE;
        cfg.policy = &sched_policy_fcfs;
        machine_uniform(nodes, 1, 4, 16 * GIB, &m);
        for (int i = 0; i < 5; i++) {
                jobs[i] = job_pending((uint64_t) i + 1, (uint64_t) i, cpus[i], 60);
                jobs[i].user_id = user[i];
                jobs[i].project_id = project[i];
        }
        run_on(&jobs[0], &m, 0, 0, 1, 4, 0, false);
        pass(&r, &cfg, &m, jobs, 5, 10);
        assert_int_equal(r.res.n_waiting, 4);
        for (size_t i = 0; i < 4; i++)
                if (r.res.waiting[i].job_id != want[i])
                        fail_msg("position %zu: job %llu, want %llu", i, (unsigned long long) r.res.waiting[i].job_id,
                                 (unsigned long long) want[i]);
        /* Queues still go first: a higher queue's heavy job leads. */
        jobs[4].queue_priority = 1;
        pass(&r, &cfg, &m, jobs, 5, 10);
        assert_int_equal(r.res.waiting[0].job_id, 5);
        run_done(&r);
}

static void test_exclusive(void **state) {
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedNode nodes[2];
        SchedMachine m;
        SchedJob jobs[4];
        SchedAllocation a;
        Run r = {};

        machine_uniform(nodes, 2, 4, 16 * GIB, &m);
        jobs[0] = job_pending(1, 0, 1, 1000);
        run_on(&jobs[0], &m, 0, 0, 1u << 0, 1, GIB, false);
        jobs[1] = job_pending(2, 10, 2, 1000);
        jobs[1].exclusive = true;
        jobs[2] = job_pending(3, 20, 1, 1000);
        jobs[2].exclusive = true;
        jobs[3] = job_pending(4, 30, 1, 100);

        pass(&r, &cfg, &m, jobs, 4, 50);
        /* Node 0 is shared by job 1: the exclusive job gets all of node 1. */
        assert_true(started(&r, 2, &a));
        assert_int_equal(a.node_mask, 1u << 1);
        assert_int_equal(cpu_set_count(&a.cpus), 4);
        assert_true(a.mem[1] == 16 * GIB);
        expect_wait(&r, 3, SCHED_REASON_RESOURCES, 1000);
        /* Nonexclusive jobs share node 0 with job 1 but not its CPU; it ends before 1000. */
        assert_true(started(&r, 4, &a));
        assert_int_equal(a.node_mask, 1u << 0);
        assert_false(cpu_set_intersects(&a.cpus, &allocs[0].cpus));
        run_done(&r);
}

/* The largest machine: 64 NUMA nodes of 128 CPUs, 8,192 CPUs. Nodes above 32 and CPUs
 * above 1,024 are allocated, masked and reserved like the first ones. */
static void test_large_machine(void **state) {
        static SchedNode nodes[SCHED_NODES_MAX];
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedMachine m;
        SchedJob jobs[5];
        SchedAllocation a;
        uint64_t mask;
        Run r = {};

        assert_int_equal(SCHED_NODES_MAX, 64);
        machine_uniform(nodes, 64, 128, 8 * GIB, &m);
        assert_int_equal(sched_machine_cpus(&m), 8192);

        /* Nodes 0-39 taken whole until 1000. */
        jobs[0] = job_pending(1, 0, 40 * 128, 1000);
        run_on(&jobs[0], &m, 0, 0, (UINT64_C(1) << 40) - 1, 0, 0, true);
        jobs[1] = job_pending(2, 10, 20 * 128, 100);   /* nodes 40-59 */
        jobs[2] = job_pending(3, 11, 1, 100);          /* node 60, whole */
        jobs[2].exclusive = true;
        jobs[3] = job_pending(4, 12, 400, 5000);       /* 384 left: waits for job 2 to end */
        jobs[4] = job_pending(5, 13, 300, 100);        /* backfilled on 61-63 */

        pass(&r, &cfg, &m, jobs, 5, 50);
        assert_true(started(&r, 2, &a));
        mask = 0;
        for (unsigned k = 40; k < 60; k++)
                mask |= UINT64_C(1) << k;
        assert_true(a.node_mask == mask);
        assert_int_equal(cpu_set_count(&a.cpus), 2560);
        assert_int_equal(cpu_set_next(&a.cpus, 0), 40 * 128);
        assert_false(cpu_set_intersects(&a.cpus, &allocs[0].cpus));

        assert_true(started(&r, 3, &a));
        assert_true(a.node_mask == UINT64_C(1) << 60);
        assert_int_equal(cpu_set_count(&a.cpus), 128);
        assert_int_equal(cpu_set_next(&a.cpus, 0), 60 * 128);
        assert_true(a.mem[60] == 8 * GIB);

        expect_wait(&r, 4, SCHED_REASON_RESOURCES, 150);
        assert_true(started(&r, 5, &a));
        assert_true(a.node_mask == (UINT64_C(7) << 61));
        assert_int_equal(cpu_set_count(&a.cpus), 300);
        assert_true(cpu_set_test(&a.cpus, 61 * 128));
        assert_false(cpu_set_test(&a.cpus, 8191)); /* lowest free first: 61, 62, then 44 of 63 */
        assert_true(cpu_set_test(&a.cpus, 63 * 128 + 43));
        run_done(&r);

        /* More nodes than supported: refused, not truncated. */
        m.n_nodes = SCHED_NODES_MAX + 1;
        r.ctx = sched_context_new();
        assert_int_equal(sched_pass(r.ctx, &cfg, &m, jobs, 0, 0, &r.res), -EINVAL);
        run_done(&r);
}

static void test_memory(void **state) {
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedNode nodes[2];
        SchedMachine m;
        SchedJob jobs[3];
        SchedAllocation a;
        Run r = {};

        /* One node: 12G of 16G held, a job wanting 8G waits although CPUs are free. */
        machine_uniform(nodes, 1, 8, 16 * GIB, &m);
        jobs[0] = job_pending(1, 0, 1, 1000);
        run_on(&jobs[0], &m, 0, 0, 1u << 0, 1, 12 * GIB, false);
        jobs[1] = job_pending(2, 10, 1, 100);
        jobs[1].memory = 8 * GIB;
        jobs[2] = job_pending(3, 20, 1, 100);
        jobs[2].memory = 4 * GIB;
        pass(&r, &cfg, &m, jobs, 3, 50);
        expect_wait(&r, 2, SCHED_REASON_RESOURCES, 1000);
        assert_true(started(&r, 3, NULL));

        /* Two nodes: it goes where the memory is. */
        machine_uniform(nodes, 2, 8, 16 * GIB, &m);
        pass(&r, &cfg, &m, jobs, 2, 50);
        assert_true(started(&r, 2, &a));
        assert_int_equal(a.node_mask, 1u << 1);

        /* More memory than any node: spread over both. */
        jobs[1].memory = 20 * GIB;
        jobs[0].state = SCHED_JOB_DONE;
        pass(&r, &cfg, &m, jobs, 2, 50);
        assert_true(started(&r, 2, &a));
        assert_int_equal(a.node_mask, 3u);
        assert_true(a.mem[0] + a.mem[1] == 20 * GIB);
        assert_int_equal(cpu_set_count(&a.cpus), 1);
        run_done(&r);
}

static void test_node_order(void **state) {
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedNode nodes[3];
        SchedMachine m;
        SchedJob jobs[3];
        SchedAllocation a;
        Run r = {};

        machine_uniform(nodes, 3, 4, 32 * GIB, &m);
        nodes[1].memory = 64 * GIB;
        nodes[2].memory = 64 * GIB;
        nodes[2].speed = 2;

        /* Memory, then speed, descending: node 2. */
        jobs[0] = job_pending(1, 0, 1, 100);
        pass(&r, &cfg, &m, jobs, 1, 0);
        assert_true(started(&r, 1, &a));
        assert_int_equal(a.node_mask, 1u << 2);

        cfg.node_order = SCHED_NODE_ORDER_INDEX;
        pass(&r, &cfg, &m, jobs, 1, 0);
        assert_true(started(&r, 1, &a));
        assert_int_equal(a.node_mask, 1u << 0);
        cfg.node_order = SCHED_NODE_ORDER_MEMORY_SPEED;

        /* Fewest nodes: 3 CPUs free on node 2, all 4 on node 1: a 4-CPU job takes node 1
         * alone; a 6-CPU one spreads over two nodes, not three. */
        jobs[0] = job_pending(1, 0, 1, 1000);
        run_on(&jobs[0], &m, 0, 0, 1u << 2, 1, GIB, false);
        jobs[1] = job_pending(2, 10, 4, 100);
        pass(&r, &cfg, &m, jobs, 2, 50);
        assert_true(started(&r, 2, &a));
        assert_int_equal(a.node_mask, 1u << 1);

        jobs[1] = job_pending(2, 10, 7, 100);
        pass(&r, &cfg, &m, jobs, 2, 50);
        assert_true(started(&r, 2, &a));
        assert_int_equal(__builtin_popcountll(a.node_mask), 2);
        assert_int_equal(cpu_set_count(&a.cpus), 7);
        run_done(&r);
}

static void test_priority(void **state) {
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedNode nodes[1];
        SchedMachine m;
        SchedJob jobs[4];
        Run r = {};

        machine_uniform(nodes, 1, 4, 16 * GIB, &m);
        jobs[0] = job_pending(1, 0, 4, 1000);
        run_on(&jobs[0], &m, 0, 0, 1u << 0, 4, 0, false);
        jobs[1] = job_pending(2, 100, 4, 100);   /* normal, oldest */
        jobs[1].queue_priority = 1;
        jobs[2] = job_pending(3, 200, 4, 100);   /* express */
        jobs[2].queue_priority = 2;
        jobs[2].fairshare = 5000;
        jobs[3] = job_pending(4, 50, 4, 100);    /* bonus */

        pass(&r, &cfg, &m, jobs, 4, 864100);
        assert_int_equal(r.res.n_waiting, 3);
        assert_int_equal(r.res.waiting[0].job_id, 3);
        assert_int_equal(r.res.waiting[1].job_id, 2);
        assert_int_equal(r.res.waiting[2].job_id, 4);
        /* IT4I: 1000*2 + 5000/1000 + 863900/864000 */
        assert_float_equal(r.res.waiting[0].priority, 2000.0 + 5.0 + 863900.0 / 864000.0, 1e-9);
        /* Job 1 is past its limit: expected to end any moment. */
        expect_wait(&r, 3, SCHED_REASON_RESOURCES, 864101);
        /* Estimates: one after another, as each needs the whole node. */
        expect_wait(&r, 2, SCHED_REASON_PRIORITY, 864201);
        expect_wait(&r, 4, SCHED_REASON_PRIORITY, 864301);

        /* nice pushes the express job below the normal one. */
        jobs[2].nice = 2000;
        pass(&r, &cfg, &m, jobs, 4, 864100);
        assert_int_equal(r.res.waiting[0].job_id, 2);

        /* fcfs priority: queue groups, submit order inside. */
        cfg.priority = &sched_priority_fcfs;
        jobs[2].nice = 0;
        jobs[3].queue_priority = 2;
        pass(&r, &cfg, &m, jobs, 4, 864100);
        assert_int_equal(r.res.waiting[0].job_id, 4);
        assert_int_equal(r.res.waiting[1].job_id, 3);
        assert_int_equal(r.res.waiting[2].job_id, 2);
        run_done(&r);
}

static void test_conservative(void **state) {
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedNode nodes[2];
        SchedMachine m;
        SchedJob jobs[5];
        Run r = {};

        cfg.policy = &sched_policy_conservative;
        machine_uniform(nodes, 1, 4, 16 * GIB, &m);
        jobs[0] = job_pending(1, 0, 2, 1000);
        run_on(&jobs[0], &m, 0, 0, 1u << 0, 2, 0, false);
        jobs[1] = job_pending(2, 10, 4, 500);  /* [1000, 1500) */
        jobs[2] = job_pending(3, 20, 2, 2000); /* now would pass 1000: [1500, 3500) */
        jobs[3] = job_pending(4, 30, 2, 900);  /* fits now till 1000 */
        jobs[4] = job_pending(5, 40, 2, 600);  /* after 4 the hole is full: [1500, 2100) */

        pass(&r, &cfg, &m, jobs, 5, 100);
        expect_wait(&r, 2, SCHED_REASON_RESOURCES, 1000);
        expect_wait(&r, 3, SCHED_REASON_PRIORITY, 1500);
        assert_true(started(&r, 4, NULL));
        expect_wait(&r, 5, SCHED_REASON_PRIORITY, 1500);

        /* The context remembers reservations: what frees up early lets later jobs move
         * earlier (never later), in priority order, and a released hold does not jump the
         * queue. */
        run_on(&jobs[3], &m, 1, 100, 1u << 0, 2, 0, false);
        allocs[1].cpus = (CpuSet) {};
        cpu_set_add(&allocs[1].cpus, 2);
        cpu_set_add(&allocs[1].cpus, 3);

        /* Job 1 ends at 300 instead of 1000: job 5 now fits before 1000, and job 3, which
         * needs CPUs through job 2's slot, stays where it was. */
        jobs[0].state = SCHED_JOB_DONE;
        pass(&r, &cfg, &m, jobs, 5, 300);
        expect_wait(&r, 2, SCHED_REASON_RESOURCES, 1000);
        expect_wait(&r, 3, SCHED_REASON_PRIORITY, 1500);
        assert_true(started(&r, 5, NULL));
        run_on(&jobs[4], &m, 0, 300, 1u << 0, 2, 0, false);

        /* Nothing changed: the same answer from the remembered reservations. */
        pass(&r, &cfg, &m, jobs, 5, 350);
        expect_wait(&r, 2, SCHED_REASON_RESOURCES, 1000);
        expect_wait(&r, 3, SCHED_REASON_PRIORITY, 1500);

        /* Job 2 held: its slot is free, job 3 moves up to when job 5 is done. */
        jobs[1].held = true;
        pass(&r, &cfg, &m, jobs, 5, 400);
        expect_wait(&r, 2, SCHED_REASON_HELD, SCHED_TIME_INFINITY);
        expect_wait(&r, 3, SCHED_REASON_RESOURCES, 900);

        /* Released, it does not take the slot back: it goes after job 3 (and, being of
         * higher priority, it is the one said to wait for resources, as in Slurm). */
        jobs[1].held = false;
        pass(&r, &cfg, &m, jobs, 5, 500);
        expect_wait(&r, 3, SCHED_REASON_PRIORITY, 900);
        expect_wait(&r, 2, SCHED_REASON_RESOURCES, 2900);

        /* A pass under another policy makes the context forget; planning afresh by
         * priority, job 2 comes first again. */
        cfg.policy = &sched_policy_easy;
        pass(&r, &cfg, &m, jobs, 5, 510);
        cfg.policy = &sched_policy_conservative;
        pass(&r, &cfg, &m, jobs, 5, 520);
        expect_wait(&r, 2, SCHED_REASON_RESOURCES, 1000);
        expect_wait(&r, 3, SCHED_REASON_PRIORITY, 1500);

        /* Jobs 4 and 5 are past their limits (being killed) and job 2's slot at 1000 has
         * passed: it is due and keeps its turn, job 3 no longer fits and comes after. */
        pass(&r, &cfg, &m, jobs, 5, 1200);
        expect_wait(&r, 2, SCHED_REASON_RESOURCES, 1201);
        expect_wait(&r, 3, SCHED_REASON_PRIORITY, 1701);

        /* The machine changes under remembered reservations (a reload): planned afresh. */
        machine_uniform(nodes, 2, 2, 8 * GIB, &m);
        jobs[3].state = jobs[4].state = SCHED_JOB_DONE;
        pass(&r, &cfg, &m, jobs, 5, 1300);
        assert_true(started(&r, 2, NULL));
        expect_wait(&r, 3, SCHED_REASON_RESOURCES, 1800);
        run_done(&r);
}

static void test_sjf_order(void **state) {
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedNode nodes[1];
        SchedMachine m;
        SchedJob jobs[4];
        Run r = {};

        machine_uniform(nodes, 1, 4, 16 * GIB, &m);
        jobs[0] = job_pending(1, 0, 2, 1000);
        run_on(&jobs[0], &m, 0, 0, 1u << 0, 2, 0, false);
        jobs[1] = job_pending(2, 10, 4, 500);
        jobs[2] = job_pending(3, 20, 2, 800);
        jobs[3] = job_pending(4, 30, 2, 300);

        pass(&r, &cfg, &m, jobs, 4, 100);
        assert_true(started(&r, 3, NULL));
        assert_false(started(&r, 4, NULL));

        cfg.backfill_order = SCHED_BACKFILL_SJF;
        pass(&r, &cfg, &m, jobs, 4, 100);
        assert_true(started(&r, 4, NULL));
        assert_false(started(&r, 3, NULL));
        run_done(&r);
}

static void test_bad_input(void **state) {
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedNode nodes[2];
        SchedMachine m;
        SchedJob j = job_pending(1, 0, 1, 10);
        SchedResult res;
        SchedContext *ctx = sched_context_new();

        machine_uniform(nodes, 2, 4, GIB, &m);
        nodes[1].cpus = nodes[0].cpus; /* overlapping nodes */
        assert_int_equal(sched_pass(ctx, &cfg, &m, &j, 1, 0, &res), -EINVAL);
        m.n_nodes = 0;
        assert_int_equal(sched_pass(ctx, &cfg, &m, &j, 1, 0, &res), -EINVAL);
        machine_uniform(nodes, 2, 4, GIB, &m);
        j.state = SCHED_JOB_RUNNING; /* without an allocation */
        assert_int_equal(sched_pass(ctx, &cfg, &m, &j, 1, 0, &res), -EINVAL);
        assert_int_equal(sched_pass(ctx, &cfg, &m, NULL, 0, 0, &res), 0);
        assert_int_equal(res.n_decisions + res.n_waiting, 0);

        assert_ptr_equal(sched_policy_from_name("easy"), &sched_policy_easy);
        assert_null(sched_policy_from_name("nope"));
        assert_string_equal(sched_reason_to_string(SCHED_REASON_DEPENDENCY_NEVER_SATISFIED), "DependencyNeverSatisfied");
        assert_int_equal(sched_reason_from_string("TooBig"), SCHED_REASON_TOO_BIG);
        assert_null(sched_context_free(ctx));
        assert_null(sched_context_free(NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_wccs_seed),
                cmocka_unit_test(test_backfill_spare_node),
                cmocka_unit_test(test_dependencies),
                cmocka_unit_test(test_hold_begin_toobig_limit),
                cmocka_unit_test(test_queue_walltime),
                cmocka_unit_test(test_target_queue_time),
                cmocka_unit_test(test_shuffle),
                cmocka_unit_test(test_array_throttle),
                cmocka_unit_test(test_exclusive),
                cmocka_unit_test(test_memory),
                cmocka_unit_test(test_large_machine),
                cmocka_unit_test(test_node_order),
                cmocka_unit_test(test_priority),
                cmocka_unit_test(test_conservative),
                cmocka_unit_test(test_sjf_order),
                cmocka_unit_test(test_bad_input),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
