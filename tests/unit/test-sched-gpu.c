/* SPDX-License-Identifier: GPL-2.0-or-later */
/* GPUs in the scheduling core: placement (never twice, near the CPUs, enforce-binding,
 * exclusive nodes), TooBig, reservations and estimates that count GPUs, MaxGPUs, and
 * preemption that never frees a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "sched.h"
#include "test-sched-helpers.h"

#define NOW 1000

static SchedNode nodes[4];
static SchedGpu gpus[64];
static SchedAllocation allocs[64];

/* 2 nodes of 8 CPUs (0-7, 8-15), 64G each; GPUs 0,1 on node 0 and 2,3 on node 1. */
static SchedMachine machine_2x2(void) {
        SchedMachine m;

        machine_uniform(nodes, 2, 8, 64 * GIB, &m);
        for (size_t g = 0; g < 4; g++)
                gpus[g] = (SchedGpu) { .node = (int) (g / 2) };
        m.gpus = gpus;
        m.n_gpus = 4;
        return m;
}

static int node_of_cpu(const SchedMachine *m, unsigned cpu) {
        for (size_t k = 0; k < m->n_nodes; k++)
                if (cpu_set_test(&m->nodes[k].cpus, cpu))
                        return (int) k;
        return -1;
}

/* Running since start until start + walltime on CPUs "list" and GPUs gpu_mask. */
static void run(SchedJob *j, const SchedMachine *m, size_t slot, const char *list, uint64_t gpu_mask) {
        SchedAllocation *a = &allocs[slot];

        *a = (SchedAllocation) { .gpu_mask = gpu_mask };
        assert_int_equal(cpu_set_parse(list, &a->cpus), 0);
        for (size_t k = 0; k < m->n_nodes; k++)
                if (cpu_set_intersects(&a->cpus, &m->nodes[k].cpus))
                        a->node_mask |= UINT64_C(1) << k;
        j->state = SCHED_JOB_RUNNING;
        j->start_time = NOW - 10;
        j->alloc = a;
        j->gpus = (unsigned) __builtin_popcountll(gpu_mask);
}

static SchedJob gpu_job(uint64_t id, unsigned cpus, unsigned n_gpus, uint64_t walltime) {
        SchedJob j = job_pending(id, id, cpus, walltime);

        j.gpus = n_gpus;
        return j;
}

static const SchedDecision *started(const SchedResult *r, uint64_t id) {
        for (size_t i = 0; i < r->n_decisions; i++)
                if (r->decisions[i].type == SCHED_DECISION_START && r->decisions[i].job_id == id)
                        return &r->decisions[i];
        return NULL;
}

static const SchedWait *waiting(const SchedResult *r, uint64_t id) {
        for (size_t i = 0; i < r->n_waiting; i++)
                if (r->waiting[i].job_id == id)
                        return &r->waiting[i];
        return NULL;
}

static int pass(const SchedConfig *c, const SchedMachine *m, SchedJob *jobs, size_t n, uint64_t now,
                SchedResult *ret) {
        static SchedContext *ctx;

        sched_context_free(ctx);
        ctx = sched_context_new();
        assert_non_null(ctx);
        return sched_pass(ctx, c, m, jobs, n, now, ret);
}

/* Every CPU of a is on a node one of its GPUs is attached to. */
static bool cpus_near_gpus(const SchedMachine *m, const SchedAllocation *a) {
        for (int cpu = cpu_set_next(&a->cpus, 0); cpu >= 0; cpu = cpu_set_next(&a->cpus, (unsigned) cpu + 1)) {
                int k = node_of_cpu(m, (unsigned) cpu);
                bool near = false;
                for (size_t g = 0; g < m->n_gpus; g++)
                        if ((a->gpu_mask >> g & 1) && (m->gpus[g].node == k || m->gpus[g].node < 0))
                                near = true;
                if (!near)
                        return false;
        }
        return true;
}

static void test_local_and_best_fit(void **state) {
        SchedMachine m = machine_2x2();
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[4];
        SchedResult r;
        const SchedDecision *d;

        /* Node 0's CPUs all but one taken: a 1-GPU, 2-CPU job goes to node 1, GPU and CPUs. */
        jobs[0] = job_pending(1, 0, 7, 3600);
        run(&jobs[0], &m, 0, "0-6", 0);
        jobs[1] = gpu_job(2, 2, 1, 3600);
        assert_int_equal(pass(&c, &m, jobs, 2, NOW, &r), 0);
        assert_non_null(d = started(&r, 2));
        assert_int_equal(d->alloc.gpu_mask, UINT64_C(1) << 2);
        assert_int_equal(d->alloc.node_mask, 2);
        assert_true(cpus_near_gpus(&m, &d->alloc));

        /* Best fit: node 0 has one GPU free, node 1 two: one GPU comes from node 0, two
         * from node 1, each with CPUs of its node. */
        jobs[0] = job_pending(1, 0, 1, 3600);
        run(&jobs[0], &m, 0, "0", UINT64_C(1) << 0);
        jobs[1] = gpu_job(2, 2, 1, 3600);
        jobs[2] = gpu_job(3, 2, 2, 3600);
        assert_int_equal(pass(&c, &m, jobs, 3, NOW, &r), 0);
        assert_non_null(d = started(&r, 2));
        assert_int_equal(d->alloc.gpu_mask, UINT64_C(1) << 1);
        assert_int_equal(d->alloc.node_mask, 1);
        assert_non_null(d = started(&r, 3));
        assert_int_equal(d->alloc.gpu_mask, UINT64_C(0xc));
        assert_int_equal(d->alloc.node_mask, 2);
        assert_true(cpus_near_gpus(&m, &d->alloc));

        /* Three GPUs: two nodes, CPUs on both, each node giving a GPU. */
        jobs[0] = gpu_job(1, 12, 3, 3600);
        assert_int_equal(pass(&c, &m, jobs, 1, NOW, &r), 0);
        assert_non_null(d = started(&r, 1));
        assert_int_equal(__builtin_popcountll(d->alloc.gpu_mask), 3);
        assert_int_equal(d->alloc.node_mask, 3);
        assert_true(cpus_near_gpus(&m, &d->alloc));
}

static void test_never_twice(void **state) {
        SchedMachine m = machine_2x2();
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[4];
        SchedResult r;
        const SchedDecision *d;
        const SchedWait *w;

        /* GPUs 0 and 1 held until NOW + 3590, the second by a suspended job (a frozen job
         * keeps its GPUs): of three wanted only two are free, so it waits for the first
         * to end; two wanted get exactly the free ones. */
        jobs[0] = job_pending(1, 0, 1, 3600);
        run(&jobs[0], &m, 0, "0", UINT64_C(1) << 0);
        jobs[1] = job_pending(2, 0, 1, 3600);
        run(&jobs[1], &m, 1, "1", UINT64_C(1) << 1);
        jobs[1].state = SCHED_JOB_SUSPENDED;
        jobs[2] = gpu_job(3, 1, 3, 600);
        jobs[3] = gpu_job(4, 1, 2, 600);
        assert_int_equal(pass(&c, &m, jobs, 4, NOW, &r), 0);
        assert_null(started(&r, 3));
        assert_non_null(w = waiting(&r, 3));
        assert_int_equal(w->reason, SCHED_REASON_RESOURCES);
        /* Job 1 ends at NOW - 10 + 3600; job 2 is suspended, so it ends later. */
        assert_int_equal(w->est_start, NOW - 10 + 3600);
        /* Job 4 fits now and ends (NOW + 600) before job 3's reservation: backfilled. */
        assert_non_null(d = started(&r, 4));
        assert_int_equal(d->alloc.gpu_mask, UINT64_C(0xc));

        /* A job asking for none gets none, even exclusive on a node without GPUs. */
        jobs[0] = job_pending(1, 0, 4, 600);
        assert_int_equal(pass(&c, &m, jobs, 1, NOW, &r), 0);
        assert_non_null(d = started(&r, 1));
        assert_int_equal(d->alloc.gpu_mask, 0);
}

/* A card gone (offline) is given to nobody: not to a job asking for any GPU, not to an
 * exclusive job of its node, not even when its holder ends; the job holding it keeps it
 * without blocking the others. */
static void test_offline(void **state) {
        SchedMachine m = machine_2x2();
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[3];
        SchedResult r;
        const SchedDecision *d;

        gpus[0].offline = true;
        jobs[0] = job_pending(1, 0, 1, 3600);
        run(&jobs[0], &m, 0, "8", UINT64_C(1) << 0); /* holds the gone card */
        jobs[1] = gpu_job(2, 1, 3, 600);
        assert_int_equal(pass(&c, &m, jobs, 2, NOW, &r), 0);
        assert_non_null(d = started(&r, 2));
        assert_int_equal(d->alloc.gpu_mask, UINT64_C(0xe));
        /* Four wanted: never, only three are schedulable. */
        jobs[1] = gpu_job(2, 1, 4, 600);
        jobs[0].state = SCHED_JOB_DONE;
        assert_int_equal(pass(&c, &m, jobs, 2, NOW, &r), 0);
        assert_null(started(&r, 2));
        /* An exclusive job on node 0 gets GPU 1 only. */
        jobs[1] = gpu_job(2, 1, 0, 600);
        jobs[1].exclusive = true;
        assert_int_equal(pass(&c, &m, jobs, 2, NOW, &r), 0);
        assert_non_null(d = started(&r, 2));
        assert_int_equal(d->alloc.gpu_mask & 1, 0);
        gpus[0].offline = false;
}

/* A GPU in use outside the scheduler (SchedMachine.gpus_busy): given to nobody, and a job
 * that needs it waits for Resources, not TooBig. */
static void test_busy(void **state) {
        SchedMachine m = machine_2x2();
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[2];
        SchedResult r;
        const SchedDecision *d;

        m.gpus_busy = UINT64_C(1) << 0;
        jobs[0] = gpu_job(1, 1, 3, 600);
        assert_int_equal(pass(&c, &m, jobs, 1, NOW, &r), 0);
        assert_non_null(d = started(&r, 1));
        assert_int_equal(d->alloc.gpu_mask, UINT64_C(0xe));
        jobs[0] = gpu_job(1, 1, 4, 600);
        assert_int_equal(pass(&c, &m, jobs, 1, NOW, &r), 0);
        assert_null(started(&r, 1));
        assert_int_equal(waiting(&r, 1)->reason, SCHED_REASON_RESOURCES);
        /* Free again: the next pass gives it. */
        m.gpus_busy = 0;
        assert_int_equal(pass(&c, &m, jobs, 1, NOW, &r), 0);
        assert_non_null(d = started(&r, 1));
        assert_int_equal(d->alloc.gpu_mask, UINT64_C(0xf));
}

static void test_binding(void **state) {
        SchedMachine m = machine_2x2();
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[3];
        SchedResult r;
        const SchedDecision *d;

        /* Node 0: GPUs free, CPUs all taken. Node 1: CPUs free, GPUs taken. */
        jobs[0] = job_pending(1, 0, 8, 3600);
        run(&jobs[0], &m, 0, "0-7", 0);
        jobs[1] = job_pending(2, 0, 1, 3600);
        run(&jobs[1], &m, 1, "8", UINT64_C(0xc));
        jobs[2] = gpu_job(3, 2, 1, 600);
        jobs[2].gpu_binding = true;
        assert_int_equal(pass(&c, &m, jobs, 3, NOW, &r), 0);
        assert_null(started(&r, 3));
        assert_int_equal(waiting(&r, 3)->est_start, NOW - 10 + 3600);

        /* Without binding: the GPU of node 0, CPUs of node 1. */
        jobs[2].gpu_binding = false;
        assert_int_equal(pass(&c, &m, jobs, 3, NOW, &r), 0);
        assert_non_null(d = started(&r, 3));
        assert_int_equal(__builtin_popcountll(d->alloc.gpu_mask & 0x3), 1);
        assert_int_equal(d->alloc.node_mask, 2);

        /* Binding over two nodes: 2 GPUs and 10 CPUs, CPUs from both nodes, a GPU on each. */
        jobs[0] = gpu_job(1, 10, 2, 600);
        jobs[0].gpu_binding = true;
        assert_int_equal(pass(&c, &m, jobs, 1, NOW, &r), 0);
        assert_non_null(d = started(&r, 1));
        assert_int_equal(d->alloc.node_mask, 3);
        assert_true(cpus_near_gpus(&m, &d->alloc));
        assert_int_equal(__builtin_popcountll(d->alloc.gpu_mask), 2);

        /* One GPU and 10 CPUs can never be bound (8 CPUs a node): it never starts, the
         * same job without binding does. */
        jobs[0] = gpu_job(1, 10, 1, 600);
        jobs[0].gpu_binding = true;
        assert_int_equal(pass(&c, &m, jobs, 1, NOW, &r), 0);
        assert_null(started(&r, 1));
        assert_int_equal(waiting(&r, 1)->reason, SCHED_REASON_TOO_BIG);
        jobs[0].gpu_binding = false;
        assert_int_equal(pass(&c, &m, jobs, 1, NOW, &r), 0);
        assert_non_null(started(&r, 1));
}

static void test_loose_gpus(void **state) {
        SchedMachine m = machine_2x2();
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[2];
        SchedResult r;
        const SchedDecision *d;

        /* GPUs 2 and 3 of no known node: bound to none, so binding takes them anywhere,
         * but local ones go first. */
        gpus[2].node = gpus[3].node = -1;
        jobs[0] = gpu_job(1, 1, 1, 600);
        assert_int_equal(pass(&c, &m, jobs, 1, NOW, &r), 0);
        assert_non_null(d = started(&r, 1));
        assert_int_equal(d->alloc.gpu_mask, 1);

        jobs[0] = job_pending(1, 0, 8, 3600);
        run(&jobs[0], &m, 0, "0-7", 0);
        jobs[1] = gpu_job(2, 2, 2, 600);
        jobs[1].gpu_binding = true;
        assert_int_equal(pass(&c, &m, jobs, 2, NOW, &r), 0);
        assert_non_null(d = started(&r, 2));
        assert_int_equal(d->alloc.gpu_mask, UINT64_C(0xc));
        assert_int_equal(d->alloc.node_mask, 2);
}

static void test_exclusive(void **state) {
        SchedMachine m = machine_2x2();
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[3];
        SchedResult r;
        const SchedDecision *d;

        /* Node 1 without GPUs: an exclusive job without GPUs goes there and holds none. */
        gpus[2].node = gpus[3].node = 0;
        jobs[0] = job_pending(1, 0, 4, 600);
        jobs[0].exclusive = true;
        assert_int_equal(pass(&c, &m, jobs, 1, NOW, &r), 0);
        assert_non_null(d = started(&r, 1));
        assert_int_equal(d->alloc.node_mask, 2);
        assert_int_equal(d->alloc.gpu_mask, 0);

        /* One with a GPU takes node 0 whole, and so all four of its GPUs; a GPU job after
         * it gets none now. */
        jobs[0].gpus = 1;
        jobs[1] = gpu_job(2, 1, 1, 600);
        assert_int_equal(pass(&c, &m, jobs, 2, NOW, &r), 0);
        assert_non_null(d = started(&r, 1));
        assert_int_equal(d->alloc.node_mask, 1);
        assert_int_equal(d->alloc.gpu_mask, UINT64_C(0xf));
        assert_null(started(&r, 2));

        /* A node with a GPU in use is not idle: exclusive waits. */
        jobs[0] = job_pending(1, 0, 1, 3600);
        run(&jobs[0], &m, 0, "8", UINT64_C(1) << 3);
        jobs[1] = gpu_job(2, 1, 1, 600);
        jobs[1].exclusive = true;
        assert_int_equal(pass(&c, &m, jobs, 2, NOW, &r), 0);
        assert_null(started(&r, 2));
        assert_int_equal(waiting(&r, 2)->est_start, NOW - 10 + 3600);
}

static void test_too_big(void **state) {
        SchedMachine m = machine_2x2();
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[3];
        SchedResult r;

        jobs[0] = gpu_job(1, 1, 5, 600);
        jobs[1] = gpu_job(2, 1, 2, 600);
        jobs[1].gpu_allowed = UINT64_C(1) << 1;  /* one GPU of its type */
        jobs[2] = gpu_job(3, 1, 1, 600);
        jobs[2].gpu_allowed = UINT64_C(1) << 1;
        assert_int_equal(pass(&c, &m, jobs, 3, NOW, &r), 0);
        assert_int_equal(waiting(&r, 1)->reason, SCHED_REASON_TOO_BIG);
        assert_int_equal(waiting(&r, 2)->reason, SCHED_REASON_TOO_BIG);
        assert_non_null(started(&r, 3));
        assert_int_equal(started(&r, 3)->alloc.gpu_mask, UINT64_C(1) << 1);

        m.n_gpus = 0;
        assert_int_equal(pass(&c, &m, jobs + 2, 1, NOW, &r), 0);
        assert_int_equal(waiting(&r, 3)->reason, SCHED_REASON_TOO_BIG);
}

/* TooBig's GPU tests, for a job that may have any GPU, are worked out once a pass per GPU
 * count: in one pass, jobs that differ only in their count, their CPUs, their memory or
 * the GPUs they may have must each get their own answer. */
static SchedReason reason_of(const SchedResult *r, uint64_t id) {
        const SchedWait *w = waiting(r, id);

        return w ? w->reason : SCHED_REASON_NONE;
}

static void test_too_big_by_count(void **state) {
        SchedMachine m = machine_2x2();
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[9];
        SchedResult r;

        /* Bound: one GPU gives one node (8 CPUs, 64G), two give both. */
        jobs[0] = gpu_job(1, 8, 1, 600);
        jobs[1] = gpu_job(2, 9, 1, 600);                 /* more CPUs than one node */
        jobs[2] = gpu_job(3, 9, 2, 600);                 /* two nodes: fits */
        jobs[3] = gpu_job(4, 9, 2, 600);
        jobs[3].gpu_allowed = UINT64_C(0x3);             /* both on node 0: one node */
        jobs[4] = gpu_job(5, 9, 2, 600);
        jobs[4].gpu_allowed = UINT64_C(0xf);             /* all of them: as any */
        jobs[5] = gpu_job(6, 1, 1, 600);
        jobs[5].memory = 100 * GIB;                      /* more memory than one node */
        jobs[6] = gpu_job(7, 1, 2, 600);
        jobs[6].memory = 100 * GIB;
        jobs[7] = gpu_job(8, 1, 4, 600);                 /* every GPU */
        jobs[8] = gpu_job(9, 1, 5, 600);                 /* one more than there are */
        for (size_t i = 0; i < 8; i++)
                jobs[i].gpu_binding = true;
        assert_int_equal(pass(&c, &m, jobs, ELEMENTSOF(jobs), NOW, &r), 0);
        assert_int_not_equal(reason_of(&r, 1), SCHED_REASON_TOO_BIG);
        assert_int_equal(reason_of(&r, 2), SCHED_REASON_TOO_BIG);
        assert_int_not_equal(reason_of(&r, 3), SCHED_REASON_TOO_BIG);
        assert_int_equal(reason_of(&r, 4), SCHED_REASON_TOO_BIG);
        assert_int_not_equal(reason_of(&r, 5), SCHED_REASON_TOO_BIG);
        assert_int_equal(reason_of(&r, 6), SCHED_REASON_TOO_BIG);
        assert_int_not_equal(reason_of(&r, 7), SCHED_REASON_TOO_BIG);
        assert_int_not_equal(reason_of(&r, 8), SCHED_REASON_TOO_BIG);
        assert_int_equal(reason_of(&r, 9), SCHED_REASON_TOO_BIG);

        /* The counts met in the other order. */
        SWAP_TWO(jobs[0], jobs[2]);
        SWAP_TWO(jobs[1], jobs[3]);
        assert_int_equal(pass(&c, &m, jobs, ELEMENTSOF(jobs), NOW, &r), 0);
        assert_int_not_equal(reason_of(&r, 1), SCHED_REASON_TOO_BIG);
        assert_int_equal(reason_of(&r, 2), SCHED_REASON_TOO_BIG);
        assert_int_not_equal(reason_of(&r, 3), SCHED_REASON_TOO_BIG);
        assert_int_equal(reason_of(&r, 4), SCHED_REASON_TOO_BIG);
}

/* The top job waits for all 4 GPUs; two are held until NOW + 990. */
static size_t easy_queue(const SchedMachine *m, SchedJob *jobs) {
        jobs[0] = job_pending(1, 0, 1, 1000);
        run(&jobs[0], m, 0, "0", UINT64_C(0x3));
        jobs[1] = gpu_job(2, 1, 4, 1000);
        jobs[1].queue_priority = 2;
        jobs[2] = gpu_job(3, 1, 1, 5000);  /* past the reservation: would delay it */
        jobs[3] = gpu_job(4, 1, 1, 500);   /* done before: may go */
        jobs[4] = job_pending(5, 5, 4, 5000); /* CPUs only: the top job leaves plenty */
        return 5;
}

static void test_easy_reserves_gpus(void **state) {
        SchedMachine m = machine_2x2();
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[5];
        SchedResult r;
        size_t n = easy_queue(&m, jobs);

        assert_int_equal(pass(&c, &m, jobs, n, NOW, &r), 0);
        assert_int_equal(waiting(&r, 2)->reason, SCHED_REASON_RESOURCES);
        assert_int_equal(waiting(&r, 2)->est_start, NOW - 10 + 1000);
        assert_null(started(&r, 3));
        assert_true(waiting(&r, 3)->est_start >= NOW - 10 + 2000);
        assert_non_null(started(&r, 4));
        assert_non_null(started(&r, 5));
        assert_int_equal(started(&r, 5)->alloc.gpu_mask, 0);

        /* fcfs: nothing passes the top job; the job behind it is estimated after it. */
        c.policy = &sched_policy_fcfs;
        assert_int_equal(pass(&c, &m, jobs, n, NOW, &r), 0);
        assert_int_equal(r.n_decisions, 0);
        assert_int_equal(waiting(&r, 2)->est_start, NOW - 10 + 1000);
        assert_int_equal(waiting(&r, 3)->est_start, NOW - 10 + 2000);
}

static void test_conservative_reserves_gpus(void **state) {
        SchedMachine m = machine_2x2();
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        _cleanup_(sched_context_freep) SchedContext *ctx = sched_context_new();
        SchedJob jobs[5];
        SchedResult r;
        size_t n = easy_queue(&m, jobs);

        c.policy = &sched_policy_conservative;
        for (uint64_t t = NOW; t < NOW + 3; t++) {
                assert_int_equal(sched_pass(ctx, &c, &m, jobs, n, t, &r), 0);
                assert_int_equal(waiting(&r, 2)->est_start, NOW - 10 + 1000);
                assert_null(started(&r, 3));
                assert_int_equal(waiting(&r, 3)->est_start, NOW - 10 + 2000);
                if (t == NOW) {
                        assert_non_null(started(&r, 4));
                        assert_non_null(started(&r, 5));
                        /* Applied, as the daemon does. */
                        jobs[3].state = jobs[4].state = SCHED_JOB_RUNNING;
                        jobs[3].start_time = jobs[4].start_time = t;
                        allocs[3] = started(&r, 4)->alloc;
                        allocs[4] = started(&r, 5)->alloc;
                        jobs[3].alloc = &allocs[3];
                        jobs[4].alloc = &allocs[4];
                }
        }
}

static void test_max_gpus(void **state) {
        SchedMachine m = machine_2x2();
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedProject pr = { .id = 7, .total = { .max_gpus = 3 }, .per_user = { .max_gpus = 2 } };
        SchedJob jobs[4];
        SchedResult r;
        const SchedWait *w;

        c.projects = &pr;
        c.n_projects = 1;
        jobs[0] = job_pending(1, 0, 1, 3600);
        run(&jobs[0], &m, 0, "0", UINT64_C(1));
        jobs[0].project_id = 7;
        jobs[0].user_id = 100;
        jobs[1] = gpu_job(2, 1, 2, 600);     /* user 100: 1 + 2 > 2 per user */
        jobs[1].project_id = 7;
        jobs[1].user_id = 100;
        jobs[2] = gpu_job(3, 1, 1, 600);     /* user 101: 1 of 2, project 2 of 3 */
        jobs[2].project_id = 7;
        jobs[2].user_id = 101;
        jobs[3] = gpu_job(4, 1, 2, 600);     /* user 102: project 2 + 2 > 3 */
        jobs[3].project_id = 7;
        jobs[3].user_id = 102;
        assert_int_equal(pass(&c, &m, jobs, 4, NOW, &r), 0);
        assert_non_null(w = waiting(&r, 2));
        assert_int_equal(w->reason, SCHED_REASON_MAX_GPUS);
        assert_int_equal(w->limit, 2);
        assert_int_equal(w->wanted, 3);
        assert_non_null(started(&r, 3));
        assert_non_null(w = waiting(&r, 4));
        assert_int_equal(w->reason, SCHED_REASON_MAX_GPUS);
        assert_int_equal(w->limit, 3);
        assert_int_equal(w->wanted, 4);
        assert_true(sched_reason_is_limit(SCHED_REASON_MAX_GPUS));
        assert_string_equal(sched_reason_to_string(SCHED_REASON_MAX_GPUS), "MaxGPUs");
        assert_int_equal(sched_reason_from_string("MaxGPUs"), SCHED_REASON_MAX_GPUS);

        /* CPU jobs are not held back by it. */
        jobs[1] = job_pending(2, 0, 1, 600);
        jobs[1].project_id = 7;
        jobs[1].user_id = 100;
        pr.total.max_gpus = pr.per_user.max_gpus = 1;
        assert_int_equal(pass(&c, &m, jobs, 2, NOW, &r), 0);
        assert_non_null(started(&r, 2));
}

static SchedJob preempt_job(uint64_t id, bool express, unsigned cpus, unsigned n_gpus) {
        SchedJob j = gpu_job(id, cpus, n_gpus, 600);

        j.queue_id = express ? 0 : 1;
        j.queue_priority = express ? 2 : 1;
        j.preempts = express ? UINT64_C(1) << 1 : 0;
        j.preemptable = !express;
        j.user_id = 1000 + (uint32_t) id;
        return j;
}

static void test_preempt_keeps_gpus(void **state) {
        SchedMachine m = machine_2x2();
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[3];
        SchedResult r;
        const SchedDecision *d;

        c.preempt.enabled = true;
        /* A normal job holds all CPUs and all GPUs: an express job that needs a GPU
         * suspends nothing (the GPUs would stay taken) and waits. */
        jobs[0] = preempt_job(1, false, 16, 0);
        run(&jobs[0], &m, 0, "0-15", UINT64_C(0xf));
        jobs[0].walltime = 36000;
        jobs[1] = preempt_job(2, true, 2, 1);
        assert_int_equal(pass(&c, &m, jobs, 2, NOW, &r), 0);
        assert_int_equal(r.n_decisions, 0);

        /* An express job that needs only CPUs suspends it. */
        jobs[1] = preempt_job(2, true, 2, 0);
        assert_int_equal(pass(&c, &m, jobs, 2, NOW, &r), 0);
        assert_int_equal(r.n_decisions, 2);
        assert_int_equal(r.decisions[0].type, SCHED_DECISION_SUSPEND);
        assert_non_null(started(&r, 2));

        /* GPUs free but CPUs all taken: the preemptor suspends for CPUs, keeps the free
         * GPU; the victim keeps its GPUs. */
        run(&jobs[0], &m, 0, "0-15", UINT64_C(0xe));
        jobs[1] = preempt_job(2, true, 2, 1);
        assert_int_equal(pass(&c, &m, jobs, 2, NOW, &r), 0);
        assert_non_null(d = started(&r, 2));
        assert_int_equal(d->alloc.gpu_mask, 1);

        /* Applied: the victim is suspended by the pass, holding GPUs 1-3 and no CPUs. A
         * GPU job wanting two gets none of them; the victim resumes only with its own. */
        jobs[0].state = SCHED_JOB_SUSPENDED;
        jobs[0].preempted = true;
        jobs[1].state = SCHED_JOB_RUNNING;
        jobs[1].start_time = NOW;
        allocs[1] = d->alloc;
        jobs[1].alloc = &allocs[1];
        jobs[2] = gpu_job(3, 1, 2, 600);
        assert_int_equal(pass(&c, &m, jobs, 3, NOW + 1, &r), 0);
        assert_null(started(&r, 3));
        for (size_t i = 0; i < r.n_decisions; i++)
                assert_int_equal(r.decisions[i].alloc.gpu_mask & allocs[1].gpu_mask, 0);

        /* The express job ends: the victim resumes, on its GPUs. */
        jobs[1].state = SCHED_JOB_DONE;
        assert_int_equal(pass(&c, &m, jobs, 3, NOW + 2, &r), 0);
        assert_true(r.n_decisions >= 1);
        assert_int_equal(r.decisions[0].type, SCHED_DECISION_RESUME);
        assert_int_equal(r.decisions[0].alloc.gpu_mask, UINT64_C(0xe));
}

/* Random GPU workloads over many passes, each pass's decisions applied: no GPU is ever
 * held twice, every job has at least the GPUs it asked for and only of the kinds it may,
 * binding is honoured, and an exclusive job holds every GPU of its nodes. */
static void test_gpu_property(void **state) {
        static SchedJob jobs[200];
        static SchedAllocation al[200];
        SchedConfig configs[3] = { SCHED_CONFIG_DEFAULT, SCHED_CONFIG_DEFAULT, SCHED_CONFIG_DEFAULT };
        Rng rg = { 0x9e3779b97f4a7c15 };
        SchedMachine m;
        size_t local = 0, placed = 0;

        configs[1].policy = &sched_policy_conservative;
        configs[2].policy = &sched_policy_fcfs;
        configs[0].preempt.enabled = true;
        machine_uniform(nodes, 4, 8, 64 * GIB, &m);
        for (size_t g = 0; g < 12; g++)
                gpus[g] = (SchedGpu) { .node = g == 11 ? -1 : (int) (g % 4 == 3 ? 0 : g % 3) };
        m.gpus = gpus;
        m.n_gpus = 12;

        for (size_t ci = 0; ci < ELEMENTSOF(configs); ci++) {
                _cleanup_(sched_context_freep) SchedContext *ctx = sched_context_new();
                size_t n = ELEMENTSOF(jobs);

                for (size_t i = 0; i < n; i++) {
                        jobs[i] = gpu_job(i + 1, 1 + (unsigned) rng(&rg, 10), (unsigned) rng(&rg, 4),
                                          60 + rng(&rg, 2000));
                        jobs[i].submit_time = rng(&rg, 3000);
                        jobs[i].gpu_binding = rng(&rg, 3) == 0;
                        jobs[i].exclusive = rng(&rg, 15) == 0;
                        jobs[i].gpu_allowed = rng(&rg, 4) == 0 ? UINT64_C(0x0f0) : 0;
                        jobs[i].queue_id = rng(&rg, 4) == 0 ? 0 : 1;
                        jobs[i].queue_priority = jobs[i].queue_id == 0 ? 2 : 1;
                        jobs[i].preempts = jobs[i].queue_id == 0 ? 2 : 0;
                        jobs[i].preemptable = jobs[i].queue_id == 1;
                }
                for (uint64_t t = 0; t < 6000; t += 30) {
                        SchedResult r;
                        uint64_t held = 0;

                        for (size_t i = 0; i < n; i++) {
                                SchedJob *j = &jobs[i];
                                if (j->state == SCHED_JOB_RUNNING && t >= j->start_time + j->walltime + j->suspended_time)
                                        j->state = SCHED_JOB_DONE;
                                if (j->state == SCHED_JOB_SUSPENDED)
                                        j->suspended_time += 30;
                        }
                        assert_int_equal(sched_pass(ctx, &configs[ci], &m, jobs, n, t, &r), 0);
                        for (size_t d = 0; d < r.n_decisions; d++) {
                                const SchedDecision *x = &r.decisions[d];
                                SchedJob *j = &jobs[x->job_index];

                                if (x->type == SCHED_DECISION_SUSPEND) {
                                        j->state = SCHED_JOB_SUSPENDED;
                                        j->preempted = true;
                                        continue;
                                }
                                al[x->job_index] = x->alloc;
                                j->alloc = &al[x->job_index];
                                if (x->type == SCHED_DECISION_RESUME) {
                                        j->preempted = false;
                                        j->last_resume_time = t;
                                } else
                                        j->start_time = t;
                                j->state = SCHED_JOB_RUNNING;
                                placed++;
                                /* What it asked for, of its kinds. */
                                assert_true((unsigned) __builtin_popcountll(x->alloc.gpu_mask &
                                                                            (j->gpu_allowed ?: UINT64_MAX)) >= j->gpus);
                                assert_int_equal(x->alloc.gpu_mask & ~UINT64_C(0xfff), 0);
                                if (!j->exclusive && j->gpus == 0)
                                        assert_int_equal(x->alloc.gpu_mask, 0);
                                if (!j->exclusive && j->gpus > 0)
                                        assert_int_equal(__builtin_popcountll(x->alloc.gpu_mask), j->gpus);
                                if (j->gpu_binding && j->gpus > 0)
                                        assert_true(cpus_near_gpus(&m, &x->alloc));
                                if (j->gpus > 0 && cpus_near_gpus(&m, &x->alloc))
                                        local++;
                                if (j->exclusive)
                                        for (size_t g = 0; g < m.n_gpus; g++)
                                                if (m.gpus[g].node >= 0 && (x->alloc.node_mask >> m.gpus[g].node & 1))
                                                        assert_true(x->alloc.gpu_mask >> g & 1);
                        }
                        /* Never twice: running and suspended jobs together. */
                        for (size_t i = 0; i < n; i++) {
                                const SchedJob *j = &jobs[i];
                                if (j->state != SCHED_JOB_RUNNING && j->state != SCHED_JOB_SUSPENDED)
                                        continue;
                                assert_int_equal(held & j->alloc->gpu_mask, 0);
                                held |= j->alloc->gpu_mask;
                        }
                }
        }
        /* Something ran, and locality was the rule. */
        assert_true(placed > 100);
        assert_true(local * 10 >= placed * 5);
}

static void test_bad_machine(void **state) {
        SchedMachine m = machine_2x2();
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob j = gpu_job(1, 1, 1, 60);
        SchedResult r;

        gpus[0].node = 2; /* no such node */
        assert_int_equal(pass(&c, &m, &j, 1, NOW, &r), -EINVAL);
        gpus[0].node = 0;
        m.gpus = NULL;
        assert_int_equal(pass(&c, &m, &j, 1, NOW, &r), -EINVAL);
        /* 33 GPUs on one node: more than a node keeps. */
        machine_uniform(nodes, 1, 8, 64 * GIB, &m);
        for (size_t g = 0; g < 33; g++)
                gpus[g] = (SchedGpu) { .node = 0 };
        m.gpus = gpus;
        m.n_gpus = 33;
        assert_int_equal(pass(&c, &m, &j, 1, NOW, &r), -EINVAL);
        m.n_gpus = 32;
        assert_int_equal(pass(&c, &m, &j, 1, NOW, &r), 0);
        assert_non_null(started(&r, 1));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_local_and_best_fit),
                cmocka_unit_test(test_never_twice),
                cmocka_unit_test(test_offline),
                cmocka_unit_test(test_busy),
                cmocka_unit_test(test_binding),
                cmocka_unit_test(test_loose_gpus),
                cmocka_unit_test(test_exclusive),
                cmocka_unit_test(test_too_big),
                cmocka_unit_test(test_too_big_by_count),
                cmocka_unit_test(test_easy_reserves_gpus),
                cmocka_unit_test(test_conservative_reserves_gpus),
                cmocka_unit_test(test_max_gpus),
                cmocka_unit_test(test_preempt_keeps_gpus),
                cmocka_unit_test(test_gpu_property),
                cmocka_unit_test(test_bad_machine),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
