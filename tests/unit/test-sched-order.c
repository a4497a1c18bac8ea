/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pass's ordering: the natural merge sort of sched/sort.h against a plain stable
 * reference on inputs of every shape, and a pass that starts from the last pass's order
 * (a kept context) deciding exactly what a fresh context decides, over queues that change
 * between passes (jobs come, start, end, priorities move). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "sched.h"
#include "macro.h"
#include "sort.h"
#include "test-sched-helpers.h"

/* key ties are common; pos says where an entry came from, to check stability. */
typedef struct Entry {
        uint32_t key, pos;
} Entry;

static inline bool entry_less(const void *ctx, const Entry *a, const Entry *b) {
        return a->key < b->key;
}
DEFINE_MERGE_SORT(sort_entries, Entry, entry_less);

static int cmp_stable(const void *x, const void *y) {
        const Entry *a = x, *b = y;

        if (a->key != b->key)
                return a->key < b->key ? -1 : 1;
        return a->pos < b->pos ? -1 : a->pos > b->pos;
}

enum { SHAPE_RANDOM, SHAPE_SORTED, SHAPE_REVERSED, SHAPE_SORTED_TAIL, SHAPE_FEW_SWAPS, SHAPE_EQUAL,
       SHAPE_RUNS, SHAPE_SAWTOOTH, _SHAPE_MAX };

static void fill(Entry *a, size_t n, int shape, Rng *r) {
        uint32_t range = 1 + (uint32_t) rng(r, 2 * n + 1);

        for (size_t i = 0; i < n; i++)
                a[i].key = (uint32_t) rng(r, range);
        switch (shape) {
        case SHAPE_SORTED:
        case SHAPE_SORTED_TAIL:
        case SHAPE_FEW_SWAPS:
        case SHAPE_REVERSED: {
                size_t tail = shape == SHAPE_SORTED_TAIL ? MIN(n, (size_t) 40) : 0;
                size_t sorted = n - (tail > 0 ? rng(r, tail + 1) : 0);
                qsort(a, sorted, sizeof(Entry), cmp_stable);
                if (shape == SHAPE_REVERSED)
                        for (size_t i = 0; i < n / 2; i++)
                                SWAP_TWO(a[i], a[n - 1 - i]);
                if (shape == SHAPE_FEW_SWAPS && n > 1)
                        for (size_t k = 0, m = 1 + rng(r, 5); k < m; k++) {
                                size_t x = rng(r, n), y = rng(r, n);
                                SWAP_TWO(a[x], a[y]);
                        }
                break;
        }
        case SHAPE_EQUAL:
                for (size_t i = 0; i < n; i++)
                        a[i].key = 7;
                break;
        case SHAPE_RUNS:
                /* Ordered runs of random lengths, as a queue of merged arrays looks. */
                for (size_t lo = 0; lo < n;) {
                        size_t want = 1 + rng(r, 300), len = MIN(n - lo, want);
                        qsort(a + lo, len, sizeof(Entry), cmp_stable);
                        lo += len;
                }
                break;
        case SHAPE_SAWTOOTH:
                for (size_t i = 0; i < n; i++)
                        a[i].key = (uint32_t) (i % 37);
                break;
        }
        for (size_t i = 0; i < n; i++)
                a[i].pos = (uint32_t) i;
}

static void test_sort_against_reference(void **state) {
        static const size_t sizes[] = { 0, 1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 4097, 30000 };
        Rng r = { 12345 };

        for (size_t s = 0; s < ELEMENTSOF(sizes); s++)
                for (int shape = 0; shape < _SHAPE_MAX; shape++)
                        for (int rep = 0; rep < (sizes[s] > 1000 ? 3 : 20); rep++) {
                                size_t n = sizes[s];
                                Entry *a = calloc(MAX(n, (size_t) 1), sizeof(Entry));
                                Entry *ref = calloc(MAX(n, (size_t) 1), sizeof(Entry));
                                Entry *tmp = calloc(MAX(n, (size_t) 1), sizeof(Entry));
                                bool moved, in_order = true;

                                assert_non_null(a);
                                assert_non_null(ref);
                                assert_non_null(tmp);
                                fill(a, n, shape, &r);
                                memcpy(ref, a, n * sizeof(Entry));
                                for (size_t i = 1; i < n; i++)
                                        if (a[i].key < a[i - 1].key)
                                                in_order = false;
                                qsort(ref, n, sizeof(Entry), cmp_stable);
                                moved = sort_entries(a, tmp, n, NULL);
                                assert_memory_equal(a, ref, n * sizeof(Entry));
                                assert_int_equal(moved, !in_order);
                                free(a);
                                free(ref);
                                free(tmp);
                        }
}

/* The queue of a kept context against a fresh one each pass. */
#define N_JOBS 3000
#define N_PASSES 40

static void compare_results(const SchedResult *a, const SchedResult *b) {
        assert_int_equal(a->n_decisions, b->n_decisions);
        for (size_t i = 0; i < a->n_decisions; i++) {
                assert_int_equal(a->decisions[i].type, b->decisions[i].type);
                assert_int_equal(a->decisions[i].job_index, b->decisions[i].job_index);
        }
        assert_int_equal(a->n_waiting, b->n_waiting);
        for (size_t i = 0; i < a->n_waiting; i++) {
                assert_int_equal(a->waiting[i].job_id, b->waiting[i].job_id);
                assert_int_equal(a->waiting[i].reason, b->waiting[i].reason);
                assert_int_equal(a->waiting[i].est_start, b->waiting[i].est_start);
                assert_true(a->waiting[i].priority == b->waiting[i].priority);
        }
}

/* kept: one context for all passes; fresh: a new one each pass (unless the policy keeps
 * state on purpose, conservative's reservations); trimmed: one context trimmed after
 * every pass (sched_context_trim(), what corrald does once passes stop). All decide alike. */
static void run_kept_against_fresh(const SchedConfig *cfg, bool by_id, uint64_t seed, bool against_fresh) {
        SchedNode nodes[2];
        SchedMachine m;
        SchedJob *jobs = calloc(N_JOBS, sizeof(SchedJob));
        SchedAllocation *allocs = calloc(N_JOBS, sizeof(SchedAllocation));
        SchedContext *kept = sched_context_new(), *trimmed = sched_context_new();
        Rng r = { seed };
        uint64_t now = 1000000, next_id = 1;
        size_t n = 0;

        assert_non_null(jobs);
        assert_non_null(allocs);
        assert_non_null(kept);
        assert_non_null(trimmed);
        machine_uniform(nodes, 2, 16, 64 * GIB, &m);

        for (int pass = 0; pass < N_PASSES; pass++) {
                SchedContext *fresh = sched_context_new();
                SchedResult a, b, c;

                /* Newcomers, some with ties in submission time and priority. */
                for (size_t k = 0, add = rng(&r, 200); k < add && n < N_JOBS; k++)
                        jobs[n++] = (SchedJob) {
                                .id = next_id++,
                                .state = SCHED_JOB_PENDING,
                                .user_id = (uint32_t) rng(&r, 20),
                                .project_id = 1 + (uint32_t) rng(&r, 4),
                                .queue_priority = (int32_t) rng(&r, 3),
                                .fairshare = (double) rng(&r, 4) * 250000.0,
                                .submit_time = now - rng(&r, 3) * 100,
                                .cpus = 1 + (unsigned) rng(&r, 8),
                                .memory = rng(&r, 4) * GIB,
                                .walltime = 60 + rng(&r, 7200),
                                .held = rng(&r, 30) == 0,
                        };
                /* Without ascending ids, the kept order must not be used, nor matter. */
                if (!by_id && n > 2) {
                        size_t x = rng(&r, n), y = rng(&r, n);
                        SWAP_TWO(jobs[x], jobs[y]);
                }
                /* Fair-share moves for some: the order changes beyond newcomers. */
                for (size_t k = 0; k < n; k++)
                        if (rng(&r, 10) == 0)
                                jobs[k].fairshare = (double) rng(&r, 4) * 250000.0;

                assert_int_equal(sched_pass(kept, cfg, &m, jobs, n, now, &a), 0);
                if (against_fresh) {
                        assert_int_equal(sched_pass(fresh, cfg, &m, jobs, n, now, &b), 0);
                        compare_results(&a, &b);
                }
                assert_int_equal(sched_pass(trimmed, cfg, &m, jobs, n, now, &c), 0);
                compare_results(&a, &c);
                sched_context_trim(trimmed);

                /* Apply the starts; end some running jobs; drop what ended. */
                for (size_t d = 0; d < a.n_decisions; d++) {
                        SchedJob *j = &jobs[a.decisions[d].job_index];

                        if (a.decisions[d].type != SCHED_DECISION_START)
                                continue;
                        allocs[j->id % N_JOBS] = a.decisions[d].alloc;
                        j->alloc = &allocs[j->id % N_JOBS];
                        j->state = SCHED_JOB_RUNNING;
                        j->start_time = now;
                }
                for (size_t k = 0; k < n;)
                        if (jobs[k].state == SCHED_JOB_RUNNING && rng(&r, 3) == 0)
                                memmove(&jobs[k], &jobs[k + 1], (--n - k) * sizeof(SchedJob));
                        else
                                k++;
                /* Allocation pointers follow the jobs (indexed by id, stable). */
                for (size_t k = 0; k < n; k++)
                        if (jobs[k].state == SCHED_JOB_RUNNING)
                                jobs[k].alloc = &allocs[jobs[k].id % N_JOBS];
                now += 1 + rng(&r, 600);
                sched_context_free(fresh);
        }
        sched_context_free(kept);
        sched_context_free(trimmed);
        free(allocs);
        free(jobs);
}

static void test_kept_order_decides_as_fresh(void **state) {
        SchedConfig easy = SCHED_CONFIG_DEFAULT, fcfs = SCHED_CONFIG_DEFAULT, sjf = SCHED_CONFIG_DEFAULT,
                    limited = SCHED_CONFIG_DEFAULT, cons = SCHED_CONFIG_DEFAULT, shuffle = SCHED_CONFIG_DEFAULT;
        /* Projects 1-3 limit their members (project 4 has no file): groups and the
         * idle/blocked partition are rebuilt each pass from the kept order too. */
        SchedProject projects[3] = {
                { .id = 1, .total = { .max_cpus = 12 }, .per_user = { .max_idle_jobs = 3 } },
                { .id = 2, .per_user = { .max_running_jobs = 1, .max_jobs = 4 } },
                { .id = 3, .total = { .max_running_jobs = 5 }, .per_user = { .max_idle_jobs = 1 } },
        };

        /* Not the conservative policy: its context keeps reservations on purpose. */
        fcfs.policy = &sched_policy_fcfs;
        cons.policy = &sched_policy_conservative;
        shuffle.ordering = SCHED_ORDERING_SHUFFLE;
        sjf.backfill_order = SCHED_BACKFILL_SJF;
        /* With an age weight large enough that waiting reorders the queue. */
        easy.weights.age = 1.0;
        limited.projects = projects;
        limited.n_projects = ELEMENTSOF(projects);
        for (uint64_t seed = 1; seed <= 3; seed++) {
                run_kept_against_fresh(&easy, true, seed, true);
                run_kept_against_fresh(&fcfs, true, seed, true);
                run_kept_against_fresh(&sjf, true, seed, true);
                run_kept_against_fresh(&easy, false, seed, true);
                run_kept_against_fresh(&limited, true, seed, true);
                run_kept_against_fresh(&shuffle, true, seed, true);
                /* Trimmed, its reservations stay: as kept. */
                run_kept_against_fresh(&cons, true, seed, false);
        }
}

/* Ties of priority go by submission, then id, whatever the sort's key keeps of them: the
 * key carries the age (now - submit), so a submission after now or more than 2^32 s
 * before it must be compared in full, and a tie of submission goes by id only where
 * the jobs came by ascending id (elsewhere the candidates' order is not the ids'). The
 * waiting list is checked against a plain sort of (queue priority, submission, id). */
#define NOW_TIES (UINT64_C(10) << 32)
#define N_TIES 400

static const SchedJob *ties_jobs;

static int cmp_ties(const void *x, const void *y) {
        const SchedJob *a = &ties_jobs[*(const size_t *) x], *b = &ties_jobs[*(const size_t *) y];

        if (a->queue_priority != b->queue_priority)
                return a->queue_priority > b->queue_priority ? -1 : 1;
        if (a->submit_time != b->submit_time)
                return a->submit_time < b->submit_time ? -1 : 1;
        return a->id < b->id ? -1 : a->id > b->id;
}

static void check_tie_order(SchedContext *ctx, const SchedConfig *cfg, const SchedMachine *m, SchedJob *jobs,
                            size_t n, uint64_t now) {
        size_t order[N_TIES], k = 0;
        SchedResult r;

        assert_true(n <= N_TIES);
        assert_int_equal(sched_pass(ctx, cfg, m, jobs, n, now, &r), 0);
        assert_int_equal(r.n_decisions, 0);
        for (size_t i = 0; i < n; i++)
                if (jobs[i].state == SCHED_JOB_PENDING)
                        order[k++] = i;
        ties_jobs = jobs;
        qsort(order, k, sizeof(size_t), cmp_ties);
        assert_int_equal(r.n_waiting, k);
        for (size_t i = 0; i < k; i++)
                assert_int_equal(r.waiting[i].job_id, jobs[order[i]].id);
}

static void test_tie_order(void **state) {
        /* Submissions: many alike, some after now (BeginTime: still ordered), two more
         * than 2^32 s before now, one 2^32 - 1 before it (the widest age the key holds). */
        static const uint64_t submits[] = {
                NOW_TIES - 100, NOW_TIES - 100, NOW_TIES - 7, NOW_TIES, NOW_TIES + 5, NOW_TIES + 6,
                NOW_TIES - (UINT64_C(1) << 32) - 3, NOW_TIES - (UINT64_C(1) << 32) - 9,
                NOW_TIES - (UINT64_C(1) << 32) + 1, 0,
        };
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedNode nodes[1];
        SchedMachine m;
        SchedAllocation alloc = {};
        SchedJob jobs[N_TIES];
        Rng r = { 7 };

        /* The fcfs priority is the queue's alone: every job of a queue ties. */
        cfg.priority = &sched_priority_fcfs;
        machine_uniform(nodes, 1, 1, 64 * GIB, &m);
        cpu_set_add(&alloc.cpus, 0);
        alloc.node_mask = 1;
        for (int shuffled = 0; shuffled < 2; shuffled++) {
                SchedContext *ctx = sched_context_new();

                assert_non_null(ctx);
                /* One running job holds the only CPU: no job starts, all wait in order. */
                jobs[0] = job_pending(1, 0, 1, 3600);
                jobs[0].state = SCHED_JOB_RUNNING;
                jobs[0].start_time = NOW_TIES - 10;
                jobs[0].alloc = &alloc;
                for (size_t i = 1; i < N_TIES; i++) {
                        jobs[i] = job_pending(10 + 3 * i + rng(&r, 3), submits[rng(&r, ELEMENTSOF(submits))], 1, 600);
                        jobs[i].queue_priority = (int32_t) rng(&r, 2);
                }
                /* Not by ascending id: the id decides a tie, not where the job is. */
                if (shuffled)
                        for (size_t i = 1; i < N_TIES; i++)
                                SWAP_TWO(jobs[i], jobs[1 + rng(&r, N_TIES - 1)]);
                check_tie_order(ctx, &cfg, &m, jobs, N_TIES, NOW_TIES);
                /* Again from the kept order, a second later, with some jobs gone and some
                 * submissions moved. */
                for (size_t i = 1; i < N_TIES; i++)
                        if (rng(&r, 8) == 0)
                                jobs[i].submit_time = submits[rng(&r, ELEMENTSOF(submits))];
                jobs[5].state = SCHED_JOB_DONE;
                check_tie_order(ctx, &cfg, &m, jobs, N_TIES, NOW_TIES + 1);
                sched_context_free(ctx);
        }
}

/* The jobs come by ascending id for a while, then not: the keys already placed from the
 * kept order (at their last rank, or with the new ones) go back to job order. Each shape
 * (the break early, late, with newcomers before it, with jobs gone) decides as a fresh
 * context does, for each priority and ordering. */
#define N_BREAK 300

static void test_ids_turn_unordered(void **state) {
        SchedConfig easy = SCHED_CONFIG_DEFAULT, fcfs = SCHED_CONFIG_DEFAULT, shuffle = SCHED_CONFIG_DEFAULT;
        const SchedConfig *cfgs[] = { &easy, &fcfs, &shuffle };
        SchedNode nodes[2];
        SchedMachine m;
        SchedJob jobs[N_BREAK];

        easy.weights.age = 1.0;
        fcfs.priority = &sched_priority_fcfs;
        shuffle.ordering = SCHED_ORDERING_SHUFFLE;
        machine_uniform(nodes, 2, 4, 64 * GIB, &m);
        for (size_t c = 0; c < ELEMENTSOF(cfgs); c++)
                for (size_t at = 1; at < N_BREAK; at += 37) {
                        SchedContext *kept = sched_context_new(), *fresh = sched_context_new();
                        Rng r = { 11 + at };
                        SchedResult a, b;
                        size_t n = 0;

                        assert_non_null(kept);
                        assert_non_null(fresh);
                        /* Even ids, in order; a first pass keeps their order. */
                        for (size_t i = 0; i < N_BREAK; i += 2) {
                                jobs[n] = job_pending(2 * (i + 1), 1000000 - rng(&r, 4) * 100,
                                                      1 + (unsigned) rng(&r, 16), 60 + rng(&r, 7200));
                                jobs[n].queue_priority = (int32_t) rng(&r, 3);
                                jobs[n].user_id = (uint32_t) rng(&r, 5);
                                jobs[n++].fairshare = (double) rng(&r, 4) * 250000.0;
                        }
                        assert_int_equal(sched_pass(kept, cfgs[c], &m, jobs, n, 1000000, &a), 0);
                        /* Newcomers between them (odd ids), some gone, priorities moved. */
                        for (size_t i = 0, o = n; i < o && n < N_BREAK; i++) {
                                jobs[n] = jobs[i];
                                jobs[n].id = jobs[i].id - 1;
                                jobs[n].fairshare = (double) rng(&r, 4) * 250000.0;
                                n++;
                        }
                        for (size_t i = 0; i < n; i++)
                                if (rng(&r, 7) == 0)
                                        jobs[i].state = SCHED_JOB_DONE;
                        /* In id order, but for one pair at the break. */
                        for (size_t i = 1; i < n; i++)
                                for (size_t k = i; k > 0 && jobs[k].id < jobs[k - 1].id; k--)
                                        SWAP_TWO(jobs[k], jobs[k - 1]);
                        SWAP_TWO(jobs[MIN(at, n - 1)], jobs[MIN(at, n - 1) - 1]);
                        assert_int_equal(sched_pass(kept, cfgs[c], &m, jobs, n, 1000060, &a), 0);
                        assert_int_equal(sched_pass(fresh, cfgs[c], &m, jobs, n, 1000060, &b), 0);
                        compare_results(&a, &b);
                        sched_context_free(kept);
                        sched_context_free(fresh);
                }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sort_against_reference),
                cmocka_unit_test(test_kept_order_decides_as_fresh),
                cmocka_unit_test(test_tie_order),
                cmocka_unit_test(test_ids_turn_unordered),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
