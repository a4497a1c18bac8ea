/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Throttling limits, as Maui applies them and HPC2N publishes them: per project and per
 * member of a project, on CPUs, memory and jobs in use, on idle jobs (the rest of a
 * user's eligible jobs are blocked, and the newest blocked job is promoted as room frees
 * up), on processor-seconds (MAXPS, soft and hard) and on walltime. A job a limit holds
 * back waits in the blocked part of the queue with the limit's name; it is never refused,
 * since the limit may allow it later. Checked at start time, against what running jobs
 * and the jobs started earlier in the same pass hold, so a job waiting for resources
 * does not take a limit's headroom from the jobs behind it. A project whose grant is
 * spent (the caller says so) holds its charged jobs back the same way. */

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "sched-internal.h"
#include "sort.h"

static uint64_t mul_sat(uint64_t a, uint64_t b) {
        return a != 0 && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

int32_t project_index(const SchedConfig *c, uint32_t id) {
        size_t lo = 0, hi = c->n_projects;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (c->projects[mid].id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < c->n_projects && c->projects[lo].id == id ? (int32_t) lo : -1;
}

static const SchedLimits *user_limits(const SchedProject *pr, uint32_t user) {
        size_t lo = 0, hi = pr->n_users;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (pr->users[mid].user_id < user)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < pr->n_users && pr->users[lo].user_id == user ? &pr->users[lo].limits : &pr->per_user;
}

static inline uint64_t group_key(uint32_t proj, uint32_t user) {
        return (uint64_t) proj << 32 | user;
}

static inline size_t group_slot(uint64_t key, size_t mask) {
        /* Fibonacci hashing: users and projects are small consecutive numbers. */
        return (size_t) ((key * UINT64_C(11400714819323198485)) >> 20) & mask;
}

/* Makes the table twice the size it must at least be, and puts the groups back. */
static int group_hash_grow(SchedContext *ctx, size_t n_groups) {
        size_t size = 1024;
        uint32_t *h;

        while (size < 2 * (n_groups + 1))
                size *= 2;
        h = new0(uint32_t, size);
        if (!h)
                return -ENOMEM;
        for (size_t g = 0; g < n_groups; g++) {
                size_t i = group_slot(group_key(ctx->groups[g].proj, ctx->groups[g].user), size - 1);
                while (h[i] != 0)
                        i = (i + 1) & (size - 1);
                h[i] = (uint32_t) g + 1;
        }
        free(ctx->group_hash);
        ctx->group_hash = h;
        ctx->n_group_hash = size;
        return 0;
}

/* The (project, user) pair's group, made when new. Linear in the jobs per pass, where
 * sorting every job's pair was n log n (and most of a pass with limits). */
static int group_add(SchedPass *p, uint32_t proj, uint32_t user, uint32_t *ret) {
        SchedContext *ctx = p->ctx;
        uint64_t key = group_key(proj, user);
        size_t mask = ctx->n_group_hash - 1, i = group_slot(key, mask);

        for (;; i = (i + 1) & mask) {
                uint32_t g = ctx->group_hash[i];
                if (g == 0)
                        break;
                if (group_key(ctx->groups[g - 1].proj, ctx->groups[g - 1].user) == key) {
                        *ret = g - 1;
                        return 0;
                }
        }
        if (!GROW(ctx->groups, ctx->n_groups_alloc, p->n_groups + 1))
                return -ENOMEM;
        ctx->groups[p->n_groups] = (LimitGroup) { .proj = proj, .user = user };
        ctx->group_hash[i] = (uint32_t) ++p->n_groups;
        *ret = (uint32_t) p->n_groups - 1;
        if (2 * (p->n_groups + 1) > ctx->n_group_hash)
                return group_hash_grow(ctx, p->n_groups);
        return 0;
}

static uint64_t job_ps(const SchedJob *j) {
        uint64_t w = sched_job_walltime(j);
        return w == SCHED_TIME_INFINITY ? UINT64_MAX : mul_sat(w, MAX(j->cpus, 1u));
}

/* A running job counts with what is left of its walltime. */
static uint64_t running_ps(const SchedJob *j, uint64_t now) {
        uint64_t w = sched_job_walltime(j), end;

        if (w == SCHED_TIME_INFINITY)
                return UINT64_MAX;
        end = time_add(j->start_time, w);
        return end > now ? mul_sat(end - now, MAX(j->cpus, 1u)) : 0;
}

static void use_add(LimitUse *u, uint64_t cpus, uint64_t mem, uint64_t gpus, uint64_t ps) {
        u->cpus += cpus;
        u->mem = time_add(u->mem, mem);
        u->gpus += gpus;
        u->running++;
        u->ps = time_add(u->ps, ps);
}

static bool over(uint64_t limit, uint64_t have, uint64_t add, Cand *c, CandLimit *why, SchedReason reason) {
        if (limit == 0 || time_add(have, add) <= limit)
                return false;
        c->reason = reason;
        why->limit = limit;
        why->wanted = time_add(have, add);
        return true;
}

/* One scope's limits (a project's total, or one member's): the first broken names the
 * reason. soft: the soft MAXPS applies in this pass. */
static bool scope_blocks(const SchedLimits *l, const LimitUse *u, const SchedJob *j, bool soft, Cand *c,
                         CandLimit *why) {
        uint64_t w = sched_job_walltime(j);

        if (l->max_walltime && w > l->max_walltime) {
                c->reason = SCHED_REASON_MAX_WALLTIME;
                why->limit = l->max_walltime;
                why->wanted = w;
                return true;
        }
        return over(l->max_running_jobs, u->running, 1, c, why, SCHED_REASON_MAX_RUNNING_JOBS) ||
               over(l->max_cpus, u->cpus, MAX(j->cpus, 1u), c, why, SCHED_REASON_MAX_CPUS) ||
               over(l->max_memory, u->mem, j->memory, c, why, SCHED_REASON_MAX_MEMORY) ||
               (j->gpus > 0 && over(l->max_gpus, u->gpus, j->gpus, c, why, SCHED_REASON_MAX_GPUS)) ||
               over(l->max_ps_hard, u->ps, job_ps(j), c, why, SCHED_REASON_MAX_PS_HARD) ||
               (soft && over(l->max_ps_soft, u->ps, job_ps(j), c, why, SCHED_REASON_MAX_PS_SOFT));
}

/* c may be a copy (a trial), g its place among the limits: the limit's numbers go to
 * why, not to c's place. */
static bool blocks(SchedPass *p, Cand *c, const CandGroup *g, CandLimit *why, bool soft) {
        const SchedProject *pr = &p->config->projects[g->proj];
        const SchedJob *j = cand_job(p, c);

        return scope_blocks(user_limits(pr, g->user), &p->ctx->group_use[g->group], j, soft, c, why) ||
               scope_blocks(&pr->total, &p->ctx->proj_use[g->proj], j, soft, c, why);
}

static CandLimit *cand_limit(SchedPass *p, const Cand *c) {
        assert(c >= p->cands && c < p->cands + p->n_cands);
        return &p->ctx->cand_limits[c - p->cands];
}

bool limits_block(SchedPass *p, Cand *c) {
        if (!p->limits || cand_group(p, c)->proj < 0)
                return false;
        if (!blocks(p, c, cand_group(p, c), cand_limit(p, c), !p->ps_hard_only))
                return false;
        cand_set_est(p, c, SCHED_TIME_INFINITY);
        return true;
}

void limits_charge(SchedPass *p, const Cand *c) {
        const SchedJob *j = cand_job(p, c);
        const CandGroup *g;

        if (!p->limits || cand_group(p, c)->proj < 0)
                return;
        g = cand_group(p, c);
        use_add(&p->ctx->group_use[g->group], MAX(j->cpus, 1u), j->memory, j->gpus, job_ps(j));
        use_add(&p->ctx->proj_use[g->proj], MAX(j->cpus, 1u), j->memory, j->gpus, job_ps(j));
}

static inline bool idle_less(const void *ctx, const IdleEntry *a, const IdleEntry *b) {
        if (a->group != b->group)
                return a->group < b->group;
        if (a->submit != b->submit)
                return a->submit < b->submit;
        return a->id < b->id;
}
DEFINE_MERGE_SORT(sort_idle, IdleEntry, idle_less);

/* Each member's eligible jobs: at most MaxIdleJobsPerUser idle, and no more than
 * MaxJobsPerUser with the running ones; the rest blocked. Jobs idle before stay idle;
 * over the limit the newest go; with room the newest blocked come first (HPC2N). */
static int idle_partition(SchedPass *p) {
        SchedContext *ctx = p->ctx;
        size_t n = 0;

        if (!GROW(ctx->idle, ctx->n_idle_alloc, p->n_cands) || !GROW(ctx->idle_tmp, ctx->n_idle_tmp_alloc, p->n_cands) ||
            !GROW(ctx->group_count, ctx->n_group_count_alloc, p->n_groups))
                return -ENOMEM;
        /* By group with a counting sort, each group's in priority order, which is nearly
         * submission order (age dominates within one user's jobs of one queue): so the
         * merge sort to (group, submission) meets runs already in order. */
        memset(ctx->group_count, 0, MAX(p->n_groups, (size_t) 1) * sizeof(uint32_t));
        for (size_t i = 0; i < p->n_cands; i++) {
                const Cand *c = &p->cands[i];
                const CandGroup *g = &ctx->cand_groups[i];
                if (g->proj >= 0 && c->reason == SCHED_REASON_NONE) {
                        ctx->group_count[g->group]++;
                        n++;
                }
        }
        for (size_t g = 0, at = 0; g < p->n_groups; g++) {
                uint32_t count = ctx->group_count[g];
                ctx->group_count[g] = (uint32_t) at;
                at += count;
        }
        for (size_t i = 0; i < p->n_cands; i++) {
                const Cand *c = &p->cands[i];
                const CandGroup *g = &ctx->cand_groups[i];
                if (g->proj >= 0 && c->reason == SCHED_REASON_NONE)
                        ctx->idle[ctx->group_count[g->group]++] =
                                (IdleEntry) { .group = g->group, .submit = cand_submit(p, i), .id = c->id, .cand = (uint32_t) i };
        }
        (void) sort_idle(ctx->idle, ctx->idle_tmp, n, NULL);

        for (size_t a = 0, b; a < n; a = b) {
                const CandGroup *first = &ctx->cand_groups[ctx->idle[a].cand];
                const SchedLimits *l = user_limits(&p->config->projects[first->proj], first->user);
                uint64_t running = ctx->group_use[first->group].running, allowed = UINT64_MAX, idle = 0;
                SchedReason why = SCHED_REASON_MAX_IDLE_JOBS_PER_USER;
                uint64_t limit = l->max_idle_jobs;

                for (b = a; b < n && ctx->idle[b].group == ctx->idle[a].group; b++)
                        if (!p->cands[ctx->idle[b].cand].was_blocked)
                                idle++;
                if (l->max_idle_jobs)
                        allowed = l->max_idle_jobs;
                if (l->max_jobs && (l->max_jobs > running ? l->max_jobs - running : 0) < allowed) {
                        allowed = l->max_jobs > running ? l->max_jobs - running : 0;
                        why = SCHED_REASON_MAX_JOBS_PER_USER;
                        limit = l->max_jobs;
                }
                if (allowed == UINT64_MAX)
                        continue;

                /* Newest first, both ways. */
                for (size_t k = b; k > a; k--) {
                        Cand *c = &p->cands[ctx->idle[k - 1].cand];
                        bool was_blocked = c->was_blocked;

                        if (!was_blocked && idle > allowed) {
                                idle--;
                                was_blocked = true;
                        } else if (was_blocked && idle < allowed) {
                                idle++;
                                was_blocked = false;
                        }
                        if (was_blocked) {
                                c->reason = why;
                                *cand_limit(p, c) = (CandLimit) {
                                        .limit = limit,
                                        .wanted = why == SCHED_REASON_MAX_JOBS_PER_USER ? running + allowed + 1
                                                                                        : allowed + 1,
                                };
                                cand_set_est(p, c, SCHED_TIME_INFINITY);
                        }
                }
        }
        return 0;
}

/* A project whose grant is spent starts none of its charged jobs: they wait blocked
 * with the grant's numbers, before the idle partition, so they take no member's idle
 * slot (they cannot start until the next period or a larger grant). */
static void grant_block(SchedPass *p) {
        for (size_t i = 0; i < p->n_cands; i++) {
                Cand *c = &p->cands[i];
                const SchedProject *pr;

                if (p->ctx->cand_groups[i].proj < 0 || c->reason != SCHED_REASON_NONE)
                        continue;
                pr = &p->config->projects[p->ctx->cand_groups[i].proj];
                if (!pr->grant_spent || !cand_job(p, c)->charged)
                        continue;
                c->reason = SCHED_REASON_GRANT;
                *cand_limit(p, c) = (CandLimit) { .limit = pr->grant, .wanted = pr->grant_used };
                cand_set_est(p, c, SCHED_TIME_INFINITY);
        }
}

int pass_limits_setup(SchedPass *p) {
        SchedContext *ctx = p->ctx;
        const SchedConfig *cfg = p->config;
        bool soft_ok = false;
        int r;

        p->limits = cfg->n_projects > 0 && cfg->projects;
        p->n_groups = 0;
        p->ps_hard_only = false;
        if (!p->limits)
                return 0; /* and every candidate's proj is -1 */

        if (!GROW(ctx->proj_use, ctx->n_proj_use_alloc, cfg->n_projects) ||
            !GROW(ctx->cand_limits, ctx->n_cand_limits_alloc, p->n_cands))
                return -ENOMEM;
        if (ctx->n_group_hash == 0) {
                r = group_hash_grow(ctx, 0);
                if (r < 0)
                        return r;
        } else
                memset(ctx->group_hash, 0, ctx->n_group_hash * sizeof(uint32_t));
        memset(ctx->proj_use, 0, cfg->n_projects * sizeof(LimitUse));

        /* The groups of the waiting jobs (a job DONE is neither waiting nor active). */
        for (size_t i = 0; i < p->n_cands; i++) {
                CandGroup *g = &ctx->cand_groups[i];
                if (g->proj >= 0) {
                        r = group_add(p, (uint32_t) g->proj, g->user, &g->group);
                        if (r < 0)
                                return r;
                }
        }
        if (!GROW(ctx->group_use, ctx->n_group_use_alloc, p->n_groups))
                return -ENOMEM;
        memset(ctx->group_use, 0, MAX(p->n_groups, (size_t) 1) * sizeof(LimitUse));

        /* What running jobs hold; a group of running jobs only is made here. */
        for (size_t x = 0; x < p->n_active; x++) {
                const SchedJob *j = &p->jobs[p->active[x]];
                int32_t pi = project_index(cfg, j->project_id);
                size_t before = p->n_groups;
                uint64_t ps;
                uint32_t g;

                if (pi < 0)
                        continue;
                r = group_add(p, (uint32_t) pi, j->user_id, &g);
                if (r < 0)
                        return r;
                if (p->n_groups > before) {
                        if (!GROW(ctx->group_use, ctx->n_group_use_alloc, p->n_groups))
                                return -ENOMEM;
                        ctx->group_use[g] = (LimitUse) {};
                }
                ps = running_ps(j, p->now);
                use_add(&ctx->group_use[g], MAX(j->cpus, 1u), j->memory, j->gpus, ps);
                use_add(&ctx->proj_use[pi], MAX(j->cpus, 1u), j->memory, j->gpus, ps);
        }

        grant_block(p);
        r = idle_partition(p);
        if (r < 0)
                return r;

        /* MAXPS between soft and hard: only when nothing within every soft limit is
         * eligible (HPC2N). Decided once, on what runs now. */
        for (size_t i = 0; i < p->n_cands && !soft_ok; i++) {
                Cand c = p->cands[i];
                const CandGroup *g = &ctx->cand_groups[i];
                CandLimit why;
                if (c.reason == SCHED_REASON_NONE && (g->proj < 0 || !blocks(p, &c, g, &why, true)))
                        soft_ok = true;
        }
        p->ps_hard_only = !soft_ok;

        /* What breaks a limit even alone waits blocked; the policies check the rest as
         * they start jobs. */
        for (size_t i = 0; i < p->n_cands; i++) {
                Cand *c = &p->cands[i];
                if (c->reason == SCHED_REASON_NONE)
                        (void) limits_block(p, c);
        }
        return 0;
}
