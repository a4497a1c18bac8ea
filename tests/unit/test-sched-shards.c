/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Slurm's shards in the scheduling core: jobs sharing one GPU, never with a whole-GPU job,
 * all of a job's shards from one GPU, packing onto GPUs already shared, TooBig, and EASY's
 * reservation and estimates with shards. Every case worked by hand. */
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
static SchedGpu gpus[8];
static SchedAllocation allocs[16];

/* n_nodes nodes of 8 CPUs, 64G each; n_gpus GPUs spread evenly over them, shards each. */
static SchedMachine machine(size_t n_nodes, size_t n_gpus, uint16_t shards) {
        SchedMachine m;

        machine_uniform(nodes, n_nodes, 8, 64 * GIB, &m);
        for (size_t g = 0; g < n_gpus; g++)
                gpus[g] = (SchedGpu) { .node = (int) (g * n_nodes / n_gpus), .shards = shards };
        m.gpus = gpus;
        m.n_gpus = n_gpus;
        return m;
}

static SchedJob shard_job(uint64_t id, unsigned cpus, unsigned shards, uint64_t walltime) {
        SchedJob j = job_pending(id, id, cpus, walltime);

        j.gpus = 1;
        j.shards = (uint16_t) shards;
        return j;
}

static SchedJob gpu_job(uint64_t id, unsigned cpus, unsigned n_gpus, uint64_t walltime) {
        SchedJob j = job_pending(id, id, cpus, walltime);

        j.gpus = n_gpus;
        return j;
}

/* Running since start on CPUs "list", GPU mask, shards of it (0: whole). */
static void run(SchedJob *j, const SchedMachine *m, size_t slot, uint64_t start, const char *list, uint64_t mask,
                unsigned shards) {
        SchedAllocation *a = &allocs[slot];

        *a = (SchedAllocation) { .gpu_mask = mask, .shards = (uint16_t) shards };
        assert_int_equal(cpu_set_parse(list, &a->cpus), 0);
        for (size_t k = 0; k < m->n_nodes; k++)
                if (cpu_set_intersects(&a->cpus, &m->nodes[k].cpus))
                        a->node_mask |= UINT64_C(1) << k;
        j->state = SCHED_JOB_RUNNING;
        j->start_time = start;
        j->alloc = a;
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

static void test_two_share_one_gpu(void **state) {
        SchedMachine m = machine(1, 2, 4);
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[3];
        SchedResult r;
        const SchedDecision *a, *b, *d;

        /* Two GPUs of 4 shards, none in use: shard:1 takes GPU 0, shard:2 joins it
         * (packed), shard:1 joins it too (4 of 4): GPU 1 stays whole. */
        jobs[0] = shard_job(1, 1, 1, 3600);
        jobs[1] = shard_job(2, 1, 2, 3600);
        jobs[2] = shard_job(3, 1, 1, 3600);
        assert_int_equal(pass(&c, &m, jobs, 3, NOW, &r), 0);
        assert_int_equal(r.n_decisions, 3);
        a = started(&r, 1), b = started(&r, 2), d = started(&r, 3);
        assert_non_null(a), assert_non_null(b), assert_non_null(d);
        assert_int_equal(a->alloc.gpu_mask, 1);
        assert_int_equal(a->alloc.shards, 1);
        assert_int_equal(a->alloc.shards_of, 4); /* its share, for accounting: 1 of 4 */
        assert_int_equal(b->alloc.gpu_mask, 1);
        assert_int_equal(b->alloc.shards, 2);
        assert_int_equal(d->alloc.gpu_mask, 1);
        assert_int_equal(d->alloc.shards, 1);

        /* The same as running jobs: a fourth shard:1 finds GPU 0 full and takes GPU 1. */
        run(&jobs[0], &m, 0, NOW - 10, "0", 1, 1);
        run(&jobs[1], &m, 1, NOW - 10, "1", 1, 2);
        run(&jobs[2], &m, 2, NOW - 10, "2", 1, 1);
        {
                SchedJob more[4] = { jobs[0], jobs[1], jobs[2], shard_job(4, 1, 1, 3600) };

                assert_int_equal(pass(&c, &m, more, 4, NOW, &r), 0);
                assert_int_equal(r.n_decisions, 1);
                assert_int_equal(started(&r, 4)->alloc.gpu_mask, 2);
                assert_int_equal(started(&r, 4)->alloc.shards, 1);
        }
}

static void test_whole_waits_for_shards(void **state) {
        SchedMachine m = machine(1, 1, 2);
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[3];
        SchedResult r;

        /* Two shard jobs on the only GPU, ending at NOW+100 and NOW+300: a whole-GPU job
         * waits for Resources until the later of them ends. */
        jobs[0] = shard_job(1, 1, 1, 110);
        run(&jobs[0], &m, 0, NOW - 10, "0", 1, 1);
        jobs[1] = shard_job(2, 1, 1, 310);
        run(&jobs[1], &m, 1, NOW - 10, "1", 1, 1);
        jobs[2] = gpu_job(3, 1, 1, 600);
        assert_int_equal(pass(&c, &m, jobs, 3, NOW, &r), 0);
        assert_int_equal(r.n_decisions, 0);
        assert_int_equal(waiting(&r, 3)->reason, SCHED_REASON_RESOURCES);
        assert_int_equal(waiting(&r, 3)->est_start, NOW + 300);

        /* One of them ended: still shared, still waiting, for the other. */
        jobs[0].state = SCHED_JOB_DONE;
        assert_int_equal(pass(&c, &m, jobs, 3, NOW + 100, &r), 0);
        assert_int_equal(r.n_decisions, 0);
        assert_int_equal(waiting(&r, 3)->est_start, NOW + 300);

        /* Both ended: it starts, whole. */
        jobs[1].state = SCHED_JOB_DONE;
        assert_int_equal(pass(&c, &m, jobs, 3, NOW + 300, &r), 0);
        assert_int_equal(r.n_decisions, 1);
        assert_int_equal(started(&r, 3)->alloc.gpu_mask, 1);
        assert_int_equal(started(&r, 3)->alloc.shards, 0);
}

static void test_shards_wait_for_whole(void **state) {
        SchedMachine m = machine(1, 1, 4);
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[2];
        SchedResult r;

        /* The GPU is held whole until NOW+200: a shard job gets none of it, and its
         * estimate is that end. */
        jobs[0] = gpu_job(1, 1, 1, 210);
        run(&jobs[0], &m, 0, NOW - 10, "0", 1, 0);
        jobs[1] = shard_job(2, 1, 1, 100);
        assert_int_equal(pass(&c, &m, jobs, 2, NOW, &r), 0);
        assert_int_equal(r.n_decisions, 0);
        assert_int_equal(waiting(&r, 2)->reason, SCHED_REASON_RESOURCES);
        assert_int_equal(waiting(&r, 2)->est_start, NOW + 200);
}

static void test_too_big(void **state) {
        SchedMachine m = machine(1, 2, 4);
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[3];
        SchedResult r;

        /* 5 shards of a GPU of 4: never; 4 of them: yes. */
        jobs[0] = shard_job(1, 1, 5, 100);
        jobs[1] = shard_job(2, 1, 4, 100);
        assert_int_equal(pass(&c, &m, jobs, 2, NOW, &r), 0);
        assert_int_equal(waiting(&r, 1)->reason, SCHED_REASON_TOO_BIG);
        assert_non_null(started(&r, 2));

        /* GPUs without shards give none; only the one with 2 can give 2. */
        gpus[0].shards = 0;
        gpus[1].shards = 0;
        jobs[0] = shard_job(1, 1, 1, 100);
        assert_int_equal(pass(&c, &m, jobs, 1, NOW, &r), 0);
        assert_int_equal(waiting(&r, 1)->reason, SCHED_REASON_TOO_BIG);
        gpus[1].shards = 2;
        jobs[0] = shard_job(1, 1, 2, 100);
        jobs[1] = shard_job(2, 1, 3, 100);
        jobs[2] = gpu_job(3, 1, 1, 100);
        assert_int_equal(pass(&c, &m, jobs, 3, NOW, &r), 0);
        assert_int_equal(started(&r, 1)->alloc.gpu_mask, 2);
        assert_int_equal(waiting(&r, 2)->reason, SCHED_REASON_TOO_BIG);
        /* The whole-GPU job takes GPU 0, the one left whole. */
        assert_int_equal(started(&r, 3)->alloc.gpu_mask, 1);
}

static void test_one_gpu_only(void **state) {
        SchedMachine m = machine(1, 2, 2);
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[3];
        SchedResult r;

        /* Each GPU has 1 of its 2 shards in use: 2 are free in all, but not on one GPU,
         * so a shard:2 job waits, until the first holder ends (NOW+100, GPU 1 whole). */
        jobs[0] = shard_job(1, 1, 1, 410);
        run(&jobs[0], &m, 0, NOW - 10, "0", 1, 1);
        jobs[1] = shard_job(2, 1, 1, 110);
        run(&jobs[1], &m, 1, NOW - 10, "1", 2, 1);
        jobs[2] = shard_job(3, 1, 2, 100);
        assert_int_equal(pass(&c, &m, jobs, 3, NOW, &r), 0);
        assert_int_equal(r.n_decisions, 0);
        assert_int_equal(waiting(&r, 3)->reason, SCHED_REASON_RESOURCES);
        assert_int_equal(waiting(&r, 3)->est_start, NOW + 100);

        jobs[1].state = SCHED_JOB_DONE;
        assert_int_equal(pass(&c, &m, jobs, 3, NOW + 100, &r), 0);
        assert_int_equal(started(&r, 3)->alloc.gpu_mask, 2);
        assert_int_equal(started(&r, 3)->alloc.shards, 2);
}

static void test_packing_near_cpus(void **state) {
        SchedMachine m = machine(2, 2, 4);
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[2];
        SchedResult r;
        const SchedDecision *d;

        /* GPU 0 on node 0, GPU 1 on node 1; a shard job runs on GPU 1. A new shard job
         * joins GPU 1 (GPU 0 stays whole), with its CPUs on node 1, next to it. */
        jobs[0] = shard_job(1, 1, 1, 3600);
        run(&jobs[0], &m, 0, NOW - 10, "8", 2, 1);
        jobs[1] = shard_job(2, 2, 1, 3600);
        assert_int_equal(pass(&c, &m, jobs, 2, NOW, &r), 0);
        d = started(&r, 2);
        assert_non_null(d);
        assert_int_equal(d->alloc.gpu_mask, 2);
        assert_int_equal(d->alloc.node_mask, 2);
        assert_true(cpu_set_test(&d->alloc.cpus, 9) && cpu_set_test(&d->alloc.cpus, 10));

        /* A whole-GPU job alongside takes GPU 0. */
        {
                SchedJob more[3] = { jobs[0], jobs[1], gpu_job(3, 1, 1, 3600) };

                assert_int_equal(pass(&c, &m, more, 3, NOW, &r), 0);
                assert_int_equal(started(&r, 2)->alloc.gpu_mask, 2);
                assert_int_equal(started(&r, 3)->alloc.gpu_mask, 1);
        }
}

static void test_easy_backfill_keeps_reservation(void **state) {
        SchedMachine m = machine(1, 1, 2);
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[4];
        SchedResult r;

        /* One GPU of 2 shards, one in use until NOW+100. The top job wants the GPU whole:
         * reserved at NOW+100. A shard job that would run to NOW+1000 may not join (it
         * would keep the GPU from the top job); one done by NOW+50 may. */
        jobs[0] = shard_job(1, 1, 1, 110);
        run(&jobs[0], &m, 0, NOW - 10, "0", 1, 1);
        jobs[1] = gpu_job(2, 1, 1, 600);
        jobs[2] = shard_job(3, 1, 1, 1000);
        jobs[3] = shard_job(4, 1, 1, 50);
        assert_int_equal(pass(&c, &m, jobs, 4, NOW, &r), 0);
        assert_int_equal(waiting(&r, 2)->reason, SCHED_REASON_RESOURCES);
        assert_int_equal(waiting(&r, 2)->est_start, NOW + 100);
        assert_null(started(&r, 3));
        assert_non_null(started(&r, 4));
        assert_int_equal(started(&r, 4)->alloc.gpu_mask, 1);
        assert_int_equal(started(&r, 4)->alloc.shards, 1);
        /* Its estimate: the GPU back whole once the top job is done (NOW+700). */
        assert_int_equal(waiting(&r, 3)->est_start, NOW + 700);

        /* Without the top job, the long one joins at once. */
        jobs[1].state = SCHED_JOB_DONE;
        assert_int_equal(pass(&c, &m, jobs, 4, NOW, &r), 0);
        assert_non_null(started(&r, 3));
        assert_int_equal(started(&r, 3)->alloc.gpu_mask, 1);
}

static void test_easy_backfill_gpu_free_after(void **state) {
        SchedMachine m = machine(1, 2, 2);
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[4];
        SchedResult r;

        /* GPU 0 shared until NOW+100, 6 CPUs busy until then, GPU 1 free. The top job
         * wants 7 CPUs and no GPU: reserved at NOW+100, leaving 1 CPU and both GPUs. A
         * long shard job may run past that on the CPU left: it joins GPU 0, which the top
         * job does not need, and GPU 1 stays whole. */
        jobs[0] = shard_job(1, 1, 1, 110);
        run(&jobs[0], &m, 0, NOW - 10, "0", 1, 1);
        jobs[1] = job_pending(2, 2, 6, 110);
        run(&jobs[1], &m, 1, NOW - 10, "1-6", 0, 0);
        jobs[2] = job_pending(3, 3, 7, 600);
        jobs[3] = shard_job(4, 1, 1, 2000);
        assert_int_equal(pass(&c, &m, jobs, 4, NOW, &r), 0);
        assert_int_equal(waiting(&r, 3)->est_start, NOW + 100);
        assert_non_null(started(&r, 4));
        assert_int_equal(started(&r, 4)->alloc.gpu_mask, 1);
}

static void test_easy_backfill_gpu_held_anyway(void **state) {
        SchedMachine m = machine(1, 2, 2);
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[4];
        SchedResult r;

        /* GPU 0 shared until NOW+1000, GPU 1 whole until NOW+100: the top job (a whole
         * GPU) is reserved at NOW+100 on GPU 1. A shard job running to NOW+2000 may join
         * GPU 0, which the top job cannot have by then anyway; the reservation stays. */
        jobs[0] = shard_job(1, 1, 1, 1010);
        run(&jobs[0], &m, 0, NOW - 10, "0", 1, 1);
        jobs[1] = gpu_job(2, 1, 1, 110);
        run(&jobs[1], &m, 1, NOW - 10, "1", 2, 0);
        jobs[2] = gpu_job(3, 1, 1, 600);
        jobs[3] = shard_job(4, 1, 1, 2000);
        assert_int_equal(pass(&c, &m, jobs, 4, NOW, &r), 0);
        assert_int_equal(waiting(&r, 3)->est_start, NOW + 100);
        assert_non_null(started(&r, 4));
        assert_int_equal(started(&r, 4)->alloc.gpu_mask, 1);
}

static void test_conservative(void **state) {
        SchedMachine m = machine(1, 2, 2);
        SchedConfig c = SCHED_CONFIG_DEFAULT;
        SchedJob jobs[3];
        SchedResult r;

        /* Conservative: the first shard job takes GPU 0, the second (ending with it) joins
         * it, and the whole-GPU job gets GPU 1. */
        c.policy = &sched_policy_conservative;
        jobs[0] = shard_job(1, 1, 1, 100);
        jobs[1] = shard_job(2, 1, 1, 100);
        jobs[2] = gpu_job(3, 1, 1, 100);
        assert_int_equal(pass(&c, &m, jobs, 3, NOW, &r), 0);
        assert_int_equal(started(&r, 1)->alloc.gpu_mask, 1);
        assert_int_equal(started(&r, 2)->alloc.gpu_mask, 1);
        assert_int_equal(started(&r, 1)->alloc.shards, 1);
        assert_int_equal(started(&r, 3)->alloc.gpu_mask, 2);
        assert_int_equal(started(&r, 3)->alloc.shards, 0);

        /* GPU 0 shared until NOW+100 by a running job: a shard job done by then joins it
         * (nothing planned moves), one that would keep it longer takes GPU 1; a third,
         * short, joins GPU 0 too. The whole-GPU job waits for GPU 0 at NOW+100. */
        {
                SchedJob more[5] = { shard_job(1, 1, 1, 110), shard_job(2, 1, 1, 50), shard_job(3, 1, 1, 500),
                                     gpu_job(4, 1, 1, 100), shard_job(5, 1, 1, 90) };

                run(&more[0], &m, 0, NOW - 10, "0", 1, 1);
                gpus[0].shards = 3;
                assert_int_equal(pass(&c, &m, more, 5, NOW, &r), 0);
                assert_int_equal(started(&r, 2)->alloc.gpu_mask, 1);
                assert_int_equal(started(&r, 3)->alloc.gpu_mask, 2);
                assert_null(started(&r, 4));
                assert_int_equal(waiting(&r, 4)->est_start, NOW + 100);
                assert_int_equal(started(&r, 5)->alloc.gpu_mask, 1);
                assert_int_equal(started(&r, 5)->alloc.shards, 1);
        }
}

/* Random workloads of whole-GPU, shard and CPU jobs run to their walltimes pass after
 * pass, under each policy: a GPU is never held whole and by shards at once, never by two
 * whole holders, its shards in use never exceed its Shards=, a shard job holds one GPU
 * with enough shards, and every job eventually runs. */
static void test_random(void **state) {
        static const SchedPolicyOps *const policies[] = { &sched_policy_easy, &sched_policy_fcfs,
                                                          &sched_policy_conservative };
        enum { N = 60 };
        size_t shared = 0; /* passes that ended with a GPU shared by two jobs or more */

        for (size_t pi = 0; pi < ELEMENTSOF(policies); pi++)
                for (uint64_t seed = 1; seed <= 20; seed++) {
                        SchedMachine m = machine(2, 4, 0);
                        SchedConfig c = SCHED_CONFIG_DEFAULT;
                        static SchedAllocation held[N];
                        SchedJob jobs[N];
                        Rng g = { .s = seed * 7919 };
                        _cleanup_(sched_context_freep) SchedContext *ctx = sched_context_new();
                        uint64_t now = NOW;
                        size_t done = 0;

                        assert_non_null(ctx);
                        c.policy = policies[pi];
                        for (size_t k = 0; k < 4; k++)
                                gpus[k].shards = (uint16_t) rng(&g, 5); /* 0..4 */
                        gpus[0].shards = 4;
                        for (size_t i = 0; i < N; i++) {
                                unsigned kind = (unsigned) rng(&g, 3);
                                uint64_t wall = 10 + rng(&g, 200);

                                jobs[i] = kind == 0   ? shard_job(i + 1, 1 + (unsigned) rng(&g, 3),
                                                                  1 + (unsigned) rng(&g, 4), wall)
                                          : kind == 1 ? gpu_job(i + 1, 1 + (unsigned) rng(&g, 3),
                                                                1 + (unsigned) rng(&g, 2), wall)
                                                      : job_pending(i + 1, i + 1, 1 + (unsigned) rng(&g, 6), wall);
                                jobs[i].submit_time = NOW;
                        }
                        for (int step = 0; step < 400 && done < N; step++, now += 10) {
                                SchedResult r;
                                uint32_t used[4] = {}, holders[4] = {};
                                bool whole[4] = {};

                                for (size_t i = 0; i < N; i++)
                                        if (jobs[i].state == SCHED_JOB_RUNNING &&
                                            jobs[i].start_time + jobs[i].walltime <= now) {
                                                jobs[i].state = SCHED_JOB_DONE;
                                                done++;
                                        }
                                assert_int_equal(sched_pass(ctx, &c, &m, jobs, N, now, &r), 0);
                                for (size_t d = 0; d < r.n_decisions; d++) {
                                        size_t i = r.decisions[d].job_index;

                                        assert_int_equal(r.decisions[d].type, SCHED_DECISION_START);
                                        held[i] = r.decisions[d].alloc;
                                        jobs[i].alloc = &held[i];
                                        jobs[i].state = SCHED_JOB_RUNNING;
                                        jobs[i].start_time = now;
                                }
                                for (size_t i = 0; i < N; i++) {
                                        const SchedAllocation *a = jobs[i].alloc;

                                        if (jobs[i].state != SCHED_JOB_RUNNING)
                                                continue;
                                        if (jobs[i].shards) {
                                                size_t x = (size_t) __builtin_ctzll(a->gpu_mask);

                                                assert_int_equal(__builtin_popcountll(a->gpu_mask), 1);
                                                assert_int_equal(a->shards, jobs[i].shards);
                                                assert_true(gpus[x].shards >= jobs[i].shards);
                                                used[x] += a->shards;
                                                holders[x]++;
                                        } else
                                                for (uint64_t x = a->gpu_mask; x; x &= x - 1) {
                                                        assert_false(whole[__builtin_ctzll(x)]);
                                                        whole[__builtin_ctzll(x)] = true;
                                                }
                                }
                                for (size_t x = 0; x < 4; x++) {
                                        assert_true(used[x] <= gpus[x].shards);
                                        assert_false(whole[x] && used[x] > 0);
                                        shared += holders[x] >= 2;
                                }
                        }
                        /* TooBig ones never run: the rest all did. */
                        for (size_t i = 0; i < N; i++)
                                if (jobs[i].state != SCHED_JOB_DONE) {
                                        bool fits = false;
                                        for (size_t x = 0; x < 4; x++)
                                                fits = fits || gpus[x].shards >= jobs[i].shards;
                                        assert_true(jobs[i].shards > 0 && !fits);
                                }
                }
        /* The workloads do share GPUs (else the checks above prove little). */
        assert_true(shared > 100);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_two_share_one_gpu),
                cmocka_unit_test(test_whole_waits_for_shards),
                cmocka_unit_test(test_shards_wait_for_whole),
                cmocka_unit_test(test_too_big),
                cmocka_unit_test(test_one_gpu_only),
                cmocka_unit_test(test_packing_near_cpus),
                cmocka_unit_test(test_easy_backfill_keeps_reservation),
                cmocka_unit_test(test_easy_backfill_gpu_held_anyway),
                cmocka_unit_test(test_easy_backfill_gpu_free_after),
                cmocka_unit_test(test_conservative),
                cmocka_unit_test(test_random),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
