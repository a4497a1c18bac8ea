/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Throttling limits inside the scheduling core: HPC2N's MAXPS worked example, the idle
 * and blocked parts of a user's queue (10 submissions, 8 idle), per-project CPU, memory
 * and running-job limits under every policy, per-user overrides, walltime, a spent grant. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "test-sched-helpers.h"

static SchedAllocation allocs[16];

static void run_on_cpus(SchedJob *j, const SchedMachine *m, size_t slot, uint64_t start, unsigned first, unsigned n) {
        SchedAllocation *a = &allocs[slot];

        *a = (SchedAllocation) { .node_mask = 1 };
        for (unsigned c = first; c < first + n; c++)
                cpu_set_add(&a->cpus, c);
        j->state = SCHED_JOB_RUNNING;
        j->start_time = start;
        j->alloc = a;
}

static SchedResult pass(SchedContext *ctx, const SchedConfig *cfg, const SchedMachine *m, SchedJob *jobs, size_t n,
                        uint64_t now) {
        SchedResult res;
        assert_int_equal(sched_pass(ctx, cfg, m, jobs, n, now, &res), 0);
        return res;
}

static bool started(const SchedResult *r, uint64_t id) {
        for (size_t i = 0; i < r->n_decisions; i++)
                if (r->decisions[i].job_id == id)
                        return true;
        return false;
}

static const SchedWait *waiting(const SchedResult *r, uint64_t id) {
        for (size_t i = 0; i < r->n_waiting; i++)
                if (r->waiting[i].job_id == id)
                        return &r->waiting[i];
        fail_msg("job %llu is not waiting", (unsigned long long) id);
        return NULL;
}

/* HPC2N: user1 runs a 2-CPU job with 9:42:28 left: 34,948 s × 2 = 69,896 processor-seconds.
 * A new 8-CPU job of 1 h adds 28,800: 98,696 > 72,000 (soft), so it waits while anything
 * within the soft limit is eligible, and starts when nothing is, 98,696 ≤ 1,080,000. */
static void test_maxps_hpc2n(void **state) {
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedProject proj = { .id = 1, .per_user = { .max_ps_soft = 72000, .max_ps_hard = 1080000 } };
        SchedContext *ctx = sched_context_new();
        SchedNode nodes[1];
        SchedMachine m;
        SchedJob jobs[3];
        const uint64_t now = 100000;
        SchedResult r;

        cfg.projects = &proj;
        cfg.n_projects = 1;
        machine_uniform(nodes, 1, 16, 64 * GIB, &m);
        jobs[0] = job_pending(899744, 0, 2, 36000);
        jobs[0].user_id = 1001, jobs[0].project_id = 1;
        run_on_cpus(&jobs[0], &m, 0, now - (36000 - 34948), 0, 2);
        jobs[1] = job_pending(900991, 10, 8, 3600);
        jobs[1].user_id = 1001, jobs[1].project_id = 1;
        jobs[2] = job_pending(900992, 20, 1, 600); /* another user's, within every limit */
        jobs[2].user_id = 1002, jobs[2].project_id = 1;

        r = pass(ctx, &cfg, &m, jobs, 3, now);
        assert_false(started(&r, 900991));
        assert_int_equal(waiting(&r, 900991)->reason, SCHED_REASON_MAX_PS_SOFT);
        assert_int_equal(waiting(&r, 900991)->limit, 72000);
        assert_int_equal(waiting(&r, 900991)->wanted, 98696);
        assert_true(sched_reason_is_limit(SCHED_REASON_MAX_PS_SOFT));
        assert_true(started(&r, 900992));

        /* Nothing else eligible: between soft and hard it may start. */
        r = pass(ctx, &cfg, &m, jobs, 2, now);
        assert_true(started(&r, 900991));

        /* Above hard: never. */
        proj.per_user.max_ps_hard = 90000;
        r = pass(ctx, &cfg, &m, jobs, 2, now);
        assert_int_equal(waiting(&r, 900991)->reason, SCHED_REASON_MAX_PS_HARD);
        sched_context_free(ctx);
}

/* 10 submissions with MaxIdleJobsPerUser=8: the first 8 idle, 2 blocked; when an idle
 * job starts, the newest blocked one is promoted (HPC2N's example). The machine is
 * otherwise full, so nothing else moves. */
static void test_idle_blocked(void **state) {
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedProject proj = { .id = 7, .per_user = { .max_idle_jobs = 8 } };
        SchedContext *ctx = sched_context_new();
        SchedNode nodes[1];
        SchedMachine m;
        SchedJob jobs[11];
        SchedResult r;

        cfg.projects = &proj;
        cfg.n_projects = 1;
        machine_uniform(nodes, 1, 5, 16 * GIB, &m);
        jobs[0] = job_pending(1, 0, 4, 1000); /* someone else's job holds 4 of the 5 CPUs */
        run_on_cpus(&jobs[0], &m, 0, 0, 0, 4);
        for (int i = 1; i <= 10; i++) {
                jobs[i] = job_pending(100 + (uint64_t) i, (uint64_t) i, 2, 100);
                jobs[i].user_id = 1001, jobs[i].project_id = 7;
        }
        r = pass(ctx, &cfg, &m, jobs, 11, 50);
        assert_int_equal(r.n_decisions, 0);
        for (int i = 1; i <= 8; i++)
                assert_false(sched_reason_is_limit(waiting(&r, 100 + (uint64_t) i)->reason));
        assert_int_equal(waiting(&r, 109)->reason, SCHED_REASON_MAX_IDLE_JOBS_PER_USER);
        assert_int_equal(waiting(&r, 110)->reason, SCHED_REASON_MAX_IDLE_JOBS_PER_USER);
        assert_int_equal(waiting(&r, 110)->limit, 8);

        /* The daemon keeps the blocked part; job 101 has started meanwhile (1 CPU asked). */
        jobs[9].blocked = jobs[10].blocked = true;
        jobs[1].cpus = 1;
        run_on_cpus(&jobs[1], &m, 1, 60, 4, 1);
        r = pass(ctx, &cfg, &m, jobs, 11, 70);
        assert_int_equal(r.n_decisions, 0);
        assert_false(sched_reason_is_limit(waiting(&r, 110)->reason));
        assert_int_equal(waiting(&r, 109)->reason, SCHED_REASON_MAX_IDLE_JOBS_PER_USER);

        /* MaxJobsPerUser counts the running ones too: 3 with one running leaves 2 idle. */
        proj.per_user.max_jobs = 3;
        jobs[9].blocked = false;
        r = pass(ctx, &cfg, &m, jobs, 11, 80);
        assert_false(sched_reason_is_limit(waiting(&r, 102)->reason));
        assert_false(sched_reason_is_limit(waiting(&r, 103)->reason));
        assert_int_equal(waiting(&r, 104)->reason, SCHED_REASON_MAX_JOBS_PER_USER);
        assert_int_equal(waiting(&r, 104)->limit, 3);
        sched_context_free(ctx);
}

/* The idle part is a member's oldest submissions, the sort key's age giving most of them:
 * two submitted more than 2^32 s before now (an age the key cannot hold) keep their
 * order, which their ids do not follow. */
static void test_idle_order_old_submissions(void **state) {
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedProject proj = { .id = 7, .per_user = { .max_idle_jobs = 1 } };
        SchedContext *ctx = sched_context_new();
        SchedNode nodes[1];
        SchedMachine m;
        SchedJob jobs[5];
        const uint64_t now = UINT64_C(10) << 32;
        SchedResult r;

        cfg.projects = &proj;
        cfg.n_projects = 1;
        cfg.priority = &sched_priority_fcfs;
        machine_uniform(nodes, 1, 5, 16 * GIB, &m);
        jobs[0] = job_pending(1, 0, 4, 1000);
        run_on_cpus(&jobs[0], &m, 0, now - 10, 0, 4);
        jobs[1] = job_pending(101, now - 100, 2, 100);
        jobs[2] = job_pending(102, now - (UINT64_C(1) << 32) - 5, 2, 100);
        jobs[3] = job_pending(103, 0, 2, 100);          /* the oldest */
        jobs[4] = job_pending(104, now - (UINT64_C(1) << 32) + 2, 2, 100);
        for (int i = 1; i <= 4; i++)
                jobs[i].user_id = 1001, jobs[i].project_id = 7;
        r = pass(ctx, &cfg, &m, jobs, 5, now);
        assert_int_equal(r.n_decisions, 0);
        assert_false(sched_reason_is_limit(waiting(&r, 103)->reason));
        assert_int_equal(waiting(&r, 102)->reason, SCHED_REASON_MAX_IDLE_JOBS_PER_USER);
        assert_int_equal(waiting(&r, 104)->reason, SCHED_REASON_MAX_IDLE_JOBS_PER_USER);
        assert_int_equal(waiting(&r, 101)->reason, SCHED_REASON_MAX_IDLE_JOBS_PER_USER);

        /* Two idle: the next oldest joins it. */
        proj.per_user.max_idle_jobs = 2;
        r = pass(ctx, &cfg, &m, jobs, 5, now + 1);
        assert_false(sched_reason_is_limit(waiting(&r, 103)->reason));
        assert_false(sched_reason_is_limit(waiting(&r, 102)->reason));
        assert_int_equal(waiting(&r, 104)->reason, SCHED_REASON_MAX_IDLE_JOBS_PER_USER);
        sched_context_free(ctx);
}

/* A project's CPUs, memory and running jobs, under every policy; a per-user override. */
static void test_project_limits(void **state) {
        const SchedPolicyOps *policies[] = { &sched_policy_fcfs, &sched_policy_easy, &sched_policy_conservative };
        SchedUserLimits over = { .user_id = 1002, .limits = { .max_running_jobs = 1 } };
        SchedProject proj = { .id = 3, .total = { .max_cpus = 4, .max_memory = 5 * GIB },
                              .users = &over, .n_users = 1 };
        SchedNode nodes[1];
        SchedMachine m;

        machine_uniform(nodes, 1, 16, 64 * GIB, &m);
        for (size_t k = 0; k < ELEMENTSOF(policies); k++) {
                SchedConfig cfg = SCHED_CONFIG_DEFAULT;
                SchedContext *ctx = sched_context_new();
                SchedJob jobs[6];
                SchedResult r;

                cfg.policy = policies[k];
                cfg.projects = &proj;
                cfg.n_projects = 1;
                for (int i = 0; i < 3; i++) {
                        jobs[i] = job_pending(10 + (uint64_t) i, (uint64_t) i, 2, 100);
                        jobs[i].user_id = 1001, jobs[i].project_id = 3;
                        jobs[i].memory = 2 * GIB;
                }
                jobs[3] = job_pending(20, 5, 2, 100);   /* another project: not limited */
                jobs[3].project_id = 4;
                jobs[4] = job_pending(30, 6, 1, 100);   /* 1002 may run one job at a time */
                jobs[4].user_id = 1002, jobs[4].project_id = 9;
                jobs[5] = job_pending(31, 7, 1, 100);
                jobs[5].user_id = 1002, jobs[5].project_id = 9;

                /* Project 9 has no entry: its jobs are not limited, even 1002's. */
                r = pass(ctx, &cfg, &m, jobs, 6, 10);
                assert_true(started(&r, 10));
                assert_true(started(&r, 11));
                assert_int_equal(waiting(&r, 12)->reason, SCHED_REASON_MAX_CPUS);
                assert_int_equal(waiting(&r, 12)->limit, 4);
                assert_int_equal(waiting(&r, 12)->wanted, 6);
                assert_true(started(&r, 20));
                assert_true(started(&r, 30));
                assert_true(started(&r, 31));

                /* Memory binds first when CPUs would not. */
                proj.total.max_cpus = 0;
                for (int i = 0; i < 6; i++)
                        jobs[i].state = SCHED_JOB_PENDING, jobs[i].alloc = NULL;
                jobs[4].project_id = jobs[5].project_id = 3;
                r = pass(ctx, &cfg, &m, jobs, 6, 20);
                assert_true(started(&r, 10));
                assert_true(started(&r, 11));
                assert_int_equal(waiting(&r, 12)->reason, SCHED_REASON_MAX_MEMORY);
                /* 1002's override: one running job. */
                assert_true(started(&r, 30));
                assert_int_equal(waiting(&r, 31)->reason, SCHED_REASON_MAX_RUNNING_JOBS);
                proj.total.max_cpus = 4;
                sched_context_free(ctx);
        }
}

/* A project's MaxWalltime holds a longer job back (blocked: the limit may be raised). */
static void test_walltime_limit(void **state) {
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedProject proj = { .id = 1, .total = { .max_walltime = 432000 } };
        SchedContext *ctx = sched_context_new();
        SchedNode nodes[1];
        SchedMachine m;
        SchedJob jobs[2];
        SchedResult r;

        cfg.projects = &proj;
        cfg.n_projects = 1;
        machine_uniform(nodes, 1, 4, 16 * GIB, &m);
        jobs[0] = job_pending(1, 0, 1, 432001);
        jobs[0].project_id = 1;
        jobs[1] = job_pending(2, 0, 1, 0); /* no limit asked: infinite, over any maximum */
        jobs[1].project_id = 1;
        r = pass(ctx, &cfg, &m, jobs, 2, 10);
        assert_int_equal(waiting(&r, 1)->reason, SCHED_REASON_MAX_WALLTIME);
        assert_int_equal(waiting(&r, 1)->limit, 432000);
        assert_int_equal(waiting(&r, 2)->reason, SCHED_REASON_MAX_WALLTIME);
        assert_string_equal(sched_reason_to_string(SCHED_REASON_MAX_WALLTIME), "MaxWalltime");
        sched_context_free(ctx);
}

/* A project's slice allows CPUs 2-3: its jobs start there or not at all, under every
 * policy; other projects' jobs go anywhere. */
static void test_allowed_cpus(void **state) {
        const SchedPolicyOps *policies[] = { &sched_policy_fcfs, &sched_policy_easy, &sched_policy_conservative };
        CpuSet allowed = {};
        SchedProject proj = { .id = 5, .allowed_cpus = &allowed };
        SchedNode nodes[2];
        SchedMachine m;

        cpu_set_add(&allowed, 2);
        cpu_set_add(&allowed, 3);
        machine_uniform(nodes, 2, 4, 16 * GIB, &m);
        for (size_t k = 0; k < ELEMENTSOF(policies); k++) {
                SchedConfig cfg = SCHED_CONFIG_DEFAULT;
                SchedContext *ctx = sched_context_new();
                SchedJob jobs[4];
                SchedResult r;

                cfg.policy = policies[k];
                cfg.projects = &proj;
                cfg.n_projects = 1;
                jobs[0] = job_pending(1, 0, 1, 100);
                jobs[0].project_id = 5;
                jobs[1] = job_pending(2, 1, 1, 100);
                jobs[1].project_id = 5;
                jobs[2] = job_pending(3, 2, 1, 100); /* a third: no allowed CPU left */
                jobs[2].project_id = 5;
                jobs[3] = job_pending(4, 3, 4, 100); /* another project: anywhere */
                r = pass(ctx, &cfg, &m, jobs, 4, 10);
                assert_true(started(&r, 1));
                assert_true(started(&r, 2));
                assert_false(started(&r, 3));
                /* fcfs stops at job 3; the backfilling policies go past it. */
                assert_true(started(&r, 4) == (policies[k] != &sched_policy_fcfs));
                for (size_t i = 0; i < r.n_decisions; i++) {
                        const SchedDecision *d = &r.decisions[i];
                        if (d->job_id <= 3) {
                                CpuSet outside = d->alloc.cpus;
                                cpu_set_andnot(&outside, &allowed);
                                if (!cpu_set_is_empty(&outside))
                                        fail_msg("policy %s put job %llu outside CPUs 2-3", policies[k]->name,
                                                 (unsigned long long) d->job_id);
                        }
                }
                sched_context_free(ctx);
        }
}

/* A project whose grant is spent: its jobs in charging queues wait blocked with the
 * grant's numbers, under every policy and without preempting anything; its jobs in a
 * queue that charges nothing, and other projects' jobs, start; with the grant not
 * spent (a new period), they start too. */
static void test_grant_spent(void **state) {
        const SchedPolicyOps *policies[] = { &sched_policy_fcfs, &sched_policy_easy,
                                             &sched_policy_conservative };
        SchedProject projs[2] = {
                { .id = 1, .grant_spent = true, .grant = 100000, .grant_used = 123450 },
                { .id = 2 },
        };
        SchedNode nodes[1];
        SchedMachine m;

        machine_uniform(nodes, 1, 8, 16 * GIB, &m);
        for (size_t k = 0; k < ELEMENTSOF(policies); k++) {
                SchedConfig cfg = SCHED_CONFIG_DEFAULT;
                SchedContext *ctx = sched_context_new();
                SchedJob jobs[5];
                SchedResult r;

                cfg.policy = policies[k];
                cfg.projects = projs;
                cfg.n_projects = 2;
                cfg.preempt.enabled = true;
                jobs[0] = job_pending(1, 0, 2, 100); /* charged, spent project: blocked */
                jobs[0].project_id = 1, jobs[0].charged = true, jobs[0].user_id = 1001;
                jobs[1] = job_pending(2, 1, 2, 100); /* the same project, a free queue */
                jobs[1].project_id = 1, jobs[1].user_id = 1001;
                jobs[2] = job_pending(3, 2, 2, 100); /* another project, charged */
                jobs[2].project_id = 2, jobs[2].charged = true;
                /* A preemptor of the spent project in front of a full machine's victim:
                 * it must not suspend anything for a start it may not make. */
                jobs[3] = job_pending(4, 3, 8, 100);
                jobs[3].project_id = 1, jobs[3].charged = true, jobs[3].user_id = 1001;
                jobs[3].queue_id = 0, jobs[3].preempts = UINT64_C(1) << 1;
                jobs[4] = job_pending(5, 0, 2, 1000);
                jobs[4].project_id = 2, jobs[4].queue_id = 1, jobs[4].preemptable = true;
                run_on_cpus(&jobs[4], &m, 0, 5, 6, 2);
                r = pass(ctx, &cfg, &m, jobs, 5, 10);
                assert_false(started(&r, 1));
                assert_int_equal(waiting(&r, 1)->reason, SCHED_REASON_GRANT);
                assert_int_equal(waiting(&r, 1)->limit, 100000);
                assert_int_equal(waiting(&r, 1)->wanted, 123450);
                assert_int_equal(waiting(&r, 4)->reason, SCHED_REASON_GRANT);
                assert_true(started(&r, 2));
                assert_true(started(&r, 3));
                for (size_t i = 0; i < r.n_decisions; i++)
                        if (r.decisions[i].type == SCHED_DECISION_SUSPEND)
                                fail_msg("policy %s suspended job %llu for a job whose grant is spent",
                                         policies[k]->name, (unsigned long long) r.decisions[i].job_id);
                sched_context_free(ctx);
        }
        assert_true(sched_reason_is_limit(SCHED_REASON_GRANT));
        assert_string_equal(sched_reason_to_string(SCHED_REASON_GRANT), "Grant");

        /* The next period: the same jobs start. */
        {
                SchedConfig cfg = SCHED_CONFIG_DEFAULT;
                SchedContext *ctx = sched_context_new();
                SchedJob jobs[1];
                SchedResult r;

                projs[0].grant_spent = false;
                cfg.projects = projs;
                cfg.n_projects = 2;
                jobs[0] = job_pending(1, 0, 2, 100);
                jobs[0].project_id = 1, jobs[0].charged = true;
                r = pass(ctx, &cfg, &m, jobs, 1, 10);
                assert_true(started(&r, 1));
                sched_context_free(ctx);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_maxps_hpc2n),
                cmocka_unit_test(test_idle_blocked),
                cmocka_unit_test(test_idle_order_old_submissions),
                cmocka_unit_test(test_project_limits),
                cmocka_unit_test(test_walltime_limit),
                cmocka_unit_test(test_allowed_cpus),
                cmocka_unit_test(test_grant_spent),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
