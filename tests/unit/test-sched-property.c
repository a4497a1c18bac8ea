/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Random workloads (seeded, deterministic) replayed through sched/ with a small event
 * loop, checking after every pass what must hold whatever the policy decides. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched.h"
#include "test-sched-helpers.h"

#define N_SCENARIOS 300
#define MAX_JOBS 64

typedef struct TJob {
        SchedJob j;
        SchedAllocation alloc;
        SchedDep dep;
        uint64_t run, end, release; /* release: when a hold is lifted */
        bool fails, done, cancelled;
        uint64_t resv;              /* last reservation seen, SCHED_TIME_INFINITY none */
} TJob;

typedef struct Scenario {
        unsigned seed;
        const char *policy_name;
        SchedConfig cfg;
        SchedNode nodes[4];
        SchedGpu gpus[8];
        SchedMachine m;
        TJob t[MAX_JOBS];
        size_t n;
        bool features, exact, gpus_on;
} Scenario;

/* GPU scenarios: up to 8 GPUs on the nodes (some of no known node), a third of the jobs
 * asking for 1 to 3 of them, some of one kind, some with enforce-binding; drawn from
 * their own generator so the other scenarios stay as they were. */
static void generate_gpus(Scenario *s, Rng *r) {
        s->m.n_gpus = 1 + rng(r, 8);
        s->m.gpus = s->gpus;
        for (size_t g = 0; g < s->m.n_gpus; g++)
                s->gpus[g] = (SchedGpu) { .node = rng(r, 6) == 0 ? -1 : (int) rng(r, s->m.n_nodes) };
        for (size_t i = 0; i < s->n; i++) {
                SchedJob *j = &s->t[i].j;

                if (rng(r, 3) != 0)
                        continue;
                j->gpus = 1 + (unsigned) rng(r, 3);
                j->gpu_binding = rng(r, 3) == 0;
                j->gpu_allowed = rng(r, 4) == 0 ? UINT64_C(0x55) : 0;
        }
}

static void generate(Scenario *s, Rng *r) {
        size_t n_nodes = 1 + rng(r, 4);
        unsigned cpus = 2 + (unsigned) rng(r, 7), total;
        uint64_t t = 0;

        machine_uniform(s->nodes, n_nodes, cpus, (4 + rng(r, 29)) * GIB, &s->m);
        for (size_t k = 0; k < n_nodes; k++) {
                s->nodes[k].memory = (4 + rng(r, 29)) * GIB;
                s->nodes[k].speed = 1 + (uint32_t) rng(r, 3);
        }
        total = (unsigned) (n_nodes * cpus);

        s->n = 20 + rng(r, MAX_JOBS - 20);
        for (size_t i = 0; i < s->n; i++) {
                TJob *x = &s->t[i];

                t += rng(r, 4) == 0 ? 0 : rng(r, 300);
                *x = (TJob) { .resv = SCHED_TIME_INFINITY };
                x->j = job_pending(i + 1, t, 1 + (unsigned) rng(r, rng(r, 5) == 0 ? total + 2 : MAX(total / 2, 1u)), 10 + rng(r, 2000));
                x->j.memory = rng(r, 3) == 0 ? rng(r, 16) * GIB : 0;
                x->j.exclusive = rng(r, 5) == 0;
                x->run = s->exact ? x->j.walltime : rng(r, x->j.walltime + 1);
                x->fails = rng(r, 4) == 0;
                if (s->features) {
                        if (rng(r, 10) == 0) {
                                x->j.held = true;
                                x->release = t + rng(r, 3000);
                        }
                        if (rng(r, 10) == 0)
                                x->j.begin_time = t + rng(r, 3000);
                        if (i > 0 && rng(r, 7) == 0) {
                                x->dep = (SchedDep) { .job_id = 1 + rng(r, i), .type = (SchedDepType) rng(r, _SCHED_DEP_TYPE_MAX) };
                                x->j.deps = &x->dep;
                                x->j.n_deps = 1;
                        }
                }
        }
}

static SchedDepStatus dep_status(const Scenario *s, uint64_t id) {
        const TJob *d = &s->t[id - 1];

        if (d->cancelled)
                return SCHED_DEP_FINISHED_FAILED;
        if (d->done)
                return d->fails ? SCHED_DEP_FINISHED_FAILED : SCHED_DEP_FINISHED_OK;
        if (d->j.state == SCHED_JOB_RUNNING)
                return SCHED_DEP_STARTED;
        return SCHED_DEP_UNKNOWN;
}

static bool dep_ok(SchedDepType type, SchedDepStatus st) {
        switch (type) {
        case SCHED_DEP_AFTER:
                return st != SCHED_DEP_UNKNOWN;
        case SCHED_DEP_AFTERANY:
                return st == SCHED_DEP_FINISHED_OK || st == SCHED_DEP_FINISHED_FAILED;
        case SCHED_DEP_AFTEROK:
                return st == SCHED_DEP_FINISHED_OK;
        default:
                return st == SCHED_DEP_FINISHED_FAILED;
        }
}

#define CHECK(s, cond, ...)                                                               \
        do {                                                                              \
                if (!(cond)) {                                                            \
                        print_error("seed %u policy %s: ", (s)->seed, (s)->policy_name);   \
                        fail_msg(__VA_ARGS__);                                            \
                }                                                                         \
        } while (0)

static void check_start(const Scenario *s, const TJob *x, const SchedAllocation *a, uint64_t now) {
        const SchedJob *j = &x->j;
        CpuSet machine = {}, on_nodes = {};
        uint64_t mem = 0;

        CHECK(s, now >= j->submit_time && now >= j->begin_time, "job %llu started at %llu before submit/begin",
              (unsigned long long) j->id, (unsigned long long) now);
        CHECK(s, !j->held, "held job %llu started", (unsigned long long) j->id);
        if (j->n_deps > 0)
                CHECK(s, dep_ok(j->deps[0].type, dep_status(s, j->deps[0].job_id)),
                      "job %llu started with an unmet dependency", (unsigned long long) j->id);
        for (size_t k = 0; k < s->m.n_nodes; k++) {
                cpu_set_or(&machine, &s->nodes[k].cpus);
                if (a->node_mask & (UINT64_C(1) << k)) {
                        cpu_set_or(&on_nodes, &s->nodes[k].cpus);
                        mem += a->mem[k];
                } else
                        CHECK(s, a->mem[k] == 0, "memory outside the node mask");
        }
        CpuSet outside = a->cpus;
        cpu_set_andnot(&outside, &on_nodes);
        CHECK(s, cpu_set_is_empty(&outside), "job %llu has CPUs outside its nodes", (unsigned long long) j->id);
        if (j->exclusive)
                CHECK(s, cpu_set_equal(&a->cpus, &on_nodes) && cpu_set_count(&a->cpus) >= j->cpus,
                      "exclusive job %llu does not hold whole nodes", (unsigned long long) j->id);
        else
                CHECK(s, cpu_set_count(&a->cpus) == j->cpus && mem == j->memory,
                      "job %llu got %u CPUs, wanted %u", (unsigned long long) j->id, cpu_set_count(&a->cpus), j->cpus);
        CHECK(s, mem >= j->memory, "job %llu short of memory", (unsigned long long) j->id);

        /* GPUs: what it asked for, of its kinds; exactly that unless exclusive, which
         * holds every GPU of its nodes; under binding CPUs only beside them. */
        CHECK(s, (a->gpu_mask >> s->m.n_gpus) == 0 || s->m.n_gpus == 64, "job %llu has GPUs the machine lacks",
              (unsigned long long) j->id);
        CHECK(s, (unsigned) __builtin_popcountll(a->gpu_mask & (j->gpu_allowed ?: UINT64_MAX)) >= j->gpus,
              "job %llu got too few GPUs", (unsigned long long) j->id);
        if (!j->exclusive)
                CHECK(s, (unsigned) __builtin_popcountll(a->gpu_mask) == j->gpus, "job %llu got %d GPUs, wanted %u",
                      (unsigned long long) j->id, __builtin_popcountll(a->gpu_mask), j->gpus);
        for (size_t g = 0; g < s->m.n_gpus; g++)
                if (j->exclusive && s->gpus[g].node >= 0 && (a->node_mask >> s->gpus[g].node & 1))
                        CHECK(s, a->gpu_mask >> g & 1, "exclusive job %llu lacks GPU %zu of its nodes",
                              (unsigned long long) j->id, g);
        if (j->gpu_binding && j->gpus > 0)
                for (size_t k = 0; k < s->m.n_nodes; k++) {
                        bool near = false;
                        if (!cpu_set_intersects(&a->cpus, &s->nodes[k].cpus))
                                continue;
                        for (size_t g = 0; g < s->m.n_gpus; g++)
                                near = near || ((a->gpu_mask >> g & 1) && (s->gpus[g].node == (int) k || s->gpus[g].node < 0));
                        CHECK(s, near, "job %llu has CPUs on node %zu, none of its GPUs there", (unsigned long long) j->id, k);
                }
}

static void check_running(const Scenario *s) {
        CpuSet used = {};
        uint64_t mem[4] = {}, gpus = 0;
        uint64_t shared_nodes = 0, excl_nodes = 0;

        for (size_t i = 0; i < s->n; i++) {
                const TJob *x = &s->t[i];

                if (x->j.state != SCHED_JOB_RUNNING)
                        continue;
                CHECK(s, !cpu_set_intersects(&used, &x->alloc.cpus), "CPU shared (job %zu)", i + 1);
                CHECK(s, !(gpus & x->alloc.gpu_mask), "GPU shared (job %zu)", i + 1);
                gpus |= x->alloc.gpu_mask;
                cpu_set_or(&used, &x->alloc.cpus);
                for (size_t k = 0; k < s->m.n_nodes; k++)
                        mem[k] += x->alloc.mem[k];
                if (x->j.exclusive) {
                        CHECK(s, !(x->alloc.node_mask & (shared_nodes | excl_nodes)), "exclusive job %zu shares a node", i + 1);
                        excl_nodes |= x->alloc.node_mask;
                } else {
                        CHECK(s, !(x->alloc.node_mask & excl_nodes), "job %zu on an exclusive node", i + 1);
                        shared_nodes |= x->alloc.node_mask;
                }
        }
        for (size_t k = 0; k < s->m.n_nodes; k++)
                CHECK(s, mem[k] <= s->nodes[k].memory, "node %zu memory exceeded", k);
}

static uint64_t next_event(const Scenario *s, uint64_t now) {
        uint64_t t = UINT64_MAX;

        for (size_t i = 0; i < s->n; i++) {
                const TJob *x = &s->t[i];

                if (x->done || x->cancelled)
                        continue;
                if (x->j.state == SCHED_JOB_RUNNING)
                        t = MIN(t, x->end);
                else {
                        if (x->j.submit_time > now)
                                t = MIN(t, x->j.submit_time);
                        if (x->j.held && x->release > now)
                                t = MIN(t, x->release);
                        if (x->j.begin_time > now)
                                t = MIN(t, x->j.begin_time);
                }
        }
        return t;
}

static unsigned debug_seed;
static const SchedPolicyOps *debug_policy;

static void simulate(Scenario *s) {
        _cleanup_(sched_context_freep) SchedContext *ctx = sched_context_new();
        SchedJob view[MAX_JOBS];
        size_t map[MAX_JOBS];
        uint64_t now = 0;
        unsigned passes = 0;

        assert_non_null(ctx);
        for (;;) {
                SchedResult res;
                size_t n = 0;

                for (size_t i = 0; i < s->n; i++) {
                        TJob *x = &s->t[i];

                        if (x->j.state == SCHED_JOB_RUNNING && x->end <= now) {
                                x->j.state = SCHED_JOB_DONE;
                                x->done = true;
                        }
                        if (x->j.held && x->release <= now)
                                x->j.held = false;
                }
                for (size_t i = 0; i < s->n; i++) {
                        TJob *x = &s->t[i];

                        if (x->done || x->cancelled || x->j.submit_time > now)
                                continue;
                        if (x->j.n_deps > 0)
                                x->dep.status = dep_status(s, x->dep.job_id);
                        map[n] = i;
                        view[n++] = x->j;
                }

                assert_int_equal(sched_pass(ctx, &s->cfg, &s->m, view, n, now, &res), 0);
                passes++;
                if (debug_seed == s->seed && s->cfg.policy == debug_policy) {
                        print_message("t=%llu\n", (unsigned long long) now);
                        for (size_t k = 0; k < s->m.n_nodes; k++)
                                print_message("  node %zu: %u CPUs, %llu G\n", k, cpu_set_count(&s->nodes[k].cpus),
                                              (unsigned long long) (s->nodes[k].memory / GIB));
                        for (size_t g = 0; g < s->m.n_gpus; g++)
                                print_message("  gpu %zu on node %d\n", g, s->gpus[g].node);
                        for (size_t i = 0; i < n; i++)
                                if (view[i].state == SCHED_JOB_RUNNING) {
                                        char *c = cpu_set_format(&view[i].alloc->cpus);
                                        print_message("  run %llu start=%llu wall=%llu end=%llu on %s mem=%llu/%llu\n", (unsigned long long) view[i].id,
                                                      (unsigned long long) view[i].start_time, (unsigned long long) view[i].walltime,
                                                      (unsigned long long) s->t[map[i]].end, c,
                                                      (unsigned long long) (view[i].alloc->mem[0] / GIB), (unsigned long long) (view[i].alloc->mem[1] / GIB));
                                        free(c);
                                }
                        for (size_t i = 0; i < res.n_decisions; i++) {
                                const SchedJob *j = &view[res.decisions[i].job_index];
                                char *c = cpu_set_format(&res.decisions[i].alloc.cpus);
                                print_message("  start %llu cpus=%u excl=%d mem=%llu wall=%llu on %s mask=%llx\n", (unsigned long long) j->id, j->cpus, j->exclusive,
                                              (unsigned long long) (j->memory / GIB), (unsigned long long) j->walltime, c, (unsigned long long) res.decisions[i].alloc.node_mask);
                                free(c);
                        }
                        for (size_t i = 0; i < res.n_waiting; i++) {
                                const SchedJob *j = &view[res.waiting[i].job_index];
                                print_message("  wait %llu cpus=%u gpus=%u/%llx%s excl=%d mem=%llu wall=%llu %s est=%llu\n", (unsigned long long) j->id, j->cpus,
                                              j->gpus, (unsigned long long) j->gpu_allowed, j->gpu_binding ? " bound" : "", j->exclusive,
                                              (unsigned long long) (j->memory / GIB), (unsigned long long) j->walltime,
                                              sched_reason_to_string(res.waiting[i].reason), (unsigned long long) res.waiting[i].est_start);
                        }
                }

                for (size_t i = 0; i < res.n_decisions; i++) {
                        TJob *x = &s->t[map[res.decisions[i].job_index]];

                        assert_int_equal(res.decisions[i].type, SCHED_DECISION_START);
                        assert_true(x->j.state == SCHED_JOB_PENDING);
                        check_start(s, x, &res.decisions[i].alloc, now);
                        if (x->resv != SCHED_TIME_INFINITY)
                                CHECK(s, now <= x->resv, "job %llu started at %llu after its reservation %llu",
                                      (unsigned long long) x->j.id, (unsigned long long) now, (unsigned long long) x->resv);
                        x->alloc = res.decisions[i].alloc;
                        x->j.alloc = &x->alloc;
                        x->j.state = SCHED_JOB_RUNNING;
                        x->j.start_time = now;
                        x->end = now + x->run;
                }
                check_running(s);

                /* Estimates and reservations are never in the past; FCFS's follow priority
                 * order, as its starts do. */
                uint64_t last_est = 0;
                for (size_t i = 0; i < res.n_waiting; i++) {
                        const SchedWait *w = &res.waiting[i];
                        bool queued = w->reason == SCHED_REASON_RESOURCES || w->reason == SCHED_REASON_PRIORITY;

                        if (w->est_start != SCHED_TIME_INFINITY)
                                CHECK(s, w->est_start >= now, "job %llu estimated at %llu, before now %llu",
                                      (unsigned long long) w->job_id, (unsigned long long) w->est_start,
                                      (unsigned long long) now);
                        if (s->cfg.policy == &sched_policy_fcfs && queued && w->est_start != SCHED_TIME_INFINITY) {
                                CHECK(s, w->est_start >= last_est, "fcfs: job %llu estimated at %llu, before %llu above it",
                                      (unsigned long long) w->job_id, (unsigned long long) w->est_start,
                                      (unsigned long long) last_est);
                                last_est = w->est_start;
                        }
                }

                for (size_t i = 0; i < res.n_waiting; i++) {
                        const SchedWait *w = &res.waiting[i];
                        TJob *x = &s->t[map[w->job_index]];
                        /* Conservative: every reservation, on any machine; EASY: the top job's. */
                        bool tracked = s->cfg.policy == &sched_policy_conservative ?
                                       w->est_start != SCHED_TIME_INFINITY &&
                                       w->reason != SCHED_REASON_BEGIN_TIME :
                                       w->reason == SCHED_REASON_RESOURCES;

                        if (w->reason == SCHED_REASON_TOO_BIG || w->reason == SCHED_REASON_DEPENDENCY_NEVER_SATISFIED) {
                                /* What the daemon would do. */
                                x->cancelled = true;
                                x->j.state = SCHED_JOB_DONE;
                                continue;
                        }
                        if (s->exact && !s->features && tracked) {
                                CHECK(s, w->est_start >= now, "reservation in the past");
                                CHECK(s, x->resv == SCHED_TIME_INFINITY || w->est_start <= x->resv,
                                      "job %llu reservation moved from %llu to %llu", (unsigned long long) x->j.id,
                                      (unsigned long long) x->resv, (unsigned long long) w->est_start);
                                x->resv = w->est_start;
                        }
                }

                now = next_event(s, now);
                if (now == UINT64_MAX)
                        break;
                CHECK(s, passes < 100000, "runaway");
        }

        for (size_t i = 0; i < s->n; i++)
                CHECK(s, s->t[i].done || s->t[i].cancelled, "job %zu never ran", i + 1);

        if (s->cfg.policy == &sched_policy_fcfs && !s->features)
                /* Priority FCFS: with one queue, starts follow submission order. */
                for (size_t i = 1; i < s->n; i++) {
                        if (s->t[i].cancelled)
                                continue;
                        for (size_t k = 0; k < i; k++)
                                if (!s->t[k].cancelled)
                                        CHECK(s, s->t[k].j.start_time <= s->t[i].j.start_time,
                                              "job %zu started before earlier job %zu", i + 1, k + 1);
                }
}

static void run_scenarios(bool exact, bool features, bool gpus) {
        static const struct {
                const SchedPolicyOps *policy;
                SchedBackfillOrder order;
                const char *name;
        } policies[] = {
                { &sched_policy_fcfs, SCHED_BACKFILL_PRIORITY, "fcfs" },
                { &sched_policy_easy, SCHED_BACKFILL_PRIORITY, "easy" },
                { &sched_policy_easy, SCHED_BACKFILL_SJF, "easy/sjf" },
                { &sched_policy_conservative, SCHED_BACKFILL_PRIORITY, "conservative" },
        };

        for (unsigned seed = 1; seed <= N_SCENARIOS; seed++)
                for (size_t p = 0; p < ELEMENTSOF(policies); p++) {
                        Scenario s = {
                                .seed = seed,
                                .policy_name = policies[p].name,
                                .cfg = SCHED_CONFIG_DEFAULT,
                                .exact = exact,
                                .features = features,
                                .gpus_on = gpus,
                        };
                        Rng r = { .s = UINT64_C(0x9E3779B97F4A7C15) * seed + exact * 7 + features * 13 };

                        s.cfg.policy = policies[p].policy;
                        s.cfg.backfill_order = policies[p].order;
                        generate(&s, &r);
                        if (gpus) {
                                Rng rg = { .s = UINT64_C(0xD1B54A32D192ED03) * seed + exact };
                                generate_gpus(&s, &rg);
                        }
                        simulate(&s);
                }
}

/* Jobs run exactly to their walltime: reservations must hold, FCFS keeps order. */
static void test_exact(void **state) {
        run_scenarios(true, false, false);
}

/* The same with GPUs: never one to two jobs, binding and exclusive nodes honoured, and
 * with exact run times every reservation holds. */
static void test_gpus_exact(void **state) {
        run_scenarios(true, false, true);
}

static void test_gpus_early(void **state) {
        run_scenarios(false, false, true);
}

/* Jobs end early: no reservation promise, but every invariant of placement holds. */
static void test_early(void **state) {
        run_scenarios(false, false, false);
}

/* Holds, begin times and dependencies: never started early, never starved. */
static void test_features(void **state) {
        run_scenarios(false, true, false);
}

int main(void) {
        const char *e = getenv("SCHED_TEST_DEBUG_SEED");

        /* SCHED_TEST_DEBUG_SEED=<seed>:<policy> prints that scenario's passes. */
        if (e) {
                debug_seed = (unsigned) atoi(e);
                debug_policy = strchr(e, ':') ? sched_policy_from_name(strchr(e, ':') + 1) : NULL;
        }
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_exact),
                cmocka_unit_test(test_early),
                cmocka_unit_test(test_features),
                cmocka_unit_test(test_gpus_exact),
                cmocka_unit_test(test_gpus_early),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
