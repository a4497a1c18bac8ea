/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Preemption by suspension (sched/preempt.c) against hand computations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched.h"
#include "test-sched-helpers.h"

#define EXPRESS 0
#define NORMAL 1

static SchedAllocation allocs[16];

static double absd(double x) {
        return x < 0 ? -x : x;
}

/* A job of queue q (express: priority 2, preempts normal; normal: priority 1). */
static SchedJob job_q(uint64_t id, uint32_t q, unsigned cpus, uint64_t walltime) {
        SchedJob j = job_pending(id, 0, cpus, walltime);

        j.queue_id = q;
        j.queue_priority = q == EXPRESS ? 2 : 1;
        j.preempts = q == EXPRESS ? UINT64_C(1) << NORMAL : 0;
        j.preemptable = q == NORMAL;
        j.user_id = 1000 + (uint32_t) id;
        return j;
}

/* Running since start on the CPUs "list", holding mem on node 0 (or the nodes the CPUs
 * are on, the memory on the first of them). */
static void run_cpus(SchedJob *j, const SchedMachine *m, size_t slot, uint64_t start, const char *list,
                     uint64_t mem) {
        SchedAllocation *a = &allocs[slot];
        bool first = true;

        *a = (SchedAllocation) {};
        assert_int_equal(cpu_set_parse(list, &a->cpus), 0);
        for (size_t k = 0; k < m->n_nodes; k++)
                if (cpu_set_intersects(&a->cpus, &m->nodes[k].cpus)) {
                        a->node_mask |= UINT64_C(1) << k;
                        if (first)
                                a->mem[k] = mem;
                        first = false;
                }
        j->state = SCHED_JOB_RUNNING;
        j->start_time = start;
        j->alloc = a;
}

static SchedConfig preempt_config(void) {
        SchedConfig c = SCHED_CONFIG_DEFAULT;

        c.preempt.enabled = true;
        return c;
}

typedef struct Seen {
        size_t n_suspend, n_start, n_resume;
} Seen;

static const SchedDecision *decision(const SchedResult *res, SchedDecisionType t, uint64_t id) {
        for (size_t i = 0; i < res->n_decisions; i++)
                if (res->decisions[i].type == t && res->decisions[i].job_id == id)
                        return &res->decisions[i];
        return NULL;
}

static Seen count(const SchedResult *res) {
        Seen s = {};
        for (size_t i = 0; i < res->n_decisions; i++)
                switch (res->decisions[i].type) {
                case SCHED_DECISION_SUSPEND:
                        s.n_suspend++;
                        break;
                case SCHED_DECISION_START:
                        s.n_start++;
                        break;
                case SCHED_DECISION_RESUME:
                        s.n_resume++;
                        break;
                default:
                        break;
                }
        return s;
}

static SchedReason waiting_reason(const SchedResult *res, uint64_t id) {
        for (size_t i = 0; i < res->n_waiting; i++)
                if (res->waiting[i].job_id == id)
                        return res->waiting[i].reason;
        fail_msg("job %llu is not waiting", (unsigned long long) id);
        return _SCHED_REASON_INVALID;
}

static SchedResult run_pass(SchedContext **ctx, const SchedConfig *c, const SchedMachine *m, SchedJob *jobs,
                            size_t n, uint64_t now) {
        SchedResult res;

        if (!*ctx)
                *ctx = sched_context_new();
        assert_int_equal(sched_pass(*ctx, c, m, jobs, n, now, &res), 0);
        return res;
}

/* The score's factors for one pair, by hand:
 *   victim: 2 CPUs, walltime 1000 s, ran 500 s, never suspended, its owner runs 3 jobs;
 *   preemptor: 2 CPUs, walltime 100 s, its owner runs 1 job; MaxXFactor 1.25.
 *   xf = (1000 + 0 + 100) / 1000 = 1.1      x = 1 − 0.1 / (2 · 0.25) = 0.8
 *   s = 2 / (2 + 2) = 0.5                  n = 2 · (1 + 3) / (2 + 3 + 1) = 4/3
 *   f = 500 / 1000 = 0.5, d = 1 − 0.25 = 0.75
 *   score = 0.8 · 0.5 · 4/3 · 0.75 = 0.4 */
static void test_score(void **state) {
        SchedPreempt c = SCHED_PREEMPT_DEFAULT;
        SchedJob v = job_q(1, NORMAL, 2, 1000), e = job_q(2, EXPRESS, 2, 100);
        SchedSuspendScore s;

        v.state = SCHED_JOB_RUNNING;
        v.start_time = 1000;
        assert_true(absd(sched_suspend_score(&c, &e, 1, &v, 3, 1500, &s) - 0.4) < 1e-12);
        assert_true(absd(s.xfactor - 1.1) < 1e-12);
        assert_true(absd(s.x - 0.8) < 1e-12);
        assert_true(absd(s.s - 0.5) < 1e-12);
        assert_true(absd(s.n - 4.0 / 3.0) < 1e-12);
        assert_true(absd(s.d - 0.75) < 1e-12);

        /* Suspended 150 s before: xf = (1000 + 150 + 100) / 1000 = 1.25, the limit itself:
         * x = 0.5; it ran 500 − 150 = 350 s: f = 0.35, d = 0.8775.
         * score = 0.5 · 0.5 · 4/3 · 0.8775 = 0.2925 */
        v.suspended_time = 150;
        assert_true(absd(sched_suspend_score(&c, &e, 1, &v, 3, 1500, &s) - 0.2925) < 1e-12);
        assert_true(absd(s.xfactor - 1.25) < 1e-12);

        /* A 200 s preemptor: xf = 1.35 > 1.25, no score. */
        e.walltime = 200;
        assert_true(sched_suspend_score(&c, &e, 1, &v, 3, 1500, &s) == 0.0);
        assert_true(absd(s.xfactor - 1.35) < 1e-12);

        /* A preemptor without a walltime never suspends; a victim without one has xf 1. */
        e.walltime = 0;
        assert_true(sched_suspend_score(&c, &e, 1, &v, 3, 1500, NULL) == 0.0);
        e.walltime = 100;
        v.walltime = 0;
        v.suspended_time = 0;
        /* x = 1, s = 0.5, n = 4/3, d = 1 */
        assert_true(absd(sched_suspend_score(&c, &e, 1, &v, 3, 1500, &s) - 2.0 / 3.0) < 1e-12);
        assert_true(s.xfactor == 1.0);

        /* A job at its walltime is spared: d = 0. */
        v.walltime = 1000;
        assert_true(sched_suspend_score(&c, &e, 1, &v, 3, 2000, NULL) == 0.0);
}

/* A normal job holds the whole node; an express job arrives and takes its CPUs. */
static void test_priority_run(void **state) {
        SchedNode nodes[1];
        SchedMachine m;
        SchedJob jobs[2] = { job_q(1, NORMAL, 4, 1000), job_q(2, EXPRESS, 2, 100) };
        SchedConfig c = preempt_config();
        SchedContext *ctx = NULL;
        SchedResult res;
        const SchedDecision *d, *s;

        machine_uniform(nodes, 1, 4, 4 * GIB, &m);
        run_cpus(&jobs[0], &m, 0, 0, "0-3", GIB);
        jobs[1].submit_time = 50;
        jobs[1].memory = GIB;

        res = run_pass(&ctx, &c, &m, jobs, 2, 100);
        assert_int_equal(res.n_decisions, 2);
        s = &res.decisions[0];
        assert_int_equal(s->type, SCHED_DECISION_SUSPEND); /* the freeze comes first */
        assert_int_equal(s->job_id, 1);
        assert_int_equal(s->by_job_id, 2);
        assert_true(s->score > 0.0);
        d = decision(&res, SCHED_DECISION_START, 2);
        assert_non_null(d);
        assert_int_equal(cpu_set_count(&d->alloc.cpus), 2);
        assert_true(cpu_set_intersects(&d->alloc.cpus, &allocs[0].cpus));

        /* Preemption off: the express job waits. */
        c.preempt.enabled = false;
        res = run_pass(&ctx, &c, &m, jobs, 2, 100);
        assert_int_equal(res.n_decisions, 0);

        /* Memory: the suspended job keeps its 1 GiB, so a 3.5 GiB express job does not fit
         * beside it, and nothing is suspended for nothing. */
        c.preempt.enabled = true;
        jobs[1].memory = 3 * GIB + GIB / 2;
        res = run_pass(&ctx, &c, &m, jobs, 2, 100);
        assert_int_equal(res.n_decisions, 0);
        sched_context_free(ctx);
}

/* No suspension that frees too little: the express job needs 2 CPUs, the only
 * preemptable job holds 1, the other 3 are a job of a queue it may not preempt. */
static void test_frees_too_little(void **state) {
        SchedNode nodes[1];
        SchedMachine m;
        SchedJob jobs[3] = { job_q(1, NORMAL, 1, 1000), job_q(2, NORMAL, 3, 1000), job_q(3, EXPRESS, 2, 100) };
        SchedConfig c = preempt_config();
        SchedContext *ctx = NULL;
        SchedResult res;

        machine_uniform(nodes, 1, 4, 4 * GIB, &m);
        run_cpus(&jobs[0], &m, 0, 0, "0", 0);
        run_cpus(&jobs[1], &m, 1, 0, "1-3", 0);
        jobs[1].preemptable = false; /* Preemptable=no */
        res = run_pass(&ctx, &c, &m, jobs, 3, 100);
        assert_int_equal(res.n_decisions, 0);
        assert_int_equal(res.n_waiting, 1);

        /* Preemptable after all: both go, as together they free enough. */
        jobs[1].preemptable = true;
        res = run_pass(&ctx, &c, &m, jobs, 3, 100);
        assert_non_null(decision(&res, SCHED_DECISION_START, 3));
        /* Only what is needed: the 1-CPU job scores higher (s = 2/3 against 2/5) and is
         * taken first, but the 3-CPU job alone suffices, so the 1-CPU one is spared. */
        assert_null(decision(&res, SCHED_DECISION_SUSPEND, 1));
        assert_non_null(decision(&res, SCHED_DECISION_SUSPEND, 2));
        sched_context_free(ctx);
}

/* The NUMA node matters: an exclusive express job needs a whole node. Job 1 (1 CPU on
 * node 0) scores higher than job 3 (2 CPUs on node 1): s = 2/3 against 2/4. But node 0
 * also runs job 2, which is not preemptable, so suspending job 1 frees no node: only
 * job 3 is suspended and the express job gets node 1. */
static void test_numa(void **state) {
        SchedNode nodes[2];
        SchedMachine m;
        SchedJob jobs[4] = { job_q(1, NORMAL, 1, 1000), job_q(2, NORMAL, 1, 1000), job_q(3, NORMAL, 2, 1000),
                             job_q(4, EXPRESS, 2, 100) };
        SchedConfig c = preempt_config();
        SchedContext *ctx = NULL;
        SchedResult res;
        const SchedDecision *d;
        CpuSet want;

        machine_uniform(nodes, 2, 2, 4 * GIB, &m);
        run_cpus(&jobs[0], &m, 0, 0, "0", 0);
        run_cpus(&jobs[1], &m, 1, 0, "1", 0);
        run_cpus(&jobs[2], &m, 2, 0, "2-3", 0);
        jobs[1].preemptable = false;
        jobs[3].exclusive = true;

        res = run_pass(&ctx, &c, &m, jobs, 4, 100);
        assert_int_equal(count(&res).n_suspend, 1);
        assert_non_null(decision(&res, SCHED_DECISION_SUSPEND, 3));
        d = decision(&res, SCHED_DECISION_START, 4);
        assert_non_null(d);
        assert_int_equal(cpu_set_parse("2-3", &want), 0);
        assert_true(cpu_set_equal(&d->alloc.cpus, &want));
        assert_int_equal(d->alloc.node_mask, 2);

        /* Without job 3 there is no way: nothing is suspended. */
        jobs[2].preemptable = false;
        res = run_pass(&ctx, &c, &m, jobs, 4, 100);
        assert_int_equal(res.n_decisions, 0);
        sched_context_free(ctx);
}

/* Memory with and without reclaim: job 1 was suspended by a pass and holds 3 GiB of the
 * node's 4, of which 1 GiB is resident after reclaim. Job 2 runs on all CPUs; the
 * express job wants 2 CPUs and 2 GiB. Without reclaim 1 GiB is free: no suspension.
 * With reclaim 3 GiB are: job 2 is suspended, the express job starts, and job 1 cannot
 * resume (1 + 2 + its 3 GiB > 4). */
static void test_memory_reclaim(void **state) {
        SchedNode nodes[1];
        SchedMachine m;
        SchedJob jobs[3] = { job_q(1, NORMAL, 2, 1000), job_q(2, NORMAL, 4, 1000), job_q(3, EXPRESS, 2, 100) };
        SchedConfig c = preempt_config();
        SchedContext *ctx = NULL;
        SchedResult res;

        machine_uniform(nodes, 1, 4, 4 * GIB, &m);
        run_cpus(&jobs[0], &m, 0, 0, "0-1", 3 * GIB);
        jobs[0].state = SCHED_JOB_SUSPENDED;
        jobs[0].preempted = true;
        jobs[0].suspended_time = 50;
        jobs[0].resident_memory = GIB;
        run_cpus(&jobs[1], &m, 1, 50, "0-3", 0);
        jobs[2].memory = 2 * GIB;

        res = run_pass(&ctx, &c, &m, jobs, 3, 100);
        assert_int_equal(res.n_decisions, 0);

        c.preempt.reclaim = true;
        res = run_pass(&ctx, &c, &m, jobs, 3, 100);
        assert_int_equal(count(&res).n_suspend, 1);
        assert_non_null(decision(&res, SCHED_DECISION_SUSPEND, 2));
        assert_non_null(decision(&res, SCHED_DECISION_START, 3));
        assert_null(decision(&res, SCHED_DECISION_RESUME, 1));
        sched_context_free(ctx);
}

/* A suspended job resumes before new lower-priority work starts, on other CPUs if its
 * own are taken; not while an express job that outranks it waits for them. */
static void test_resume(void **state) {
        SchedNode nodes[2];
        SchedMachine m;
        SchedJob jobs[4] = { job_q(1, NORMAL, 2, 1000), job_q(2, NORMAL, 2, 1000), job_q(3, NORMAL, 2, 1000),
                             job_q(4, EXPRESS, 4, 100) };
        SchedConfig c = preempt_config();
        SchedContext *ctx = NULL;
        SchedResult res;
        const SchedDecision *d;
        CpuSet want;

        machine_uniform(nodes, 2, 2, 4 * GIB, &m);
        /* Job 1: suspended from CPUs 0-1 (node 0), 1 GiB there. Job 2 now runs on 0-1. */
        run_cpus(&jobs[0], &m, 0, 0, "0-1", GIB);
        jobs[0].state = SCHED_JOB_SUSPENDED;
        jobs[0].preempted = true;
        jobs[0].suspended_time = 30;
        run_cpus(&jobs[1], &m, 1, 10, "0-1", 0);
        /* Job 3, new work of the same queue, waits behind it. */
        jobs[2].submit_time = 5;

        res = run_pass(&ctx, &c, &m, jobs, 3, 100);
        assert_int_equal(res.n_decisions, 1);
        d = &res.decisions[0];
        assert_int_equal(d->type, SCHED_DECISION_RESUME);
        assert_int_equal(d->job_id, 1);
        assert_int_equal(cpu_set_parse("2-3", &want), 0);
        assert_true(cpu_set_equal(&d->alloc.cpus, &want)); /* moved to node 1 */
        assert_int_equal(d->alloc.node_mask, 2);
        assert_true(d->alloc.mem[1] == GIB);
        assert_int_equal(waiting_reason(&res, 3), SCHED_REASON_RESOURCES);

        /* Its own CPUs free: it resumes where it was. */
        jobs[1].state = SCHED_JOB_DONE;
        res = run_pass(&ctx, &c, &m, jobs, 3, 100);
        d = decision(&res, SCHED_DECISION_RESUME, 1);
        assert_non_null(d);
        assert_true(cpu_set_equal(&d->alloc.cpus, &allocs[0].cpus));
        assert_non_null(decision(&res, SCHED_DECISION_START, 3)); /* on the other node */

        /* An express job needing all 4 CPUs outranks it: it starts, job 1 stays. */
        res = run_pass(&ctx, &c, &m, jobs, 4, 100);
        assert_non_null(decision(&res, SCHED_DECISION_START, 4));
        assert_null(decision(&res, SCHED_DECISION_RESUME, 1));
        assert_null(decision(&res, SCHED_DECISION_START, 3));
        sched_context_free(ctx);
}

/* Never suspended again within SuspendWindowSec of its resumption; never past
 * MaxSuspendTime in total. */
static void test_window_and_cap(void **state) {
        SchedNode nodes[1];
        SchedMachine m;
        SchedJob jobs[2] = { job_q(1, NORMAL, 4, 10000), job_q(2, EXPRESS, 4, 100) };
        SchedConfig c = preempt_config();
        SchedContext *ctx = NULL;
        SchedResult res;

        machine_uniform(nodes, 1, 4, 4 * GIB, &m);
        run_cpus(&jobs[0], &m, 0, 0, "0-3", 0);
        c.preempt.suspend_window = 600;
        jobs[0].last_resume_time = 1000 - 599;
        res = run_pass(&ctx, &c, &m, jobs, 2, 1000);
        assert_int_equal(res.n_decisions, 0);
        jobs[0].last_resume_time = 1000 - 600;
        res = run_pass(&ctx, &c, &m, jobs, 2, 1000);
        assert_int_equal(count(&res).n_suspend, 1);

        /* Suspended 250 s so far; another 100 s would make 350 s. */
        jobs[0].suspended_time = 250;
        c.preempt.max_suspend_time = 349;
        res = run_pass(&ctx, &c, &m, jobs, 2, 1000);
        assert_int_equal(res.n_decisions, 0);
        c.preempt.max_suspend_time = 350;
        res = run_pass(&ctx, &c, &m, jobs, 2, 1000);
        assert_int_equal(count(&res).n_suspend, 1);

        /* Preemptable=no. */
        jobs[0].preemptable = false;
        res = run_pass(&ctx, &c, &m, jobs, 2, 1000);
        assert_int_equal(res.n_decisions, 0);
        sched_context_free(ctx);
}

/* Parallel-run: a large job suspends a smaller one of its own queue, only when the score
 * allows (>= 0.25), never a job as large as itself. */
static void test_parallel_run(void **state) {
        SchedNode nodes[1];
        SchedMachine m;
        SchedJob jobs[3] = { job_q(1, NORMAL, 1, 1000), job_q(2, NORMAL, 3, 1000), job_q(3, NORMAL, 4, 100) };
        SchedConfig c = preempt_config();
        SchedContext *ctx = NULL;
        SchedResult res;

        machine_uniform(nodes, 1, 4, 4 * GIB, &m);
        run_cpus(&jobs[0], &m, 0, 0, "0", 0);
        run_cpus(&jobs[1], &m, 1, 0, "1-3", 0);
        res = run_pass(&ctx, &c, &m, jobs, 3, 100);
        assert_int_equal(res.n_decisions, 0); /* no ParallelRun= */

        jobs[2].parallel_run = true;
        /* Job 1: xf 1.1, x 0.8, s 4/5, n 2·2/3, f 0.1, d 0.99: 0.8448; job 2: s 4/7,
         * 0.6034. Both are needed. */
        res = run_pass(&ctx, &c, &m, jobs, 3, 100);
        assert_int_equal(count(&res).n_suspend, 2);
        assert_non_null(decision(&res, SCHED_DECISION_START, 3));

        /* Job 2 as large as the preemptor: not a parallel-run victim. */
        jobs[1].cpus = 4;
        res = run_pass(&ctx, &c, &m, jobs, 3, 100);
        assert_int_equal(res.n_decisions, 0);

        /* At 950 s, job 1 is near its end: xf 1.05, x 0.9, s 0.8, n 4/3, f 0.95, d 0.0975:
         * 0.0936 < 0.25, spared; job 2 alone (walltime 10000 s) frees too little. */
        jobs[1].cpus = 3;
        jobs[2].walltime = 50;
        jobs[1].walltime = 10000;
        res = run_pass(&ctx, &c, &m, jobs, 3, 950);
        assert_null(decision(&res, SCHED_DECISION_SUSPEND, 1));
        assert_int_equal(res.n_decisions, 0);
        sched_context_free(ctx);
}

/* Starvation control (item 3 of the issue, in place before preemption): each bypass adds
 * PriorityWeightBypass, and a bypassed job overtakes an equal one that was not. */
static void test_bypass_priority(void **state) {
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob a = job_q(1, NORMAL, 1, 100), b = job_q(2, NORMAL, 1, 100);
        SchedPriorityTerm t[_SCHED_TERM_MAX];
        double pa, pb;

        c.weights.bypass = 10.0;
        a.submit_time = b.submit_time = 0;
        b.bypass_count = 3;
        pa = c.priority->priority(&c, &a, 1000);
        pb = c.priority->priority(&c, &b, 1000);
        assert_true(absd(pb - pa - 30.0) < 1e-9);
        assert_true(absd(sched_priority_terms(&c, &b, 1000, t) - pb) < 1e-9);
        assert_true(t[SCHED_TERM_BYPASS].input == 3.0 && t[SCHED_TERM_BYPASS].value == 30.0);
}

/* Random machines and workloads of express and normal jobs, run to the end with every
 * decision applied (DEBUG_SEED=N prints how scenario N ends): no CPU is ever shared, running and suspended jobs' memory fits each
 * node, a suspension always comes with the start it makes room for, a resumed job gets
 * as many CPUs as it had, MaxSuspendTime holds, and every job ends (no starvation). */
#define RJOBS 40

typedef struct RJob {
        SchedJob j;
        SchedAllocation alloc;
        uint64_t remaining, since, suspended, end;
        bool done;
} RJob;

static uint64_t rstate;
static uint64_t rnd(uint64_t n) {
        rstate ^= rstate << 13;
        rstate ^= rstate >> 7;
        rstate ^= rstate << 17;
        return rstate % n;
}

static void random_scenario(unsigned seed) {
        SchedNode nodes[2];
        SchedMachine m;
        SchedConfig c = preempt_config();
        SchedContext *ctx = sched_context_new();
        static const SchedPolicyOps *const policies[] = { &sched_policy_easy, &sched_policy_fcfs,
                                                          &sched_policy_conservative };
        RJob t[RJOBS];
        SchedJob view[RJOBS];
        size_t map[RJOBS], n_nodes, total;
        uint64_t now = 0, sub = 0, mem_per_node;
        unsigned passes = 0;

        rstate = seed * UINT64_C(0x9E3779B97F4A7C15) + 1;
        n_nodes = 1 + rnd(2);
        mem_per_node = (8 + rnd(24)) * GIB;
        machine_uniform(nodes, n_nodes, 2 + (unsigned) rnd(7), mem_per_node, &m);
        total = sched_machine_cpus(&m);
        c.policy = policies[seed % 3];
        c.preempt.max_xfactor = 1.25 + (double) rnd(3);
        c.preempt.suspend_window = rnd(2) ? 0 : rnd(300);
        c.preempt.max_suspend_time = rnd(3) == 0 ? 200 + rnd(2000) : 0;
        c.preempt.reclaim = rnd(2);

        for (size_t i = 0; i < RJOBS; i++) {
                bool express = rnd(4) == 0;
                uint64_t wall = express ? 10 + rnd(300) : 100 + rnd(2000);

                sub += rnd(200);
                t[i] = (RJob) { .j = job_q(i + 1, express ? EXPRESS : NORMAL, 1 + (unsigned) rnd(total), wall) };
                t[i].j.submit_time = sub;
                t[i].j.memory = rnd(3) == 0 ? rnd(mem_per_node / GIB) * GIB : 0;
                t[i].j.user_id = (uint32_t) rnd(4);
                t[i].j.parallel_run = !express && rnd(5) == 0;
                t[i].remaining = rnd(2) ? wall : 1 + rnd(wall);
        }

        for (;;) {
                SchedResult res;
                size_t n = 0;
                uint64_t next = UINT64_MAX, held[2] = {};
                CpuSet used = {};

                for (size_t i = 0; i < RJOBS; i++) {
                        RJob *x = &t[i];
                        if (x->j.state == SCHED_JOB_RUNNING && x->end <= now) {
                                x->j.state = SCHED_JOB_DONE;
                                x->done = true;
                        }
                        if (x->done || x->j.submit_time > now)
                                continue;
                        x->j.suspended_time = x->suspended + (x->j.state == SCHED_JOB_SUSPENDED ? now - x->since : 0);
                        map[n] = i;
                        view[n++] = x->j;
                }
                assert_int_equal(sched_pass(ctx, &c, &m, view, n, now, &res), 0);
                assert_true(++passes < 100000);

                for (size_t d = 0; d < res.n_decisions; d++) {
                        const SchedDecision *x = &res.decisions[d];
                        RJob *r = &t[map[x->job_index]];

                        switch (x->type) {
                        case SCHED_DECISION_SUSPEND: {
                                const SchedDecision *st = NULL;
                                for (size_t e = d + 1; e < res.n_decisions && !st; e++)
                                        if (res.decisions[e].type == SCHED_DECISION_START &&
                                            res.decisions[e].job_id == x->by_job_id)
                                                st = &res.decisions[e];
                                assert_non_null(st);
                                assert_int_equal(r->j.state, SCHED_JOB_RUNNING);
                                assert_true(r->j.preemptable);
                                if (c.preempt.max_suspend_time)
                                        assert_true(r->j.suspended_time + sched_job_walltime(&t[x->by_job_id - 1].j) <=
                                                    c.preempt.max_suspend_time);
                                r->j.state = SCHED_JOB_SUSPENDED;
                                r->j.preempted = true;
                                r->j.resident_memory = r->j.memory / 2;
                                r->since = now;
                                r->remaining = r->end - now;
                                break;
                        }
                        case SCHED_DECISION_RESUME:
                                assert_int_equal(r->j.state, SCHED_JOB_SUSPENDED);
                                assert_int_equal(cpu_set_count(&x->alloc.cpus), cpu_set_count(&r->alloc.cpus));
                                r->alloc = x->alloc;
                                r->suspended += now - r->since;
                                r->j.state = SCHED_JOB_RUNNING;
                                r->j.preempted = false;
                                r->j.last_resume_time = now;
                                r->end = now + r->remaining;
                                break;
                        case SCHED_DECISION_START:
                                assert_int_equal(r->j.state, SCHED_JOB_PENDING);
                                r->alloc = x->alloc;
                                r->j.alloc = &r->alloc;
                                r->j.state = SCHED_JOB_RUNNING;
                                r->j.start_time = now;
                                r->end = now + r->remaining;
                                break;
                        default:
                                fail();
                        }
                }

                for (size_t i = 0; i < RJOBS; i++) {
                        const RJob *x = &t[i];
                        if (x->j.state != SCHED_JOB_RUNNING && x->j.state != SCHED_JOB_SUSPENDED)
                                continue;
                        if (x->j.state == SCHED_JOB_RUNNING) {
                                if (cpu_set_intersects(&used, &x->alloc.cpus))
                                        fail_msg("seed %u t=%llu: job %zu shares a CPU", seed, (unsigned long long) now, i + 1);
                                cpu_set_or(&used, &x->alloc.cpus);
                        }
                        for (size_t k = 0; k < n_nodes; k++) {
                                uint64_t mm = x->alloc.mem[k];
                                if (x->j.state == SCHED_JOB_SUSPENDED && c.preempt.reclaim && x->j.memory > 0)
                                        mm = (uint64_t) ((double) mm * ((double) x->j.resident_memory / (double) x->j.memory));
                                held[k] += mm;
                        }
                }
                for (size_t k = 0; k < n_nodes; k++)
                        if (held[k] > nodes[k].memory)
                                fail_msg("seed %u t=%llu: node %zu memory exceeded", seed, (unsigned long long) now, k);

                for (size_t i = 0; i < RJOBS; i++) {
                        if (t[i].j.state == SCHED_JOB_RUNNING)
                                next = MIN(next, t[i].end);
                        else if (!t[i].done && t[i].j.submit_time > now)
                                next = MIN(next, t[i].j.submit_time);
                }
                if (next == UINT64_MAX) {
                        for (size_t w = 0; w < res.n_waiting && getenv("DEBUG_SEED") && (unsigned) atoi(getenv("DEBUG_SEED")) == seed; w++)
                                print_message("t=%llu wait %llu %s est %llu\n", (unsigned long long) now,
                                              (unsigned long long) res.waiting[w].job_id,
                                              sched_reason_to_string(res.waiting[w].reason),
                                              (unsigned long long) res.waiting[w].est_start);
                        for (size_t v = 0; v < n && getenv("DEBUG_SEED") && (unsigned) atoi(getenv("DEBUG_SEED")) == seed; v++)
                                print_message("view %llu state %d pre %d\n", (unsigned long long) view[v].id, view[v].state, view[v].preempted);
                        break;
                }
                now = next;
        }
        for (size_t i = 0; i < RJOBS && getenv("DEBUG_SEED") && (unsigned) atoi(getenv("DEBUG_SEED")) == seed; i++)
                print_message("job %zu q%u state %d cpus %u mem %llu wall %llu done %d susp %llu\n", i + 1, t[i].j.queue_id,
                              t[i].j.state, t[i].j.cpus, (unsigned long long) (t[i].j.memory / GIB),
                              (unsigned long long) t[i].j.walltime, t[i].done, (unsigned long long) t[i].suspended);
        for (size_t i = 0; i < RJOBS; i++)
                if (!t[i].done)
                        fail_msg("seed %u: job %zu (%s) never ended", seed, i + 1,
                                 t[i].j.state == SCHED_JOB_SUSPENDED ? "suspended" : "never started");
        sched_context_free(ctx);
}

/* The victims go best scored first, a tie to the lower job index: eight normal jobs of
 * one CPU fill the node, each 1000 s long and run a different while (the less run, the
 * better its score: d = 1 - f^2, the other factors alike); an express job of 3 CPUs
 * suspends the three least run, best first, and one of 4 CPUs the fourth as well, of two
 * run alike the first. */
static void test_victims_best_first(void **state) {
        static const uint64_t ran[8] = { 700, 400, 300, 900, 400, 100, 800, 200 };
        static const uint64_t order[4] = { 6, 8, 3, 2 };
        SchedNode nodes[1];
        SchedMachine m;
        SchedJob jobs[9];
        SchedConfig c = preempt_config();

        machine_uniform(nodes, 1, 8, 8 * GIB, &m);
        for (unsigned cpus = 3; cpus <= 4; cpus++) {
                SchedContext *ctx = NULL;
                SchedResult res;
                size_t n_suspend = 0;

                for (size_t k = 0; k < 8; k++) {
                        char list[8];

                        jobs[k] = job_q(k + 1, NORMAL, 1, 1000);
                        snprintf(list, sizeof(list), "%zu", k);
                        run_cpus(&jobs[k], &m, k, 1000 - ran[k], list, 0);
                }
                jobs[8] = job_q(9, EXPRESS, cpus, 100);
                res = run_pass(&ctx, &c, &m, jobs, 9, 1000);
                for (size_t i = 0; i < res.n_decisions; i++) {
                        if (res.decisions[i].type != SCHED_DECISION_SUSPEND)
                                continue;
                        assert_true(n_suspend < cpus);
                        assert_int_equal(res.decisions[i].job_id, order[n_suspend]);
                        n_suspend++;
                }
                assert_int_equal(n_suspend, cpus);
                assert_non_null(decision(&res, SCHED_DECISION_START, 9));
                sched_context_free(ctx);
        }
}

static void test_random_invariants(void **state) {
        for (unsigned seed = 1; seed <= 300; seed++)
                random_scenario(seed);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_score),
                cmocka_unit_test(test_priority_run),
                cmocka_unit_test(test_frees_too_little),
                cmocka_unit_test(test_numa),
                cmocka_unit_test(test_memory_reclaim),
                cmocka_unit_test(test_resume),
                cmocka_unit_test(test_window_and_cap),
                cmocka_unit_test(test_parallel_run),
                cmocka_unit_test(test_bypass_priority),
                cmocka_unit_test(test_victims_best_first),
                cmocka_unit_test(test_random_invariants),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
