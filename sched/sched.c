/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "sched-internal.h"
#include "sort.h"
#include "string-table.h"

static const char *const sched_reason_table[_SCHED_REASON_MAX] = {
        [SCHED_REASON_NONE] = "None",
        [SCHED_REASON_PRIORITY] = "Priority",
        [SCHED_REASON_RESOURCES] = "Resources",
        [SCHED_REASON_HELD] = "Held",
        [SCHED_REASON_DEPENDENCY] = "Dependency",
        [SCHED_REASON_DEPENDENCY_NEVER_SATISFIED] = "DependencyNeverSatisfied",
        [SCHED_REASON_BEGIN_TIME] = "BeginTime",
        [SCHED_REASON_TOO_BIG] = "TooBig",
        [SCHED_REASON_TIME_LIMIT] = "TimeLimit",
        [SCHED_REASON_ARRAY_TASK_LIMIT] = "JobArrayTaskLimit",
        [SCHED_REASON_MAX_CPUS] = "MaxCPUs",
        [SCHED_REASON_MAX_MEMORY] = "MaxMemory",
        [SCHED_REASON_MAX_GPUS] = "MaxGPUs",
        [SCHED_REASON_MAX_RUNNING_JOBS] = "MaxRunningJobs",
        [SCHED_REASON_MAX_JOBS_PER_USER] = "MaxJobsPerUser",
        [SCHED_REASON_MAX_IDLE_JOBS_PER_USER] = "MaxIdleJobsPerUser",
        [SCHED_REASON_MAX_PS_SOFT] = "MaxPSSoft",
        [SCHED_REASON_MAX_PS_HARD] = "MaxPSHard",
        [SCHED_REASON_MAX_WALLTIME] = "MaxWalltime",
        [SCHED_REASON_GRANT] = "Grant",
};

DEFINE_STRING_TABLE_LOOKUP(sched_reason, SchedReason);

bool sched_reason_is_limit(SchedReason r) {
        return r >= SCHED_REASON_MAX_CPUS && r <= SCHED_REASON_GRANT;
}

static const SchedPolicyOps *const policies[] = {
        &sched_policy_fcfs,
        &sched_policy_easy,
        &sched_policy_conservative,
};

static const SchedPriorityOps *const priorities[] = {
        &sched_priority_fcfs,
        &sched_priority_multifactor,
};

const SchedPolicyOps *sched_policy_from_name(const char *name) {
        for (size_t i = 0; name && i < ELEMENTSOF(policies); i++)
                if (streq(policies[i]->name, name))
                        return policies[i];
        return NULL;
}

const SchedPriorityOps *sched_priority_from_name(const char *name) {
        for (size_t i = 0; name && i < ELEMENTSOF(priorities); i++)
                if (streq(priorities[i]->name, name))
                        return priorities[i];
        return NULL;
}

SchedContext *sched_context_new(void) {
        return new0(SchedContext, 1);
}

SchedContext *sched_context_free(SchedContext *ctx) {
        if (!ctx)
                return NULL;
        free(ctx->free_cpus);
        free(ctx->cands);
        free(ctx->cands_tmp);
        free(ctx->keys);
        free(ctx->keys_tmp);
        free(ctx->last_ids);
        free(ctx->last_rank);
        free(ctx->next_ids);
        free(ctx->cand_limits);
        free(ctx->cand_est);
        free(ctx->cand_est_tmp);
        free(ctx->cand_groups);
        free(ctx->cand_groups_tmp);
        free(ctx->active);
        free(ctx->decisions);
        free(ctx->waiting);
        free(ctx->releases);
        free(ctx->releases_tmp);
        free(ctx->release_avail);
        free(ctx->order);
        free(ctx->order_tmp);
        free(ctx->seg_time_base);
        free(ctx->seg_avail_base);
        free(ctx->seg_total_base);
        free(ctx->seg_gpus_base);
        free(ctx->resv);
        free(ctx->resv_next);
        free(ctx->resv_tmp);
        free(ctx->resv_parts);
        free(ctx->resv_parts_next);
        free(ctx->resv_held);
        free(ctx->shuffle);
        free(ctx->shuffle_score);
        free(ctx->groups);
        free(ctx->group_hash);
        free(ctx->group_count);
        free(ctx->idle_tmp);
        free(ctx->group_use);
        free(ctx->proj_use);
        free(ctx->idle);
        free(ctx->array_ids);
        free(ctx->array_count);
        free(ctx->resv_of);
        free(ctx->est_first);
        free(ctx->events);
        free(ctx->events_tmp);
        free(ctx->job_release);
        free(ctx->run_users);
        free(ctx->victims);
        free(ctx->victim_taken);
        free(ctx->victim_running);
        free(ctx->vscores);
        free(ctx->vbest);
        free(ctx->resumes);
        free(ctx->prev_time);
        free(ctx->prev_avail);
        return mfree(ctx);
}

#define TRIM(array, allocated)                  \
        do {                                    \
                (array) = mfree(array);         \
                (allocated) = 0;                \
        } while (0)

void sched_context_trim(SchedContext *ctx) {
        if (!ctx)
                return;
        /* Filled anew by every pass before it is read: sized by the jobs or candidates. */
        TRIM(ctx->cands, ctx->n_cands_alloc);
        TRIM(ctx->cands_tmp, ctx->n_cands_tmp_alloc);
        TRIM(ctx->keys, ctx->n_keys_alloc);
        TRIM(ctx->keys_tmp, ctx->n_keys_tmp_alloc);
        TRIM(ctx->next_ids, ctx->n_next_ids_alloc);
        TRIM(ctx->active, ctx->n_active_alloc);
        TRIM(ctx->waiting, ctx->n_waiting_alloc);
        TRIM(ctx->order, ctx->n_order_alloc);
        TRIM(ctx->order_tmp, ctx->n_order_tmp_alloc);
        TRIM(ctx->shuffle, ctx->n_shuffle_alloc);
        TRIM(ctx->shuffle_score, ctx->n_shuffle_score_alloc);
        TRIM(ctx->idle, ctx->n_idle_alloc);
        TRIM(ctx->idle_tmp, ctx->n_idle_tmp_alloc);
        TRIM(ctx->array_ids, ctx->n_array_ids_alloc);
        TRIM(ctx->array_count, ctx->n_array_count_alloc);
        TRIM(ctx->resv_held, ctx->n_resv_held_alloc);
        TRIM(ctx->cand_limits, ctx->n_cand_limits_alloc);
        TRIM(ctx->cand_est, ctx->n_cand_est_alloc);
        TRIM(ctx->cand_est_tmp, ctx->n_cand_est_tmp_alloc);
        TRIM(ctx->cand_groups, ctx->n_cand_groups_alloc);
        TRIM(ctx->cand_groups_tmp, ctx->n_cand_groups_tmp_alloc);
        TRIM(ctx->resv_of, ctx->n_resv_of_alloc);
        TRIM(ctx->events, ctx->n_events_alloc);
        TRIM(ctx->events_tmp, ctx->n_events_tmp_alloc);
        TRIM(ctx->job_release, ctx->n_job_release_alloc);
        TRIM(ctx->run_users, ctx->n_run_users_alloc);
        TRIM(ctx->victims, ctx->n_victims_alloc);
        TRIM(ctx->victim_taken, ctx->n_victim_taken_alloc);
        TRIM(ctx->victim_running, ctx->n_victim_running_alloc);
        TRIM(ctx->vscores, ctx->n_vscores_alloc);
        TRIM(ctx->vbest, ctx->n_vbest_alloc);
        /* The last order too: the next pass sorts from scratch, once, to the same order. */
        TRIM(ctx->last_ids, ctx->n_last_ids_alloc);
        TRIM(ctx->last_rank, ctx->n_last_rank_alloc);
        ctx->n_last = 0;
        /* Kept: free_cpus, the conservative reservations and profile, and what is sized
         * by the running jobs, nodes or limit groups (releases, decisions, groups). */
}

/* SCHED_REASON_NONE when all dependencies are met. */
static SchedReason deps_reason(const SchedJob *j) {
        bool waiting = false;

        for (size_t i = 0; i < j->n_deps; i++) {
                const SchedDep *d = &j->deps[i];
                SchedDepStatus s = d->status;
                bool finished = s == SCHED_DEP_FINISHED_OK || s == SCHED_DEP_FINISHED_FAILED;

                switch (d->type) {
                case SCHED_DEP_AFTER:
                        if (s == SCHED_DEP_UNKNOWN)
                                waiting = true;
                        break;
                case SCHED_DEP_AFTERANY:
                        if (!finished)
                                waiting = true;
                        break;
                case SCHED_DEP_AFTEROK:
                        if (s == SCHED_DEP_FINISHED_FAILED)
                                return SCHED_REASON_DEPENDENCY_NEVER_SATISFIED;
                        if (s != SCHED_DEP_FINISHED_OK)
                                waiting = true;
                        break;
                case SCHED_DEP_AFTERNOTOK:
                        if (s == SCHED_DEP_FINISHED_OK)
                                return SCHED_REASON_DEPENDENCY_NEVER_SATISFIED;
                        if (s != SCHED_DEP_FINISHED_FAILED)
                                waiting = true;
                        break;
                default:
                        /* A dependency we cannot read is one we cannot honour. */
                        return SCHED_REASON_DEPENDENCY_NEVER_SATISFIED;
                }
        }
        return waiting ? SCHED_REASON_DEPENDENCY : SCHED_REASON_NONE;
}

/* What the nodes j's GPUs could be on give, on an idle machine, for a job asking for
 * gpus of allowed: each node that gives CPUs holds one of its GPUs (one of no known node
 * counts for any node), so at most gpus nodes, the largest first. */
typedef struct BindRoom {
        uint64_t cpus, mem;
        bool known;
} BindRoom;

static void bind_room(const SchedPass *p, uint64_t allowed, unsigned gpus, BindRoom *ret) {
        uint64_t cpus = 0, mem = 0;
        unsigned loose = popcount64(allowed & p->loose_gpus), left = gpus;
        bool used[SCHED_NODES_MAX] = {};

        /* The nodes with the most CPUs first: those with an allowed GPU of their own,
         * then, one per loose GPU, any. */
        for (int pass = 0; pass < 2; pass++)
                for (; left > 0; left--) {
                        size_t best = SIZE_MAX;
                        for (size_t k = 0; k < p->n_nodes; k++)
                                if (!used[k] && (pass == 1 || (allowed & p->node_gpus[k])) &&
                                    (best == SIZE_MAX || p->node_cpus[k] > p->node_cpus[best]))
                                        best = k;
                        if (best == SIZE_MAX || (pass == 1 && loose == 0))
                                break;
                        if (pass == 1)
                                loose--;
                        used[best] = true;
                        cpus += p->node_cpus[best];
                        mem = time_add(mem, p->node_mem[best]);
                }
        *ret = (BindRoom) { .cpus = cpus, .mem = mem, .known = true };
}

/* The GPU tests of a job that may have any of the machine's GPUs (most: gpu_allowed 0)
 * depend on how many it asks for alone: worked out once a pass for each count met,
 * not for every job. */
typedef struct GpuTests {
        unsigned n_all;                         /* GPUs given to anyone: popcount(all_gpus) */
        BindRoom any[SCHED_GPUS_MAX + 1];       /* bind_room(all_gpus, g) by g */
} GpuTests;

/* Whether j asks for more GPUs than the machine has, or than of the kinds it may have;
 * or, under binding, for more CPUs or memory than the nodes its GPUs could be on have. */
static bool gpus_too_big(const SchedPass *p, GpuTests *gt, const SchedJob *j) {
        uint64_t allowed = job_gpu_allowed(p, j);
        bool any = allowed == p->all_gpus;
        BindRoom other, *room;

        if (j->gpus > (any ? gt->n_all : popcount64(allowed)))
                return true;
        if (!j->gpu_binding)
                return false;
        /* j->gpus <= 64 here: no more than the bits of allowed. */
        room = any ? &gt->any[j->gpus] : &other;
        if (!any || !room->known)
                bind_room(p, allowed, j->gpus, room);
        return MAX(j->cpus, 1u) > room->cpus || j->memory > room->mem;
}

/* The config's and the pass's figures come as arguments: in pass_collect()'s scan they
 * stay in registers, where every store to a candidate would make it read them again
 * (the tree is built without strict aliasing). */
static inline SchedReason job_ineligible(const SchedPass *p, GpuTests *gt, const SchedJob *j, uint64_t now,
                                         uint64_t max_walltime, uint64_t *ret_est, uint32_t machine_cpus,
                                         uint64_t machine_mem) {
        SchedReason r;

        *ret_est = SCHED_TIME_INFINITY;

        if (MAX(j->cpus, 1u) > machine_cpus || j->memory > machine_mem)
                return SCHED_REASON_TOO_BIG;
        /* A job asking for any of the machine's GPUs without binding (the most common
         * GPU job) is too big only for more than there are: tested without a branch on
         * whether it asks for GPUs, which a queue of some GPU jobs mispredicts often. On
         * a machine without (n_all 0: a branch the whole scan takes alike) that is the
         * same as asking for any, one test instead of five. */
        if (_unlikely_(gt->n_all == 0 ? j->gpus > 0
                                      : (j->gpus > gt->n_all) |
                                                ((j->gpus > 0) & ((j->gpu_allowed | j->gpu_binding | j->shards) != 0))) &&
            gpus_too_big(p, gt, j))
                return SCHED_REASON_TOO_BIG;
        if (max_walltime > 0 && sched_job_walltime(j) != SCHED_TIME_INFINITY && sched_job_walltime(j) > max_walltime)
                return SCHED_REASON_TIME_LIMIT;
        if (j->max_walltime > 0 && j->walltime != SCHED_TIME_INFINITY && j->walltime > j->max_walltime)
                return SCHED_REASON_TIME_LIMIT;
        r = deps_reason(j);
        if (r == SCHED_REASON_DEPENDENCY_NEVER_SATISFIED)
                return r;
        if (j->held)
                return SCHED_REASON_HELD;
        if (r != SCHED_REASON_NONE)
                return r;
        if (j->begin_time > now || j->submit_time > now) {
                *ret_est = MAX(j->begin_time, j->submit_time);
                return SCHED_REASON_BEGIN_TIME;
        }
        return SCHED_REASON_NONE;
}

/* What the sort compares with: the candidates, in the order the keys' cand fields index;
 * by_id: their ids ascend with that index (jobs came by ascending id). */
typedef struct SortCtx {
        const Cand *cands;
        const SchedJob *jobs;
        bool by_id;
} SortCtx;

static inline bool key_less(const void *userdata, const SortKey *x, const SortKey *y) {
        const SortCtx *s = userdata;
        const Cand *a, *b;

        if (x->prio != y->prio)
                return x->prio > y->prio;
        /* Both ages known: apart, the earlier submission first; equal, so are the
         * submissions, and by id the candidates' order is their ids' order. Only what
         * the key cannot tell reads the candidates, from all over memory. */
        if (x->age != SORT_AGE_UNKNOWN && y->age != SORT_AGE_UNKNOWN) {
                if (x->age != y->age)
                        return x->age > y->age;
                if (s->by_id)
                        return x->cand < y->cand;
        }
        a = s->cands + x->cand;
        b = s->cands + y->cand;
        if (s->jobs[a->idx].submit_time != s->jobs[b->idx].submit_time)
                return s->jobs[a->idx].submit_time < s->jobs[b->idx].submit_time;
        if (a->id != b->id)
                return a->id < b->id;
        return a->idx < b->idx;
}
DEFINE_MERGE_SORT(sort_keys, SortKey, key_less);

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static size_t array_slot(const uint64_t *ids, size_t n, uint64_t id) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (ids[mid] < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* Array throttles ("%N"): per array, its running tasks plus those let through so far in
 * priority order; the rest wait. One sort of the throttled arrays' ids per pass, so an
 * array of 100,000 tasks costs n log n, not n². */
static int pass_array_limits(SchedPass *p, size_t n) {
        SchedContext *ctx = p->ctx;
        size_t k = 0;

        /* n: the tasks of throttled arrays, counted by pass_collect()'s scan. */
        if (n == 0)
                return 0;
        if (!GROW(ctx->array_ids, ctx->n_array_ids_alloc, n) || !GROW(ctx->array_count, ctx->n_array_count_alloc, n))
                return -ENOMEM;
        for (size_t i = 0; i < p->n_jobs; i++)
                if (p->jobs[i].array_max_running && p->jobs[i].state != SCHED_JOB_DONE)
                        ctx->array_ids[k++] = p->jobs[i].array_id;
        qsort(ctx->array_ids, k, sizeof(uint64_t), cmp_u64);
        n = 0;
        for (size_t i = 0; i < k; i++)
                if (n == 0 || ctx->array_ids[n - 1] != ctx->array_ids[i])
                        ctx->array_ids[n++] = ctx->array_ids[i];
        memset(ctx->array_count, 0, n * sizeof(uint32_t));
        for (size_t i = 0; i < p->n_jobs; i++) {
                const SchedJob *j = &p->jobs[i];
                if (j->array_max_running && (j->state == SCHED_JOB_RUNNING || j->state == SCHED_JOB_SUSPENDED))
                        ctx->array_count[array_slot(ctx->array_ids, n, j->array_id)]++;
        }
        for (size_t i = 0; i < p->n_cands; i++) {
                Cand *c = &p->cands[i];
                const SchedJob *j = &p->jobs[c->idx];
                uint32_t *count;

                if (!j->array_max_running || c->reason != SCHED_REASON_NONE)
                        continue;
                count = &ctx->array_count[array_slot(ctx->array_ids, n, j->array_id)];
                if (*count >= j->array_max_running)
                        c->reason = SCHED_REASON_ARRAY_TASK_LIMIT;
                else
                        (*count)++;
        }
        return 0;
}

/* Queue shuffling (NCI): sum, for each job, the CPUs of the jobs before it in its queue
 * from its user or its project. The union is the user's plus the project's minus those
 * that are both, each a prefix sum over the queue sorted by that key, then submission. */
static int cmp_shuffle(const void *x, const void *y, void *userdata) {
        const ShuffleEntry *a = x, *b = y;
        int shuffle_key = *(const int *) userdata;
        uint64_t ka[2] = { a->user, a->project }, kb[2] = { b->user, b->project };

        if (a->queue != b->queue)
                return a->queue < b->queue ? -1 : 1;
        if (shuffle_key != 1 && ka[0] != kb[0])
                return ka[0] < kb[0] ? -1 : 1;
        if (shuffle_key != 0 && ka[1] != kb[1])
                return ka[1] < kb[1] ? -1 : 1;
        if (a->submit != b->submit)
                return a->submit < b->submit ? -1 : 1;
        return a->id < b->id ? -1 : a->id > b->id;
}

static void shuffle_sums(SchedPass *p, size_t n, int key, int sign) {
        SchedContext *ctx = p->ctx;

        /* key 0: user, 1: project, 2: both */
        qsort_r(ctx->shuffle, n, sizeof(ShuffleEntry), cmp_shuffle, &key);
        for (size_t i = 0, sum = 0; i < n; i++) {
                const ShuffleEntry *e = &ctx->shuffle[i], *prev = i > 0 ? &ctx->shuffle[i - 1] : NULL;
                if (!prev || prev->queue != e->queue || (key != 1 && prev->user != e->user) ||
                    (key != 0 && prev->project != e->project))
                        sum = 0;
                ctx->shuffle_score[e->idx] += sign > 0 ? sum : -(uint64_t) sum;
                sum += e->cpus;
        }
}

static int pass_shuffle_scores(SchedPass *p) {
        SchedContext *ctx = p->ctx;
        size_t n = 0;

        if (!GROW(ctx->shuffle, ctx->n_shuffle_alloc, p->n_jobs) ||
            !GROW(ctx->shuffle_score, ctx->n_shuffle_score_alloc, p->n_jobs))
                return -ENOMEM;
        memset(ctx->shuffle_score, 0, MAX(p->n_jobs, (size_t) 1) * sizeof(uint64_t));
        for (size_t i = 0; i < p->n_jobs; i++) {
                const SchedJob *j = &p->jobs[i];
                if (j->state == SCHED_JOB_DONE)
                        continue;
                ctx->shuffle[n++] = (ShuffleEntry) { .queue = j->queue_id, .user = j->user_id,
                                                     .project = j->project_id, .cpus = MAX(j->cpus, 1u),
                                                     .submit = j->submit_time, .id = j->id, .idx = (uint32_t) i };
        }
        shuffle_sums(p, n, 0, +1);
        shuffle_sums(p, n, 1, +1);
        shuffle_sums(p, n, 2, -1);
        return 0;
}

/* The sort starts from the order the last pass left, which has changed little:
 * priorities move alike for all (age grows alike), so a pass mostly meets its queue in
 * order and the sort is a scan, plus a merge of what is new. The last order is kept as
 * the candidates' ids ascending, each with its rank; matching them to this pass's
 * candidates is a merge of two id-sorted lists, done as pass_collect() makes them when the
 * jobs come by ascending id (as the daemon and the simulator give them), and each key
 * goes straight to its last rank in keys_tmp: one scattered write a job, where a slot
 * table then a gather of the keys through it made three passes over them. */

#define SCATTER_AHEAD 16

/* Rank of the job with this id in the last order (UINT32_MAX: none); *k walks last_ids.
 * A last candidate passed over is gone since: its slot in keys_tmp is marked empty. */
static inline uint32_t last_rank_of(SchedContext *ctx, size_t *k, uint64_t id) {
        uint32_t rank;

        while (*k < ctx->n_last && ctx->last_ids[*k] < id)
                ctx->keys_tmp[ctx->last_rank[(*k)++]].cand = UINT32_MAX;
        if (*k >= ctx->n_last || ctx->last_ids[*k] != id)
                return UINT32_MAX;
        rank = ctx->last_rank[*k];
        /* The keys land all over keys_tmp: the slot wanted some jobs from now is asked
         * for ahead, so the stores do not wait for it (a third of the scan's time). */
        if (*k + SCATTER_AHEAD < ctx->n_last)
                __builtin_prefetch(&ctx->keys_tmp[ctx->last_rank[*k + SCATTER_AHEAD]], 1);
        (*k)++;
        return rank;
}

/* Puts the keys in the last order: those placed at their last rank in keys_tmp, less
 * the empty slots, then the n_new in keys, new since the last pass, in job order. */
static void keys_in_last_order(SchedContext *ctx, size_t k, size_t n, size_t n_new) {
        size_t o = 0;

        for (; k < ctx->n_last; k++)
                ctx->keys_tmp[ctx->last_rank[k]].cand = UINT32_MAX;
        for (size_t r = 0; r < ctx->n_last; r++)
                if (ctx->keys_tmp[r].cand != UINT32_MAX)
                        ctx->keys_tmp[o++] = ctx->keys_tmp[r];
        assert(o + n_new == n);
        memcpy(ctx->keys_tmp + o, ctx->keys, n_new * sizeof(SortKey));
        SWAP_TWO(ctx->keys, ctx->keys_tmp);
        SWAP_TWO(ctx->n_keys_alloc, ctx->n_keys_tmp_alloc);
}

/* Remembers this pass's order for the next: next_ids holds the candidates' ids in job
 * order (ascending); the caller then sets last_rank[keys[r].cand] = r for each rank r
 * (in the gather's walk of the keys). Returns last_rank, NULL when not by id. */
static int keys_remember_order(SchedContext *ctx, size_t n, bool by_id, uint32_t **ret) {
        *ret = NULL;
        ctx->n_last = 0;
        if (!by_id)
                return 0;
        if (!GROW(ctx->last_rank, ctx->n_last_rank_alloc, n))
                return -ENOMEM;
        SWAP_TWO(ctx->last_ids, ctx->next_ids);
        SWAP_TWO(ctx->n_last_ids_alloc, ctx->n_next_ids_alloc);
        ctx->n_last = n;
        *ret = ctx->last_rank;
        return 0;
}

#define GATHER_AHEAD 16

/* shuffle: the config's ordering is SCHED_ORDERING_SHUFFLE, passed down so that the
 * scan does not read the config again after every store. */
static inline SortKey cand_key(const SchedPass *p, const Cand *c, uint32_t n, bool shuffle, uint64_t now,
                               uint64_t submit) {
        /* Shuffled: the queue's priority first, then the lightest score; the priority
         * reported stays the policy's. */
        return (SortKey) {
                .prio = shuffle ? (double) p->jobs[c->idx].queue_priority * 1e15 -
                                          (double) p->ctx->shuffle_score[c->idx]
                                : c->prio,
                .cand = n,
                .age = sort_age(now, submit),
        };
}

static int pass_collect(SchedPass *p) {
        SchedContext *ctx = p->ctx;
        size_t n = 0, n_new = 0, n_throttled = 0, n_active = 0, k = 0;
        int r;
        uint32_t machine_cpus = 0;
        uint64_t machine_mem = 0;
        bool by_id = true, multifactor = p->config->priority == &sched_priority_multifactor;
        /* Read once, not again after every store to a candidate. */
        const SchedWeights weights = p->config->weights;
        const PrioShape shape = prio_shape(&weights);
        const uint64_t now = p->now, max_walltime = p->config->max_walltime;
        const bool projects = p->config->n_projects > 0 && p->config->projects;
        const bool shuffle = p->config->ordering == SCHED_ORDERING_SHUFFLE;
        GpuTests gpu_tests = { .n_all = popcount64(p->all_gpus) };
        uint32_t *last_rank;

        p->n_preemptors = 0;
        p->top_preemptor_queue = INT64_MIN;
        for (size_t i = 0; i < p->n_nodes; i++) {
                machine_cpus += p->node_cpus[i];
                machine_mem = time_add(machine_mem, p->node_mem[i]);
        }

        /* Room for every job: one scan of the jobs instead of a count first. */
        if (!GROW(ctx->cands, ctx->n_cands_alloc, p->n_jobs) ||
            !GROW(ctx->cands_tmp, ctx->n_cands_tmp_alloc, p->n_jobs) ||
            !GROW(ctx->keys, ctx->n_keys_alloc, p->n_jobs) ||
            !GROW(ctx->keys_tmp, ctx->n_keys_tmp_alloc, MAX(p->n_jobs, ctx->n_last)) ||
            !GROW(ctx->next_ids, ctx->n_next_ids_alloc, p->n_jobs) ||
            !GROW(ctx->cand_est, ctx->n_cand_est_alloc, p->n_jobs) ||
            !GROW(ctx->cand_est_tmp, ctx->n_cand_est_tmp_alloc, p->n_jobs) ||
            !GROW(ctx->active, ctx->n_active_alloc, p->n_jobs))
                return -ENOMEM;
        if (projects && (!GROW(ctx->cand_groups, ctx->n_cand_groups_alloc, p->n_jobs) ||
                         !GROW(ctx->cand_groups_tmp, ctx->n_cand_groups_tmp_alloc, p->n_jobs)))
                return -ENOMEM;

        if (p->config->ordering == SCHED_ORDERING_SHUFFLE) {
                r = pass_shuffle_scores(p);
                if (r < 0)
                        return r;
        }

        for (size_t i = 0; i < p->n_jobs; i++) {
                const SchedJob *j = &p->jobs[i];
                uint64_t est;
                uint32_t rank;
                Cand *c;

                if (j->array_max_running && j->state != SCHED_JOB_DONE)
                        n_throttled++;
                if (i > 0 && j->id <= p->jobs[i - 1].id)
                        by_id = false;
                if (j->state == SCHED_JOB_RUNNING || j->state == SCHED_JOB_SUSPENDED)
                        ctx->active[n_active++] = (uint32_t) i;
                if (j->state != SCHED_JOB_PENDING)
                        continue;
                c = &ctx->cands[n];
                *c = (Cand) {
                        .prio = multifactor ? job_priority_shaped(&weights, shape, j, now)
                                            : p->config->priority->priority(p->config, j, now),
                        .id = j->id,
                        .idx = (uint32_t) i,
                        .cpus = MAX(j->cpus, 1u),
                        .was_blocked = j->blocked,
                        .preemptor = j->preempts != 0 || j->parallel_run,
                };
                c->reason = job_ineligible(p, &gpu_tests, j, now, max_walltime, &est, machine_cpus, machine_mem);
                if (est != SCHED_TIME_INFINITY) {
                        c->has_est = true;
                        ctx->cand_est_tmp[n] = est;
                }
                if (c->preemptor) {
                        p->n_preemptors++;
                        p->top_preemptor_queue = MAX(p->top_preemptor_queue, (int64_t) j->queue_priority);
                }
                if (projects)
                        ctx->cand_groups_tmp[n] = (CandGroup) {
                                .proj = project_index(p->config, j->project_id),
                                .user = j->user_id,
                        };
                /* Where it was in the last order, or with the new ones. */
                ctx->next_ids[n] = j->id;
                rank = by_id ? last_rank_of(ctx, &k, j->id) : UINT32_MAX;
                if (rank != UINT32_MAX)
                        ctx->keys_tmp[rank] = cand_key(p, c, (uint32_t) n, shuffle, now, j->submit_time);
                else
                        ctx->keys[n_new++] = cand_key(p, c, (uint32_t) n, shuffle, now, j->submit_time);
                n++;
        }

        if (by_id)
                keys_in_last_order(ctx, k, n, n_new);
        else
                /* Not by id: no last order to start from, the keys in job order. */
                for (size_t i = 0; i < n; i++)
                        ctx->keys[i] = cand_key(p, &ctx->cands[i], (uint32_t) i, shuffle, now,
                                          p->jobs[ctx->cands[i].idx].submit_time);
        (void) sort_keys(ctx->keys, ctx->keys_tmp, n, &(SortCtx) { .cands = ctx->cands, .jobs = p->jobs, .by_id = by_id });
        r = keys_remember_order(ctx, n, by_id, &last_rank);
        if (r < 0)
                return r;
        /* A gather from all over the candidates: asked for some way ahead, the loads
         * overlap instead of waiting one by one (the keys are read in order anyway). The
         * same walk of the keys remembers the order. */
        const SortKey *keys = ctx->keys;
        const Cand *from = ctx->cands;
        Cand *to = ctx->cands_tmp;
        const CandGroup *groups_from = projects ? ctx->cand_groups_tmp : NULL;
        CandGroup *groups_to = projects ? ctx->cand_groups : NULL;
        for (size_t i = 0; i < n; i++) {
                uint32_t cand = keys[i].cand;

                if (i + GATHER_AHEAD < n)
                        __builtin_prefetch(&from[keys[i + GATHER_AHEAD].cand]);
                to[i] = from[cand];
                if (from[cand].has_est)
                        ctx->cand_est[i] = ctx->cand_est_tmp[cand];
                if (last_rank)
                        last_rank[cand] = (uint32_t) i;
                /* Where some project has limits, their fields the same way. */
                if (groups_to)
                        groups_to[i] = groups_from[cand];
        }
        SWAP_TWO(ctx->cands, ctx->cands_tmp);
        SWAP_TWO(ctx->n_cands_alloc, ctx->n_cands_tmp_alloc);
        p->cands = ctx->cands;
        p->n_cands = n;
        p->active = ctx->active;
        p->n_active = n_active;
        r = pass_array_limits(p, n_throttled);
        if (r < 0)
                return r;
        return pass_limits_setup(p);
}

static int pass_result(SchedPass *p, SchedResult *ret) {
        SchedContext *ctx = p->ctx;
        size_t n = 0;

        if (!GROW(ctx->waiting, ctx->n_waiting_alloc, p->n_cands))
                return -ENOMEM;

        /* Read once: the stores into waiting might otherwise alias them (the tree is
         * built without strict aliasing), and this walks every waiting job. */
        const Cand *cands = p->cands;
        const CandLimit *limits = p->limits ? ctx->cand_limits : NULL;
        const uint64_t *est = ctx->cand_est;
        const size_t n_cands = p->n_cands, wait_from = p->wait_from;
        SchedWait *waiting = ctx->waiting;

        for (size_t i = 0; i < n_cands; i++) {
                const Cand *c = &cands[i];
                SchedReason why;
                bool limited;

                if (c->started)
                        continue;
                /* cand_reason(), with what it reads of p in locals */
                why = c->reason == SCHED_REASON_NONE && i >= wait_from ? SCHED_REASON_PRIORITY : c->reason;
                limited = limits && sched_reason_is_limit(why);
                waiting[n++] = (SchedWait) {
                        .job_index = c->idx,
                        .job_id = c->id,
                        .reason = why,
                        .est_start = c->has_est ? est[i] : SCHED_TIME_INFINITY, /* cand_est() */
                        .priority = c->prio,
                        .bypassed = c->bypassed,
                        .limit = limited ? limits[i].limit : 0,
                        .wanted = limited ? limits[i].wanted : 0,
                };
        }

        *ret = (SchedResult) {
                .decisions = ctx->decisions,
                .n_decisions = p->n_decisions,
                .waiting = ctx->waiting,
                .n_waiting = n,
        };
        return 0;
}

int sched_pass(SchedContext *ctx, const SchedConfig *config, const SchedMachine *machine,
               const SchedJob *jobs, size_t n_jobs, uint64_t now, SchedResult *ret) {
        SchedPass p = {
                .ctx = ctx,
                .config = config,
                .machine = machine,
                .jobs = jobs,
                .n_jobs = n_jobs,
                .now = now,
                .wait_from = SIZE_MAX,
        };
        int r;

        if (!ctx || !config || !machine || !ret || (!jobs && n_jobs > 0))
                return -EINVAL;
        if (!config->policy || !config->policy->plan || !config->priority || !config->priority->priority)
                return -EINVAL;
        if ((unsigned) config->backfill_order >= _SCHED_BACKFILL_ORDER_MAX ||
            (unsigned) config->ordering >= _SCHED_ORDERING_MAX)
                return -EINVAL;
        if (n_jobs > UINT32_MAX)
                return -E2BIG;
        if (config->preempt.enabled && !(config->preempt.max_xfactor >= 1.0))
                return -EINVAL;

        ctx->n_passes++;
        /* Until a reservation is made, a GPU's shards may be joined whatever it delays;
         * conservative reserves for every job, so a joiner may delay none. */
        p.shard_horizon = config->policy == &sched_policy_conservative ? 0 : SCHED_TIME_INFINITY;
        r = pass_setup_machine(&p);
        if (r < 0)
                return r;
        /* Collect first: its one scan of the jobs also finds the running ones. */
        r = pass_collect(&p);
        if (r < 0)
                return r;
        r = pass_build_now(&p);
        if (r < 0)
                return r;
        r = pass_preempt(&p);
        if (r < 0)
                return r;
        r = config->policy->plan(&p);
        if (r < 0)
                return r;
        return pass_result(&p, ret);
}
