/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One full scheduling pass (multifactor priority + EASY over the whole queue) on a
 * 2-NUMA-node, 128-CPU model, with 1,000 / 10,000 / 100,000 waiting jobs; and on a
 * 1,024-CPU model with 1,000 jobs running and 100,000 waiting, with and without
 * preemption (express preempts normal). Prints the median of several passes, each started
 * from what the last one decided, as corrald's are. Not run by `meson test`.
 *   bench-sched            all of it
 *   bench-sched preempt    the preemption figures only
 *   bench-sched easy [N]   EASY alone at 10,000, 100,000 and 1,000,000 waiting (or N):
 *                          how the pass grows with the queue
 *   bench-sched pass [N [WHICH]]  the full pass's figures at 100,000 waiting (or N): EASY,
 *                          FCFS, EASY with preemption and without, EASY with 8 GPUs; or
 *                          WHICH alone (see main())
 * The full run ends with the first model again with 8 GPUs (GPU jobs among the waiting).
 * BENCH_CPU=1 times each pass in the thread's CPU time instead of the wall clock: steadier
 * on a shared machine, blind to waits (the pass has none). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench-util.h"
#include "sched.h"

static uint64_t rng_state = 42;
static double last_median; /* of the last bench(), in seconds */
static uint64_t rnd(uint64_t n) {
        return rng_next(&rng_state) % n;
}

#define GIB (UINT64_C(1) << 30)
#ifndef REPEAT
#define REPEAT 9
#endif

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

/* With n_gpus > 0, bench_gpus(): 2 nodes, n_gpus GPUs split between them, a third of
 * the waiting jobs asking for 1 to 4 GPUs (a tenth of those with enforce-binding), and
 * the running jobs holding one GPU each while there are GPUs. */
static unsigned bench_n_gpus;
/* false: the machine has its GPUs (and the running jobs theirs), no waiting job asks for
 * any: the same jobs as without GPUs, what the GPUs alone cost a pass. */
static bool bench_gpu_jobs = true;
/* Each GPU's shards (Shards=), and half the jobs that ask for GPUs asking for 1 or 2 shards
 * of one instead (by id, so the jobs are otherwise those of the 8-GPU row); 0: none. */
static uint16_t bench_shards;
/* The GPUs NVLinked in pairs (0-1, 2-3, ...), as SchedGpu.links. */
static bool bench_links;
/* GPUs 0 and 4 (one per node) in MIG mode, each with 7 MIG devices (indexes 8-21, on its
 * node) scheduled as GPUs; half the jobs that ask for GPUs (by id) asking for one MIG
 * device by its type (gpu_allowed), the others as before; no running job holds 0 or 4. */
static bool bench_mig;
#define BENCH_MIG_DEVICES 14

static int bench(const char *label, const SchedConfig *cfg, size_t n_waiting) {
        SchedNode nodes[2] = {};
        SchedGpu gpus[SCHED_GPUS_MAX] = {};
        SchedMachine m = { .nodes = nodes, .n_nodes = 2, .gpus = gpus, .n_gpus = bench_n_gpus };
        const unsigned running_cpus = 120; /* CPUs are never shared: at most 128 running */
        size_t n_running = running_cpus, n = n_waiting + n_running;
        SchedJob *jobs = calloc(n, sizeof(SchedJob));
        SchedAllocation *allocs = calloc(n_running, sizeof(SchedAllocation));
        SchedAllocation *started = calloc(128, sizeof(SchedAllocation)); /* at most one per CPU */
        size_t n_started = 0;
        SchedContext *ctx = sched_context_new();
        double t[REPEAT], first;
        SchedResult res = {};
        const uint64_t now = 1000000;

        if (!jobs || !allocs || !started || !ctx)
                return -ENOMEM;

        for (unsigned k = 0; k < 2; k++) {
                for (unsigned c = 0; c < 64; c++)
                        cpu_set_add(&nodes[k].cpus, k * 64 + c);
                nodes[k].memory = 256 * GIB;
                nodes[k].speed = 1;
        }

        /* One CPU and 1G each, ending over the next day. */
        for (size_t i = 0; i < n_running; i++) {
                unsigned cpu = (unsigned) i, k = cpu / 64;

                cpu_set_add(&allocs[i].cpus, cpu);
                allocs[i].node_mask = 1u << k;
                allocs[i].mem[k] = GIB;
                /* Drawn one by one: the order an initializer's expressions are evaluated
                 * in is unspecified (and follows the struct's layout with gcc). */
                uint64_t walltime = 3600 + rnd(86400);
                uint32_t user = (uint32_t) rnd(200), project = 1 + (uint32_t) rnd(10);
                uint64_t start = now - rnd(3600);

                jobs[i] = (SchedJob) {
                        .id = i + 1, .state = SCHED_JOB_RUNNING, .cpus = 1, .memory = GIB,
                        .user_id = user, .project_id = project,
                        .submit_time = now - 100000, .start_time = start,
                        .walltime = walltime, .alloc = &allocs[i],
                };
                /* GPU g on node g * 2 / n; the first running jobs of each node hold them. */
                if (bench_n_gpus > 0 && (cpu % 64) < bench_n_gpus / 2 && !(bench_mig && cpu % 64 == 0)) {
                        unsigned g = k * (bench_n_gpus / 2) + cpu % 64;
                        allocs[i].gpu_mask = UINT64_C(1) << g;
                        jobs[i].gpus = 1;
                }
        }
        for (unsigned g = 0; g < bench_n_gpus; g++) {
                gpus[g].node = (int) (g * 2 / bench_n_gpus);
                gpus[g].shards = bench_shards;
                if (bench_links)
                        gpus[g].links = UINT64_C(1) << (g ^ 1);
        }
        if (bench_mig) {
                gpus[0].offline = gpus[bench_n_gpus / 2].offline = true;
                for (unsigned g = bench_n_gpus; g < bench_n_gpus + BENCH_MIG_DEVICES; g++)
                        gpus[g].node = g < bench_n_gpus + BENCH_MIG_DEVICES / 2 ? 0 : 1;
                m.n_gpus = bench_n_gpus + BENCH_MIG_DEVICES;
        }
        for (size_t i = n_running; i < n; i++) {
                int32_t queue_priority = (int32_t) rnd(3);
                uint64_t submit = now - rnd(500000);
                unsigned cpus = 1 + (unsigned) (rnd(4) == 0 ? rnd(128) : rnd(16));
                uint64_t memory = rnd(8) * GIB, walltime = 60 + rnd(2 * 86400);
                bool exclusive = rnd(20) == 0;
                uint32_t user = (uint32_t) rnd(200), project = 1 + (uint32_t) rnd(10);

                jobs[i] = (SchedJob) {
                        .id = i + 1, .state = SCHED_JOB_PENDING,
                        .user_id = user, .project_id = project,
                        .queue_priority = queue_priority,
                        .submit_time = submit,
                        .cpus = cpus,
                        .memory = memory,
                        .walltime = walltime,
                        .exclusive = exclusive,
                };
        }
        if (bench_n_gpus > 0 && bench_gpu_jobs)
                for (size_t i = n_running; i < n; i++)
                        if (rnd(3) == 0) {
                                jobs[i].gpus = 1 + (unsigned) rnd(4);
                                jobs[i].gpu_binding = rnd(10) == 0;
                                jobs[i].cpus = 1 + (unsigned) rnd(16);
                                if (bench_shards > 0 && jobs[i].id % 2 == 0 && !jobs[i].exclusive) {
                                        jobs[i].shards = (uint16_t) (1 + jobs[i].id % 4 / 2);
                                        jobs[i].gpus = 1;
                                }
                                if (bench_mig && jobs[i].id % 2 == 0) {
                                        jobs[i].gpus = 1;
                                        jobs[i].gpu_allowed = ((UINT64_C(1) << BENCH_MIG_DEVICES) - 1) << bench_n_gpus;
                                }
                        }

        /* Each pass's starts are applied before the next, as the daemon does: the later
         * passes show the steady state (for conservative: reservations remembered). */
        for (int i = 0; i < REPEAT; i++) {
                double t0 = now_sec();
                if (sched_pass(ctx, cfg, &m, jobs, n, now + (uint64_t) i, &res) < 0)
                        return -EIO;
                t[i] = now_sec() - t0;
                for (size_t d = 0; d < res.n_decisions && n_started < 128; d++) {
                        SchedJob *j = &jobs[res.decisions[d].job_index];

                        started[n_started] = res.decisions[d].alloc;
                        j->state = SCHED_JOB_RUNNING;
                        j->start_time = now + (uint64_t) i;
                        j->alloc = &started[n_started++];
                }
        }
        first = t[0];
        qsort(t, REPEAT, sizeof(double), cmp_double);
        last_median = t[REPEAT / 2];
        printf("%-28s waiting %7zu running %4zu: median %8.3f ms/pass (min %.3f, max %.3f, first %.3f), %zu started in all\n",
               label, n_waiting, n_running, t[REPEAT / 2] * 1e3, t[0] * 1e3, t[REPEAT - 1] * 1e3, first * 1e3,
               n_started);

        sched_context_free(ctx);
        free(started);
        free(allocs);
        free(jobs);
        return 0;
}

/* 1,000 normal jobs of one CPU run on 1,024 CPUs; a third of the 100,000 waiting jobs
 * are express (short, preempting normal). The decisions of each pass are applied before
 * the next, suspensions and resumptions included. */
static int bench_preempt(const char *label, bool preempt, size_t n_waiting) {
        SchedNode nodes[2] = {};
        SchedMachine m = { .nodes = nodes, .n_nodes = 2 };
        const size_t n_running = 1000, max_started = 4096;
        size_t n = n_waiting + n_running, n_started = 0, n_suspend = 0, n_resume = 0, n_start = 0;
        SchedJob *jobs = calloc(n, sizeof(SchedJob));
        SchedAllocation *allocs = calloc(n_running + max_started, sizeof(SchedAllocation));
        SchedContext *ctx = sched_context_new();
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        double t[REPEAT], first;
        SchedResult res = {};
        const uint64_t now = 1000000;

        if (!jobs || !allocs || !ctx)
                return -ENOMEM;
        cfg.preempt.enabled = preempt;
        for (unsigned k = 0; k < 2; k++) {
                for (unsigned c = 0; c < 512; c++)
                        cpu_set_add(&nodes[k].cpus, k * 512 + c);
                nodes[k].memory = 2048 * GIB;
                nodes[k].speed = 1;
        }
        for (size_t i = 0; i < n_running; i++) {
                unsigned cpu = (unsigned) i, k = cpu / 512;

                cpu_set_add(&allocs[i].cpus, cpu);
                allocs[i].node_mask = 1u << k;
                allocs[i].mem[k] = GIB;
                uint64_t walltime = 3600 + rnd(86400);
                uint32_t user = (uint32_t) rnd(200);
                uint64_t start = now - rnd(3600);

                jobs[i] = (SchedJob) {
                        .id = i + 1, .state = SCHED_JOB_RUNNING, .cpus = 1, .memory = GIB,
                        .queue_id = 1, .queue_priority = 1, .preemptable = true,
                        .user_id = user,
                        .submit_time = now - 100000, .start_time = start,
                        .walltime = walltime, .alloc = &allocs[i],
                };
        }
        for (size_t i = n_running; i < n; i++) {
                bool express = rnd(3) == 0;
                uint64_t submit = now - rnd(500000);
                unsigned cpus = 1 + (unsigned) rnd(express ? 8 : 64);
                uint64_t memory = rnd(4) * GIB, walltime = express ? 60 + rnd(600) : 60 + rnd(2 * 86400);
                uint32_t user = (uint32_t) rnd(200);

                jobs[i] = (SchedJob) {
                        .id = i + 1, .state = SCHED_JOB_PENDING,
                        .queue_id = express ? 0 : 1,
                        .queue_priority = express ? 2 : 1,
                        .preempts = express ? UINT64_C(1) << 1 : 0,
                        .preemptable = !express,
                        .user_id = user,
                        .submit_time = submit,
                        .cpus = cpus,
                        .memory = memory,
                        .walltime = walltime,
                };
        }

        for (int i = 0; i < REPEAT; i++) {
                double t0 = now_sec();
                if (sched_pass(ctx, &cfg, &m, jobs, n, now + (uint64_t) i, &res) < 0)
                        return -EIO;
                t[i] = now_sec() - t0;
                for (size_t d = 0; d < res.n_decisions; d++) {
                        const SchedDecision *x = &res.decisions[d];
                        SchedJob *j = &jobs[x->job_index];

                        if (x->type == SCHED_DECISION_SUSPEND) {
                                j->state = SCHED_JOB_SUSPENDED;
                                j->preempted = true;
                                n_suspend++;
                                continue;
                        }
                        if (n_started >= max_started)
                                continue;
                        allocs[n_running + n_started] = x->alloc;
                        j->alloc = &allocs[n_running + n_started++];
                        if (x->type == SCHED_DECISION_RESUME) {
                                j->preempted = false;
                                j->last_resume_time = now + (uint64_t) i;
                                n_resume++;
                        } else {
                                j->start_time = now + (uint64_t) i;
                                n_start++;
                        }
                        j->state = SCHED_JOB_RUNNING;
                }
        }
        first = t[0];
        qsort(t, REPEAT, sizeof(double), cmp_double);
        printf("%-28s waiting %7zu running %4zu: median %8.3f ms/pass (min %.3f, max %.3f, first %.3f); "
               "%zu started, %zu suspended, %zu resumed in all\n",
               label, n_waiting, n_running, t[REPEAT / 2] * 1e3, t[0] * 1e3, t[REPEAT - 1] * 1e3, first * 1e3,
               n_start, n_suspend, n_resume);
        sched_context_free(ctx);
        free(allocs);
        free(jobs);
        return 0;
}

int main(int argc, char **argv) {
        static const size_t sizes[] = { 1000, 10000, 100000 };
        /* "preempt": only the preemption figures; "easy": only EASY in priority order, at
         * 10,000, 100,000 and 1,000,000 waiting jobs (is the pass still n log n?). */
        bool only_preempt = argc > 1 && streq(argv[1], "preempt");

        if (argc > 1 && streq(argv[1], "pass")) {
                SchedConfig easy = SCHED_CONFIG_DEFAULT, fcfs = SCHED_CONFIG_DEFAULT;
                size_t n = argc > 2 ? (size_t) strtoull(argv[2], NULL, 10) : 100000;
                /* "pass N WHICH": that one alone (easy, fcfs, nopreempt, preempt, gpus,
                 * gpus-links, gpus-shards, gpus-mig), to
                 * profile; "gpus0": the 8 GPUs and the jobs of "easy" (each alone draws
                 * the same jobs), none asking for GPUs. */
                const char *which = argc > 3 ? argv[3] : NULL;
#define WANT(x) (!which || streq(which, x))

                fcfs.policy = &sched_policy_fcfs;
                if ((WANT("easy") && bench("easy, priority order", &easy, n) < 0) ||
                    (WANT("fcfs") && bench("fcfs", &fcfs, n) < 0) ||
                    (WANT("nopreempt") && bench_preempt("easy, no preemption", false, n) < 0) ||
                    (WANT("preempt") && bench_preempt("easy, preemption", true, n) < 0))
                        return EXIT_FAILURE;
                bench_n_gpus = 8;
                if (WANT("gpus") && bench("easy, 8 GPUs", &easy, n) < 0)
                        return EXIT_FAILURE;
                bench_links = true;
                if (WANT("gpus-links") && bench("easy, 8 GPUs, NVLink pairs", &easy, n) < 0)
                        return EXIT_FAILURE;
                bench_links = false;
                bench_shards = 4;
                if (WANT("gpus-shards") && bench("easy, 8 GPUs, 4 shards each", &easy, n) < 0)
                        return EXIT_FAILURE;
                bench_shards = 0;
                bench_mig = true;
                if (WANT("gpus-mig") && bench("easy, 8 GPUs, 2 in MIG (7 each)", &easy, n) < 0)
                        return EXIT_FAILURE;
                bench_mig = false;
                bench_gpu_jobs = false;
                if (which && streq(which, "gpus0") && bench("easy, 8 GPUs, no GPU jobs", &easy, n) < 0)
                        return EXIT_FAILURE;
#undef WANT
                return EXIT_SUCCESS;
        }

        if (argc > 1 && streq(argv[1], "easy")) {
                SchedConfig cfg = SCHED_CONFIG_DEFAULT, limited = SCHED_CONFIG_DEFAULT;
                SchedProject projects[10];
                /* "easy N": that size alone, to profile. */
                size_t only = argc > 2 ? (size_t) strtoull(argv[2], NULL, 10) : 0;
                double prev = 0;
                for (size_t n = only ?: 10000; n <= (only ?: 1000000); n *= 10) {
                        if (bench("easy, priority order", &cfg, n) < 0)
                                return EXIT_FAILURE;
                        /* n log n would be a little over 10x per step; n^2 100x. */
                        if (prev > 0)
                                printf("    %zux the jobs: %.1fx the time\n", (size_t) 10, last_median / prev);
                        prev = last_median;
                }
                /* The same with ten projects that limit their members (projects.d). */
                for (uint32_t k = 0; k < 10; k++)
                        projects[k] = (SchedProject) {
                                .id = k + 1,
                                .total = { .max_cpus = 64, .max_running_jobs = 100 },
                                .per_user = { .max_running_jobs = 4, .max_idle_jobs = 8 },
                        };
                limited.projects = projects;
                limited.n_projects = 10;
                for (size_t n = only ?: 10000; n <= (only ?: 100000); n *= 10)
                        if (bench("easy, project limits", &limited, n) < 0)
                                return EXIT_FAILURE;
                return EXIT_SUCCESS;
        }
        SchedConfig easy = SCHED_CONFIG_DEFAULT, sjf = SCHED_CONFIG_DEFAULT, fcfs = SCHED_CONFIG_DEFAULT,
                    cons = SCHED_CONFIG_DEFAULT;

        sjf.backfill_order = SCHED_BACKFILL_SJF;
        fcfs.policy = &sched_policy_fcfs;
        cons.policy = &sched_policy_conservative;
        for (size_t i = 0; i < ELEMENTSOF(sizes) && !only_preempt; i++) {
                if (bench("easy, priority order", &easy, sizes[i]) < 0 ||
                    bench("easy, sjf order", &sjf, sizes[i]) < 0 ||
                    bench("fcfs", &fcfs, sizes[i]) < 0)
                        return EXIT_FAILURE;
                /* A reservation for every job: the first pass plans them all (queue x
                 * profile), later ones keep what nothing freed. Meant for queues of
                 * thousands, not a hundred thousand. */
                if (sizes[i] <= 10000 && bench("conservative", &cons, sizes[i]) < 0)
                        return EXIT_FAILURE;
        }
        if (bench_preempt("easy, no preemption", false, 100000) < 0 ||
            bench_preempt("easy, preemption", true, 100000) < 0)
                return EXIT_FAILURE;
        /* The same model with 8 GPUs (4 a node), a third of the waiting jobs asking for
         * some: what GPU placement, GPU reservations and the GPU profile cost. */
        bench_n_gpus = 8;
        for (size_t i = 0; i < ELEMENTSOF(sizes) && !only_preempt; i++) {
                if (bench("easy, 8 GPUs", &easy, sizes[i]) < 0 || bench("fcfs, 8 GPUs", &fcfs, sizes[i]) < 0)
                        return EXIT_FAILURE;
                if (sizes[i] <= 10000 && bench("conservative, 8 GPUs", &cons, sizes[i]) < 0)
                        return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}
