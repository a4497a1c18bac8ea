/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Preemption by suspension (sched/preempt.c) against hand computations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
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
                        a->node_mask |= 1u << k;
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
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
