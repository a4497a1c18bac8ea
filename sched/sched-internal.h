/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* What policies see of a pass. Not installed, not for callers of sched.h. */

#include "sched.h"

/* Free resources of one node, as counts: which CPU ids are free only matters for a job
 * that starts now (SchedPass.free_cpus); for the future any free CPU of a node will do,
 * so reservations and profiles plan with counts and never fragment. An exclusive job
 * takes all CPUs and memory of its nodes, so "nothing else on the node" is simply "all
 * of it free". */
typedef struct Avail {
        uint64_t mem;
        uint32_t cpus;
        /* Free GPUs kept at this node (SchedPass.home_gpus), bit i: the i-th of them by
         * index. Unlike CPUs they are planned by id even for the future: each is a device
         * of its own kind, and a job may take only some (gpu_allowed). 32 bits in what was
         * padding: a machine without GPUs plans with the Avail it always had. */
        uint32_t gpus;
} Avail;

/* A placement in counts: what a job takes from each node. */
typedef struct Plan {
        uint64_t node_mask;
        uint64_t gpus;       /* the GPUs it takes, wherever they are */
        uint32_t cpus[SCHED_NODES_MAX];
        uint64_t mem[SCHED_NODES_MAX];
} Plan;

/* A pending job as the pass sees it. Sorted by priority; every pass writes one per
 * waiting job and moves them into priority order, so it is kept small (32 bytes, two to
 * a cache line: the move into priority order reads each from all over memory): what
 * only limits read is in SchedContext.cand_groups (when some project has limits) and
 * cand_limits, its submission (a tie-break, in SortKey.age) is read from the job where
 * needed, and its estimated start, which few have, is beside it (cand_est()). */
typedef struct Cand {
        double prio;
        uint64_t id;
        uint32_t idx;        /* into jobs[] */
        uint32_t cpus;       /* its job's, at least 1: what the backfill and preemption scans test first */
        uint8_t reason;      /* SchedReason: preset for ineligible jobs; set by the policy otherwise */
        bool started:1;
        bool bypassed:1;
        bool was_blocked:1;  /* its job's blocked: limits read it without the job */
        bool preemptor:1;    /* its job may preempt (SchedJob.preempts or parallel_run) */
        bool has_est:1;      /* it has an estimated start (SchedContext.cand_est); else unknown */
} Cand;

/* A candidate among the limits, in SchedContext.cand_groups (priority order, as the
 * candidates) when some project has limits. */
typedef struct CandGroup {
        int32_t proj;        /* index into config->projects, -1: not limited */
        uint32_t group;      /* its (project, user) in the pass's limit groups */
        uint32_t user;       /* its job's user_id: limits read it without the job */
} CandGroup;

/* For a candidate held back by a limit: the limit and what it would have made of it. */
typedef struct CandLimit {
        uint64_t limit, wanted;
} CandLimit;

/* What running jobs (and those started in this pass) hold against a limit. */
typedef struct LimitUse {
        uint64_t cpus, mem, gpus, running, ps;
} LimitUse;

/* A member of a project, as limits count it. */
typedef struct LimitGroup {
        uint32_t proj;
        uint32_t user;
} LimitGroup;

/* For queue shuffling: every job of the pass with what the score needs. */
typedef struct ShuffleEntry {
        uint32_t queue, user, project, cpus;
        uint64_t submit, id;
        uint32_t idx;   /* into jobs[] */
} ShuffleEntry;

/* For the idle/blocked partition: eligible jobs by group, then submission. */
typedef struct IdleEntry {
        uint32_t group;
        uint64_t submit, id;
        uint32_t cand;
} IdleEntry;

/* When a running (or just started) job gives back what it holds. */
typedef struct Release {
        uint64_t end;
        size_t avail_off;    /* its per-node holdings: ctx->release_avail[avail_off ...] */
} Release;

/* A backfill candidate: its position in the priority order, sorted by key. */
typedef struct OrderEntry {
        uint64_t key;
        size_t pos;
} OrderEntry;

/* Sorting moves these, not the wider Cand. Equal priorities are common (a queue's jobs
 * submitted in the same second, or with the age term alone apart): the first tie-break,
 * submission, is in the key (in what was padding), so that a tie does not read two
 * candidates from all over memory. */
typedef struct SortKey {
        double prio;
        uint32_t cand;
        uint32_t age;   /* now - submit: a later submission has less; SORT_AGE_UNKNOWN:
                         * submitted after now or too long ago, compare the candidates */
} SortKey;

#define SORT_AGE_UNKNOWN UINT32_MAX

static inline uint32_t sort_age(uint64_t now, uint64_t submit) {
        return submit <= now && now - submit < SORT_AGE_UNKNOWN ? (uint32_t) (now - submit) : SORT_AGE_UNKNOWN;
}

/* A conservative reservation remembered between passes: its start, and what it takes
 * from each node it touches (n_parts entries of SchedContext.resv_parts from parts). */
typedef struct Resv {
        uint64_t id;
        uint64_t start;
        uint64_t gpus;       /* the GPUs it takes */
        uint32_t parts;
        uint32_t n_parts;
} Resv;

typedef struct ResvPart {
        uint64_t mem;
        uint32_t cpus;
        uint8_t node;
} ResvPart;

/* A change in the conservative profile: a running job's end (release: ref into
 * releases), or a reservation's start (take) or end (ref: the candidate). */
typedef struct ProfEvent {
        uint64_t t;
        uint32_t ref;
        bool take;
        bool release;
} ProfEvent;

typedef struct SchedContext {
        uint64_t n_passes;     /* passes run with this context, this one included */
        CpuSet *free_cpus;     /* per node, for SchedPass.free_cpus; valid sets between passes */
        size_t n_free_cpus;
        Cand *cands, *cands_tmp;
        size_t n_cands_alloc, n_cands_tmp_alloc;
        SortKey *keys, *keys_tmp;
        size_t n_keys_alloc, n_keys_tmp_alloc;
        /* The last pass's candidates by ascending id, each with its place in that pass's
         * order (n_last of them; none when the jobs did not come by ascending id): this
         * pass's sort starts from that order, which has changed little. */
        uint64_t *last_ids, *next_ids; /* next_ids: this pass's, by ascending id */
        uint32_t *last_rank;
        uint32_t *active;
        size_t n_active_alloc;
        size_t n_last, n_last_ids_alloc, n_next_ids_alloc, n_last_rank_alloc;
        SchedDecision *decisions;
        size_t n_decisions_alloc;
        SchedWait *waiting;
        size_t n_waiting_alloc;
        Release *releases, *releases_tmp;
        size_t n_releases_alloc, n_releases_tmp_alloc;
        Avail *release_avail;
        size_t n_release_avail_alloc;
        OrderEntry *order, *order_tmp; /* backfill candidate order */
        size_t n_order_tmp_alloc;
        size_t n_order_alloc;
        /* conservative profile: segment i covers [seg_time[i], seg_time[i+1]) */
        uint64_t *seg_time;
        Avail *seg_avail;
        Avail *seg_total;      /* per segment, summed over the nodes */
        uint64_t *seg_gpus;    /* per segment, the GPUs free (machines with GPUs only) */
        /* The arrays above are views seg_front segments into these: a split moves the
         * segments before it down into that room when they are fewer than those after. */
        size_t seg_front;
        uint64_t *seg_time_base, *seg_gpus_base;
        Avail *seg_avail_base, *seg_total_base;
        size_t n_seg_time_alloc, n_seg_avail_alloc, n_seg_total_alloc, n_seg_gpus_alloc;
        /* conservative reservations: of the last pass (sorted by id), and of this one */
        Resv *resv, *resv_next, *resv_tmp;
        size_t n_resv, n_resv_alloc, n_resv_next, n_resv_next_alloc, n_resv_tmp_alloc;
        ResvPart *resv_parts, *resv_parts_next;
        size_t n_resv_parts, n_resv_parts_alloc, n_resv_parts_next, n_resv_parts_next_alloc;
        bool *resv_held;       /* per candidate: its remembered reservation is in the profile */
        /* Per candidate in priority order, its estimated start where Cand.has_est; _tmp:
         * in job order, in pass_collect(). Written only where set: most have none. */
        uint64_t *cand_est, *cand_est_tmp;
        size_t n_cand_est_alloc, n_cand_est_tmp_alloc;
        CandLimit *cand_limits; /* per candidate in priority order, when projects have limits */
        CandGroup *cand_groups, *cand_groups_tmp; /* the same; _tmp: by job order, in pass_collect() */
        size_t n_cand_groups_alloc, n_cand_groups_tmp_alloc;
        size_t n_cand_limits_alloc;
        LimitGroup *groups;    /* this pass's (project, user) pairs, in the order first met */
        size_t n_groups_alloc;
        /* (project, user) -> 1 + index into groups; 0: empty. Open addressing, a power of
         * two at least twice the groups. */
        uint32_t *group_hash;
        size_t n_group_hash;
        uint32_t *group_count; /* per group: its idle entries, then where they start */
        size_t n_group_count_alloc;
        IdleEntry *idle_tmp;
        size_t n_idle_tmp_alloc;
        LimitUse *group_use, *proj_use;
        size_t n_group_use_alloc, n_proj_use_alloc;
        IdleEntry *idle;
        size_t n_idle_alloc;
        ShuffleEntry *shuffle;
        size_t n_shuffle_alloc;
        uint64_t *shuffle_score; /* per job index: CPUs before it (SCHED_ORDERING_SHUFFLE) */
        size_t n_shuffle_score_alloc;
        uint64_t *array_ids;   /* throttled arrays of this pass, sorted, and their counts */
        size_t n_array_ids_alloc;
        uint32_t *array_count;
        size_t n_array_count_alloc;
        size_t n_resv_held_alloc;
        uint32_t *resv_of;     /* per held candidate: its entry in resv */
        size_t n_resv_of_alloc;
        uint64_t resv_pass;    /* n_passes of the pass that left them */
        uint64_t *est_first;   /* the estimates' Profile.first */
        size_t n_est_first_alloc;
        ProfEvent *events, *events_tmp;
        size_t n_events_alloc, n_events_tmp_alloc;
        /* preemption (preempt.c): per job index its release's avail_off (SIZE_MAX: none),
         * the running jobs' user ids sorted, the victims and their scores */
        size_t *job_release;
        size_t n_job_release_alloc;
        uint32_t *run_users;
        size_t n_run_users_alloc;
        uint32_t *victims;
        size_t n_victims_alloc;
        bool *victim_taken;
        size_t n_victim_taken_alloc;
        uint32_t *victim_running;  /* per victim: its owner's running jobs */
        size_t n_victim_running_alloc;
        struct VictimScore *vscores, *vbest; /* vbest: those taken off vscores' heap, best first */
        size_t n_vscores_alloc, n_vbest_alloc;
        uint32_t *resumes;
        size_t n_resumes_alloc;
        /* the profile the last conservative pass ended with */
        uint64_t *prev_time;
        Avail *prev_avail;
        size_t n_prev, prev_nodes, n_prev_time_alloc, n_prev_avail_alloc;
} SchedContext;

struct SchedPass {
        SchedContext *ctx;
        const SchedConfig *config;
        const SchedMachine *machine;
        const SchedJob *jobs;
        size_t n_jobs;
        uint64_t now;
        size_t n_nodes;

        uint8_t node_order[SCHED_NODES_MAX]; /* preferred node order */
        uint32_t node_cpus[SCHED_NODES_MAX]; /* sizes */
        uint64_t node_mem[SCHED_NODES_MAX];
        /* GPUs: all of them; per node those attached to it (locality, and what an
         * exclusive job holds with the node); per node those Avail keeps there, its home
         * (the attached ones, and loose_gpus, those of no known node, spread over the
         * nodes with fewest); each GPU's bit in its home's Avail.gpus. */
        size_t n_gpus;
        uint64_t all_gpus, loose_gpus;
        uint64_t node_gpus[SCHED_NODES_MAX];
        uint64_t home_gpus[SCHED_NODES_MAX];
        uint32_t node_slots[SCHED_NODES_MAX]; /* node_gpus as Avail.gpus bits */
        uint8_t gpu_slot[SCHED_GPUS_MAX];
        /* Shards (read only where shard_gpus is not 0): the GPUs that have some; those
         * with shards in use now (held, not free), how many of each are, and the release
         * that gives each back: that of its holder that ends last (shard_end), the others'
         * give back no GPU. Joining such a GPU is allowed when the joiner ends by
         * shard_horizon, by shard_end, or shard_end is after shard_horizon (the GPU is not
         * free then anyway); shard_horizon 0: only the first (conservative). */
        uint64_t shard_gpus, shard_open;
        uint64_t shard_horizon;
        /* "easy": the GPUs free at shard_horizon once the top job is placed there; joining
         * one of them past it takes it from the top job's leftovers, which is allowed. */
        uint64_t shard_free_at_horizon;
        uint16_t gpu_shards[SCHED_GPUS_MAX];
        /* NVLink (SchedGpu.links, within all_gpus); any_links false: the machine has none. */
        bool any_links;
        uint64_t gpu_links[SCHED_GPUS_MAX];
        uint32_t shard_used[SCHED_GPUS_MAX];
        uint64_t shard_end[SCHED_GPUS_MAX];
        size_t shard_rel[SCHED_GPUS_MAX];

        /* free now; the sets live in the context (SchedContext.free_cpus): 64 of them
         * would be 66 KiB to clear in every pass */
        CpuSet *free_cpus;
        Avail avail_now[SCHED_NODES_MAX];
        uint32_t now_cpus;                   /* sum of avail_now[].cpus */

        Cand *cands;                         /* all pending jobs, priority order */
        size_t n_cands;
        /* Indexes of the RUNNING and SUSPENDED jobs, ascending (in the context): found by
         * pass_collect()'s scan so that pass_build_now() need not read every job again. */
        const uint32_t *active;
        size_t n_active;
        size_t n_groups;                     /* limit groups (limits.c) */
        bool limits;                         /* some project has limits */
        bool ps_hard_only;                   /* no job within the soft MAXPS is eligible */
        size_t n_decisions;
        size_t n_releases;
        size_t n_release_avail;
        bool releases_sorted;
        /* Candidates from here on that the policy left eligible and did not start wait
         * for Priority (cand_reason()): marking them would be one more walk of the whole
         * queue. SIZE_MAX: none. */
        size_t wait_from;
        size_t n_preempted;                  /* SUSPENDED jobs a pass suspended */
        size_t n_preemptors;                 /* waiting jobs that may preempt (Cand.preemptor) */
        int64_t top_preemptor_queue;         /* their highest queue_priority */
        size_t n_victims_taken;              /* suspended in this pass */
};

static inline const SchedJob *cand_job(const SchedPass *p, const Cand *c) {
        return &p->jobs[c->idx];
}

/* The submission of the i-th candidate (priority order): from its sort key, which holds
 * it as the age (ctx->keys[i], in the candidates' order once they are gathered), else
 * from its job. The limits' idle order reads it for every limited job: the job read from
 * all over memory made that a tenth of such a pass. */
static inline uint64_t cand_submit(const SchedPass *p, size_t i) {
        uint32_t age = p->ctx->keys[i].age;

        return age != SORT_AGE_UNKNOWN ? p->now - age : p->jobs[p->cands[i].idx].submit_time;
}

/* c's estimated start (SchedWait.est_start; c one of p->cands): a reservation, an
 * estimate, a begin time, now for a start; SCHED_TIME_INFINITY: unknown. */
static inline uint64_t cand_est(const SchedPass *p, const Cand *c) {
        return c->has_est ? p->ctx->cand_est[c - p->cands] : SCHED_TIME_INFINITY;
}

static inline void cand_set_est(const SchedPass *p, Cand *c, uint64_t est) {
        c->has_est = est != SCHED_TIME_INFINITY;
        if (c->has_est)
                p->ctx->cand_est[c - p->cands] = est;
}

/* c's place among the limits (c one of p->cands; only while p->limits). */
static inline CandGroup *cand_group(const SchedPass *p, const Cand *c) {
        return &p->ctx->cand_groups[c - p->cands];
}

/* c's reason once the policy has planned (c one of p->cands). */
static inline SchedReason cand_reason(const SchedPass *p, const Cand *c) {
        if (c->reason == SCHED_REASON_NONE && !c->started && (size_t) (c - p->cands) >= p->wait_from)
                return SCHED_REASON_PRIORITY;
        return c->reason;
}

/* GREEDY_REALLOC gives NULL for an empty never-allocated array: ask for one at least. */
#define GROW(array, allocated, need) GREEDY_REALLOC(array, allocated, MAX((size_t) (need), (size_t) 1))

/* Bits set. The tree is built for any x86-64, without the popcnt instruction, where
 * __builtin_popcountll() is a call into libgcc's table: a few GPU tests a job made it a
 * tenth of a pass with GPUs. */
static inline unsigned popcount64(uint64_t x) {
        x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
        x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
        x = (x + (x >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
        return (unsigned) ((x * UINT64_C(0x0101010101010101)) >> 56);
}

/* popcount64(x) >= n: for the few a GPU job asks for, their lowest bits cleared
 * (the estimates' walks test it for every segment), else counted. */
static inline bool bits_at_least(uint64_t x, unsigned n) {
        if (n > 4)
                return popcount64(x) >= n;
        for (unsigned k = 1; k < n; k++)
                x &= x - 1;
        return n == 0 || x != 0;
}

static inline uint64_t time_add(uint64_t a, uint64_t b) {
        return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

/* e^x - 1 for 0 <= x <= 50, without libm (sched/ links nothing): e^n by squaring, e^f by
 * its series, to well below the precision a priority needs. */
static inline double expm1_pos(double x) {
        double e_n = 1.0, base = 2.718281828459045, term = 1.0, e_f = 1.0;
        unsigned n = (unsigned) x;
        double f = x - (double) n;

        for (unsigned k = n; k > 0; k >>= 1, base *= base)
                if (k & 1)
                        e_n *= base;
        for (int i = 1; i < 20; i++) {
                term *= f / i;
                e_f += term;
        }
        return e_n * e_f - 1.0;
}

/* Which of the multifactor priority's terms need working out, from the weights alone:
 * said once a pass for pass_collect()'s scan, not again for every job. */
typedef struct PrioShape {
        /* The size or the bypass weight is not +0.0. Both +0.0 (the defaults): their
         * terms are +0.0 for every job (its CPUs and bypass count are finite and not
         * negative), and adding them is adding +0.0 once. */
        bool size_bypass;
        bool xfactor, target;
} PrioShape;

static inline bool weight_adds_zero(double w) {
        return w == 0.0 && !__builtin_signbit(w);
}

static inline PrioShape prio_shape(const SchedWeights *w) {
        return (PrioShape) {
                .size_bypass = !weight_adds_zero(w->size) || !weight_adds_zero(w->bypass),
                .xfactor = w->xfactor != 0.0,
                .target = w->target != 0.0,
        };
}

/* The multifactor priority (sched_priority_multifactor), inline for pass_collect()'s
 * scan of every waiting job: an indirect call a job was a tenth of the scan. Each term
 * in the order of the sum, so that the same bits come out whatever the shape. */
static inline __attribute__((always_inline)) double job_priority_shaped(const SchedWeights *w, PrioShape shape,
                                                                        const SchedJob *j, uint64_t now) {
        uint64_t since = j->eligible_time ?: j->submit_time;
        double age = now > since ? (double) (now - since) : 0.0, prio;

        prio = w->queue * (double) j->queue_priority +
               w->fairshare * j->fairshare +
               w->age * age;
        if (shape.size_bypass)
                prio = prio +
                       w->size * (double) MAX(j->cpus, 1u) +
                       w->bypass * (double) j->bypass_count;
        else
                prio = prio + 0.0; /* (prio + +0.0) + +0.0: a -0.0 comes out +0.0, as ever */

        if (shape.xfactor) {
                uint64_t limit = sched_job_walltime(j);
                double wall = limit == SCHED_TIME_INFINITY ? 0.0 : (double) limit;
                double waited = now > j->submit_time ? (double) (now - j->submit_time) : 0.0;

                /* Without a limit the factor is undefined; 1 is its floor. */
                prio += w->xfactor * (wall > 0.0 ? (waited + wall) / wall : 1.0);
        }

        /* Starvation control: past its queue's target wait, steeply more every minute. */
        if (shape.target && j->target_queue_time > 0) {
                double waited = now > since ? (double) (now - since) : 0.0;
                prio += w->target * expm1_pos(MIN(waited / (double) j->target_queue_time, 50.0));
        }

        return prio - (double) j->nice;
}

static inline double job_priority_weights(const SchedWeights *w, const SchedJob *j, uint64_t now) {
        return job_priority_shaped(w, prio_shape(w), j, now);
}

static inline double job_priority_multifactor(const SchedConfig *c, const SchedJob *j, uint64_t now) {
        return job_priority_weights(&c->weights, j, now);
}

/* resources.c */
int pass_setup_machine(SchedPass *p);
int pass_build_now(SchedPass *p);
/* Finds a placement for j in st (n_nodes entries): fewest nodes, preferred order. */
bool plan_fit(const SchedPass *p, const Avail *st, const SchedJob *j, Plan *ret);
void avail_sub(const SchedPass *p, Avail *st, const Plan *pl);
void avail_add(const SchedPass *p, Avail *st, const Avail *add);
void avail_min(const SchedPass *p, Avail *dst, const Avail *a, const Avail *b);
/* Gives the GPUs of mask back to st, each at its home node. */
void avail_add_gpus(const SchedPass *p, Avail *st, uint64_t mask);
/* The GPUs with shards in use that j may join now: room for its shards, and joining
 * delays nothing planned: it ends by the GPU's last holder, or by shard_horizon, or the
 * GPU is held past shard_horizon anyway or free then all the same (0: only the first). */
uint64_t shards_joinable(const SchedPass *p, const SchedJob *j);
/* Of join, the GPU for j on CPUs of node_mask: one near them, else (not under binding)
 * the lowest; 0: none. */
uint64_t shards_pick(const SchedPass *p, const SchedJob *j, uint64_t join, uint64_t node_mask);
/* plan_fit() for starting c now: within its project's allowed CPUs, if capped. */
bool plan_fit_now(const SchedPass *p, const Avail *st, const Cand *c, Plan *ret);
/* Whether c's project caps its CPUs. */
const CpuSet *cand_allowed_cpus(const SchedPass *p, const Cand *c);
/* Starts c now on pl: picks CPU ids, records the decision and its release. */
int pass_start(SchedPass *p, Cand *c, const Plan *pl);
/* Running and started jobs' releases sorted by end time (ends before now+1 moved there). */
int pass_sort_releases(SchedPass *p);
/* The earliest time j fits after releases, and what is free then once j is placed.
 * false if never (jobs without walltime hold what it needs). */
bool pass_reserve(SchedPass *p, const SchedJob *j, uint64_t *ret_time, Avail *ret_after);

/* profile.c: the availability profile, segment i covering [seg_time[i], seg_time[i+1]) of
 * the context (the last never ends), with per-node and summed availability. */
typedef struct Profile {
        SchedPass *p;
        size_t n;        /* segments */
        /* Where the profile is only ever taken from (the estimates): for c < n_first,
         * first[c] is the start of a segment before which no segment has c CPUs free in
         * all (0: none known yet; SCHED_TIME_INFINITY: no segment has), so that a job of c
         * CPUs need not walk the segments before it. NULL: none kept (conservative gives
         * back too). */
        uint64_t *first;
        size_t n_first;
} Profile;

static inline Avail *seg(const Profile *pr, size_t i) {
        return pr->p->ctx->seg_avail + i * pr->p->n_nodes;
}

/* A zero walltime still occupies its start instant. */
static inline uint64_t job_span(const SchedJob *j) {
        return MAX(sched_job_walltime(j), (uint64_t) 1);
}

/* The shards a job wants (SchedJob.shards; an exclusive job takes whole GPUs). */
static inline unsigned job_shards(const SchedJob *j) {
        return j->exclusive ? 0 : j->shards;
}

/* The GPUs with at least k shards. */
static inline uint64_t gpus_with_shards(const SchedPass *p, unsigned k) {
        uint64_t r = 0;

        for (uint64_t x = p->shard_gpus; x; x &= x - 1)
                if (p->gpu_shards[__builtin_ctzll(x)] >= k)
                        r |= x & -x;
        return r;
}

/* The GPUs a job may be given (SchedJob.gpu_allowed, 0: any; for shards, those with
 * enough). */
static inline uint64_t job_gpu_allowed(const SchedPass *p, const SchedJob *j) {
        uint64_t r = (j->gpu_allowed ?: UINT64_MAX) & p->all_gpus;

        return job_shards(j) ? r & gpus_with_shards(p, job_shards(j)) : r;
}

/* Machine GPU masks to and from node k's Avail.gpus. */
static inline uint32_t gpus_local(const SchedPass *p, size_t k, uint64_t mask) {
        uint32_t r = 0;

        for (mask &= p->home_gpus[k]; mask; mask &= mask - 1)
                r |= UINT32_C(1) << p->gpu_slot[__builtin_ctzll(mask)];
        return r;
}

static inline uint64_t gpus_global(const SchedPass *p, size_t k, uint32_t local) {
        uint64_t r = 0;

        for (uint64_t m = p->home_gpus[k]; local && m; m &= m - 1, local >>= 1)
                if (local & 1)
                        r |= m & -m;
        return r;
}

/* The GPUs free in st, wherever kept. */
static inline uint64_t avail_gpus(const SchedPass *p, const Avail *st) {
        uint64_t g = 0;

        if (p->n_gpus == 0)
                return 0;
        for (size_t k = 0; k < p->n_nodes; k++)
                g |= gpus_global(p, k, st[k].gpus);
        return g;
}

/* Whether planning j reads GPUs: it wants some, or it takes whole nodes and so their
 * GPUs too. */
static inline bool job_plans_gpus(const SchedPass *p, const SchedJob *j) {
        return j->gpus > 0 || (j->exclusive && p->n_gpus > 0);
}

/* The cheap test before a per-node one. */
static inline bool seg_may_fit(const Profile *pr, size_t i, const SchedJob *j) {
        const Avail *t = &pr->p->ctx->seg_total[i];
        return t->cpus >= MAX(j->cpus, 1u) && t->mem >= j->memory;
}

/* And for a job with GPUs: of those it may have, are enough free in segment i? */
static inline bool seg_may_fit_gpus(const Profile *pr, size_t i, uint64_t allowed, unsigned need) {
        return bits_at_least(pr->p->ctx->seg_gpus[i] & allowed, need);
}

void seg_sum(const Profile *pr, size_t i);
/* Room for n segments from the first. */
int profile_grow(Profile *pr, size_t n);
/* The same for a profile about to be made anew: with room before it for splits. */
int profile_reset(Profile *pr, size_t n);
/* From the running (and just started) jobs' releases. */
int profile_build(Profile *pr);
/* The index of the segment starting at t (split out if needed); pr->n for infinity. */
int profile_split(Profile *pr, uint64_t t, size_t *ret);
/* The first segment from from on at which j fits for its whole walltime, with its placement. */
bool profile_find(const Profile *pr, const SchedJob *j, size_t from, size_t *ret_seg, Plan *ret_plan);
/* Does pl fit in segments [s, e)? */
bool profile_has(const Profile *pr, size_t s, size_t e, const Plan *pl);
/* Takes pl out of (take) or gives it back to (!take) segments [s, e). */
void profile_apply(Profile *pr, size_t s, size_t e, const Plan *pl, bool take);
/* The segments [*ret_s, *ret_e) that j holds from start, split out of the profile. */
int profile_span(Profile *pr, uint64_t start, const SchedJob *j, size_t *ret_s, size_t *ret_e);

/* limits.c: throttling limits. Setup groups the jobs by project and user, counts what
 * running jobs hold, splits each user's eligible jobs into idle and blocked, and blocks
 * those that break a limit now. limits_block() says (and records in c) whether starting
 * c now would break one, counting the jobs started so far in the pass; pass_start()
 * charges each start with limits_charge(). */
int pass_limits_setup(SchedPass *p);
/* Its index in config->projects, -1: none. */
int32_t project_index(const SchedConfig *c, uint32_t id);
bool limits_block(SchedPass *p, Cand *c);
void limits_charge(SchedPass *p, const Cand *c);

/* preempt.c: resumes and suspensions before the policy plans (SchedPreempt). */
int pass_preempt(SchedPass *p);
/* What a job a pass suspended still holds on node k: its memory, or with reclaim its
 * resident part, spread over its nodes as its allocation is. */
uint64_t preempted_mem(const SchedPass *p, const SchedJob *j, size_t k);
/* A started or resumed job's CPU ids on pl's nodes, from free (lowest first), within
 * allowed if not NULL; returns false if there are too few. */
bool pick_cpus(const SchedPass *p, const CpuSet *free, const CpuSet *allowed, const Plan *pl,
               SchedAllocation *ret);

/* estimate.c: estimated starts for waiting jobs behind the top one (easy, fcfs); in_order:
 * none before the one above it (no backfilling). */
int pass_estimate(SchedPass *p, bool in_order);

/* All of pass: nothing may touch the world. */
#pragma GCC poison time clock_gettime gettimeofday printf fprintf puts syslog getenv
