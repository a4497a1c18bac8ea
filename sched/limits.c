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

#include <stdlib.h>
#include <string.h>

#include "sched-internal.h"

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

static inline bool group_less(const LimitGroup *a, const LimitGroup *b) {
        return a->proj != b->proj ? a->proj < b->proj : a->user < b->user;
}

static int cmp_group(const void *x, const void *y) {
        const LimitGroup *a = x, *b = y;
        return group_less(a, b) ? -1 : group_less(b, a);
}

static uint32_t group_index(const SchedPass *p, uint32_t proj, uint32_t user) {
        const LimitGroup key = { .proj = proj, .user = user };
        size_t lo = 0, hi = p->n_groups;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (group_less(&p->ctx->groups[mid], &key))
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return (uint32_t) lo; /* every job's group was put there by setup */
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

static void use_add(LimitUse *u, uint64_t cpus, uint64_t mem, uint64_t ps) {
        u->cpus += cpus;
        u->mem = time_add(u->mem, mem);
        u->running++;
        u->ps = time_add(u->ps, ps);
}

static bool over(uint64_t limit, uint64_t have, uint64_t add, Cand *c, SchedReason reason) {
        if (limit == 0 || time_add(have, add) <= limit)
                return false;
        c->reason = reason;
        c->limit = limit;
        c->wanted = time_add(have, add);
        return true;
}

/* One scope's limits (a project's total, or one member's): the first broken names the
 * reason. soft: the soft MAXPS applies in this pass. */
static bool scope_blocks(const SchedLimits *l, const LimitUse *u, const SchedJob *j, bool soft, Cand *c) {
        uint64_t w = sched_job_walltime(j);

        if (l->max_walltime && w > l->max_walltime) {
                c->reason = SCHED_REASON_MAX_WALLTIME;
                c->limit = l->max_walltime;
                c->wanted = w;
                return true;
        }
        return over(l->max_running_jobs, u->running, 1, c, SCHED_REASON_MAX_RUNNING_JOBS) ||
               over(l->max_cpus, u->cpus, MAX(j->cpus, 1u), c, SCHED_REASON_MAX_CPUS) ||
               over(l->max_memory, u->mem, j->memory, c, SCHED_REASON_MAX_MEMORY) ||
               over(l->max_ps_hard, u->ps, job_ps(j), c, SCHED_REASON_MAX_PS_HARD) ||
               (soft && over(l->max_ps_soft, u->ps, job_ps(j), c, SCHED_REASON_MAX_PS_SOFT));
}

static bool blocks(SchedPass *p, Cand *c, bool soft) {
        const SchedProject *pr = &p->config->projects[c->proj];
        const SchedJob *j = cand_job(p, c);

        return scope_blocks(user_limits(pr, j->user_id), &p->ctx->group_use[c->group], j, soft, c) ||
               scope_blocks(&pr->total, &p->ctx->proj_use[c->proj], j, soft, c);
}

bool limits_block(SchedPass *p, Cand *c) {
        if (!p->limits || c->proj < 0)
                return false;
        if (!blocks(p, c, !p->ps_hard_only))
                return false;
        c->est = SCHED_TIME_INFINITY;
        return true;
}

void limits_charge(SchedPass *p, const Cand *c) {
        const SchedJob *j = cand_job(p, c);

        if (!p->limits || c->proj < 0)
                return;
        use_add(&p->ctx->group_use[c->group], MAX(j->cpus, 1u), j->memory, job_ps(j));
        use_add(&p->ctx->proj_use[c->proj], MAX(j->cpus, 1u), j->memory, job_ps(j));
}

static int cmp_idle(const void *x, const void *y) {
        const IdleEntry *a = x, *b = y;

        if (a->group != b->group)
                return a->group < b->group ? -1 : 1;
        if (a->submit != b->submit)
                return a->submit < b->submit ? -1 : 1;
        return a->id < b->id ? -1 : a->id > b->id;
}

/* Each member's eligible jobs: at most MaxIdleJobsPerUser idle, and no more than
 * MaxJobsPerUser with the running ones; the rest blocked. Jobs idle before stay idle;
 * over the limit the newest go; with room the newest blocked come first (HPC2N). */
static int idle_partition(SchedPass *p) {
        SchedContext *ctx = p->ctx;
        size_t n = 0;

        if (!GROW(ctx->idle, ctx->n_idle_alloc, p->n_cands))
                return -ENOMEM;
        for (size_t i = 0; i < p->n_cands; i++) {
                const Cand *c = &p->cands[i];
                if (c->proj >= 0 && c->reason == SCHED_REASON_NONE)
                        ctx->idle[n++] = (IdleEntry) { .group = c->group, .submit = c->submit, .id = c->id,
                                                       .cand = (uint32_t) i };
        }
        qsort(ctx->idle, n, sizeof(IdleEntry), cmp_idle);

        for (size_t a = 0, b; a < n; a = b) {
                const Cand *first = &p->cands[ctx->idle[a].cand];
                const SchedLimits *l = user_limits(&p->config->projects[first->proj], cand_job(p, first)->user_id);
                uint64_t running = ctx->group_use[first->group].running, allowed = UINT64_MAX, idle = 0;
                SchedReason why = SCHED_REASON_MAX_IDLE_JOBS_PER_USER;
                uint64_t limit = l->max_idle_jobs;

                for (b = a; b < n && ctx->idle[b].group == ctx->idle[a].group; b++)
                        if (!cand_job(p, &p->cands[ctx->idle[b].cand])->blocked)
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
                        bool was_blocked = cand_job(p, c)->blocked;

                        if (!was_blocked && idle > allowed) {
                                idle--;
                                was_blocked = true;
                        } else if (was_blocked && idle < allowed) {
                                idle++;
                                was_blocked = false;
                        }
                        if (was_blocked) {
                                c->reason = why;
                                c->limit = limit;
                                c->wanted = why == SCHED_REASON_MAX_JOBS_PER_USER ? running + allowed + 1 : allowed + 1;
                                c->est = SCHED_TIME_INFINITY;
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

                if (c->proj < 0 || c->reason != SCHED_REASON_NONE)
                        continue;
                pr = &p->config->projects[c->proj];
                if (!pr->grant_spent || !cand_job(p, c)->charged)
                        continue;
                c->reason = SCHED_REASON_GRANT;
                c->limit = pr->grant;
                c->wanted = pr->grant_used;
                c->est = SCHED_TIME_INFINITY;
        }
}

int pass_limits_setup(SchedPass *p) {
        SchedContext *ctx = p->ctx;
        const SchedConfig *cfg = p->config;
        size_t n = 0, k = 0;
        bool soft_ok = false;
        int r;

        p->limits = cfg->n_projects > 0 && cfg->projects;
        p->n_groups = 0;
        p->ps_hard_only = false;
        if (!p->limits) {
                for (size_t i = 0; i < p->n_cands; i++)
                        p->cands[i].proj = -1;
                return 0;
        }

        for (size_t i = 0; i < p->n_jobs; i++)
                if (p->jobs[i].state != SCHED_JOB_DONE)
                        n++;
        if (!GROW(ctx->groups, ctx->n_groups_alloc, n) || !GROW(ctx->proj_use, ctx->n_proj_use_alloc, cfg->n_projects))
                return -ENOMEM;
        for (size_t i = 0; i < p->n_jobs; i++) {
                const SchedJob *j = &p->jobs[i];
                int32_t pi;
                if (j->state == SCHED_JOB_DONE || (pi = project_index(cfg, j->project_id)) < 0)
                        continue;
                ctx->groups[k++] = (LimitGroup) { .proj = (uint32_t) pi, .user = j->user_id };
        }
        qsort(ctx->groups, k, sizeof(LimitGroup), cmp_group);
        for (size_t i = 0; i < k; i++)
                if (p->n_groups == 0 || cmp_group(&ctx->groups[p->n_groups - 1], &ctx->groups[i]) != 0)
                        ctx->groups[p->n_groups++] = ctx->groups[i];
        if (!GROW(ctx->group_use, ctx->n_group_use_alloc, p->n_groups))
                return -ENOMEM;
        memset(ctx->group_use, 0, MAX(p->n_groups, (size_t) 1) * sizeof(LimitUse));
        memset(ctx->proj_use, 0, cfg->n_projects * sizeof(LimitUse));

        /* What running jobs hold. */
        for (size_t i = 0; i < p->n_jobs; i++) {
                const SchedJob *j = &p->jobs[i];
                int32_t pi;
                uint64_t ps;
                if ((j->state != SCHED_JOB_RUNNING && j->state != SCHED_JOB_SUSPENDED) ||
                    (pi = project_index(cfg, j->project_id)) < 0)
                        continue;
                ps = running_ps(j, p->now);
                use_add(&ctx->group_use[group_index(p, (uint32_t) pi, j->user_id)], MAX(j->cpus, 1u), j->memory, ps);
                use_add(&ctx->proj_use[pi], MAX(j->cpus, 1u), j->memory, ps);
        }

        for (size_t i = 0; i < p->n_cands; i++) {
                Cand *c = &p->cands[i];
                const SchedJob *j = cand_job(p, c);
                c->proj = project_index(cfg, j->project_id);
                if (c->proj >= 0)
                        c->group = group_index(p, (uint32_t) c->proj, j->user_id);
        }

        grant_block(p);
        r = idle_partition(p);
        if (r < 0)
                return r;

        /* MAXPS between soft and hard: only when nothing within every soft limit is
         * eligible (HPC2N). Decided once, on what runs now. */
        for (size_t i = 0; i < p->n_cands && !soft_ok; i++) {
                Cand c = p->cands[i];
                if (c.reason == SCHED_REASON_NONE && (c.proj < 0 || !blocks(p, &c, true)))
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
