/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The "conservative" policy: every eligible job, in priority order, gets the earliest
 * reservation that fits the availability profile left by running jobs and by the
 * reservations of the jobs before it; those whose reservation is now start. A job thus
 * never delays one before it. Each pass rebuilds the profile from scratch: the work is
 * O(queue x profile), meant for queues of hundreds to a few thousand. */
#include <string.h>

#include "sched-internal.h"

typedef struct Profile {
        SchedPass *p;
        size_t n;        /* segments; segment i covers [time[i], time[i+1]), the last never ends */
} Profile;

static Avail *seg(const Profile *pr, size_t i) {
        return pr->p->ctx->seg_avail + i * pr->p->n_nodes;
}

static int profile_grow(Profile *pr, size_t n) {
        SchedContext *ctx = pr->p->ctx;

        if (!GROW(ctx->seg_time, ctx->n_seg_time_alloc, n) ||
            !GROW(ctx->seg_avail, ctx->n_seg_avail_alloc, n * pr->p->n_nodes))
                return -ENOMEM;
        return 0;
}

static int profile_build(Profile *pr) {
        SchedPass *p = pr->p;
        SchedContext *ctx = p->ctx;
        int r;

        r = pass_sort_releases(p);
        if (r < 0)
                return r;
        r = profile_grow(pr, p->n_releases + 1);
        if (r < 0)
                return r;

        ctx->seg_time[0] = p->now;
        memcpy(seg(pr, 0), p->avail_now, sizeof(Avail) * p->n_nodes);
        pr->n = 1;

        for (size_t i = 0; i < p->n_releases; i++) {
                const Release *rel = &ctx->releases[i];

                if (rel->end == SCHED_TIME_INFINITY)
                        break;
                if (rel->end != ctx->seg_time[pr->n - 1]) {
                        ctx->seg_time[pr->n] = rel->end;
                        memcpy(seg(pr, pr->n), seg(pr, pr->n - 1), sizeof(Avail) * p->n_nodes);
                        pr->n++;
                }
                avail_add(p, seg(pr, pr->n - 1), ctx->release_avail + rel->avail_off);
        }
        return 0;
}

/* A zero walltime still occupies its start instant. */
static uint64_t job_span(const SchedJob *j) {
        return MAX(j->walltime, (uint64_t) 1);
}

static bool seg_may_fit(const Profile *pr, size_t i, const SchedJob *j) {
        const Avail *a = seg(pr, i);
        uint64_t cpus = 0, mem = 0;

        for (size_t k = 0; k < pr->p->n_nodes; k++) {
                cpus += a[k].cpus;
                mem += a[k].mem;
        }
        return cpus >= MAX(j->cpus, 1u) && mem >= j->memory;
}

/* The first segment at which j fits for its whole walltime, with its placement. */
static bool profile_find(const Profile *pr, const SchedJob *j, size_t *ret_seg, Plan *ret_plan) {
        const uint64_t *t = pr->p->ctx->seg_time;
        Avail m[SCHED_NODES_MAX];

        for (size_t s = 0; s < pr->n; ) {
                uint64_t end = time_add(t[s], job_span(j));
                size_t k;

                if (!seg_may_fit(pr, s, j)) {
                        s++;
                        continue;
                }
                memcpy(m, seg(pr, s), sizeof(Avail) * pr->p->n_nodes);
                for (k = s + 1; k < pr->n && t[k] < end; k++) {
                        if (!seg_may_fit(pr, k, j))
                                break;
                        avail_min(pr->p, m, m, seg(pr, k));
                }
                if (k < pr->n && t[k] < end) {
                        /* No window containing segment k can work: skip past it. */
                        s = k + 1;
                        continue;
                }
                if (plan_fit(pr->p, m, j, ret_plan)) {
                        *ret_seg = s;
                        return true;
                }
                s++;
        }
        return false;
}

/* Takes pl out of the profile over [time[s], time[s] + walltime). */
static int profile_reserve(Profile *pr, size_t s, const SchedJob *j, const Plan *pl) {
        SchedContext *ctx = pr->p->ctx;
        uint64_t end = time_add(ctx->seg_time[s], job_span(j));
        size_t e;
        int r;

        for (e = s + 1; e < pr->n && ctx->seg_time[e] < end; e++)
                ;
        if (end != SCHED_TIME_INFINITY && (e >= pr->n || ctx->seg_time[e] != end)) {
                /* Split: a new segment starting at end, as free as the one it cuts. */
                r = profile_grow(pr, pr->n + 1);
                if (r < 0)
                        return r;
                memmove(ctx->seg_time + e + 1, ctx->seg_time + e, sizeof(uint64_t) * (pr->n - e));
                memmove(seg(pr, e + 1), seg(pr, e), sizeof(Avail) * pr->p->n_nodes * (pr->n - e));
                ctx->seg_time[e] = end;
                memcpy(seg(pr, e), seg(pr, e - 1), sizeof(Avail) * pr->p->n_nodes);
                pr->n++;
        }
        for (size_t i = s; i < e; i++)
                avail_sub(pr->p, seg(pr, i), pl);
        return 0;
}

static int plan_conservative(SchedPass *p) {
        Profile pr = { .p = p };
        bool first_blocked = true;
        int r;

        r = profile_build(&pr);
        if (r < 0)
                return r;

        for (size_t i = 0; i < p->n_cands; i++) {
                Cand *c = &p->cands[i];
                const SchedJob *j = cand_job(p, c);
                size_t s;
                Plan pl;

                if (c->started || c->reason != SCHED_REASON_NONE)
                        continue;

                if (!profile_find(&pr, j, &s, &pl)) {
                        c->reason = first_blocked ? SCHED_REASON_RESOURCES : SCHED_REASON_PRIORITY;
                        c->est = SCHED_TIME_INFINITY;
                        first_blocked = false;
                        continue;
                }
                if (s == 0) {
                        /* Segment 0 is now, and it mirrors p->avail_now: the plan fits there. */
                        r = pass_start(p, c, &pl);
                        if (r < 0)
                                return r;
                } else {
                        c->reason = first_blocked ? SCHED_REASON_RESOURCES : SCHED_REASON_PRIORITY;
                        c->est = p->ctx->seg_time[s];
                        first_blocked = false;
                }
                r = profile_reserve(&pr, s, j, &pl);
                if (r < 0)
                        return r;
        }
        return 0;
}

const SchedPolicyOps sched_policy_conservative = {
        .name = "conservative",
        .plan = plan_conservative,
};
