/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The "conservative" policy (Mu'alem & Feitelson): every eligible job holds a reservation,
 * and no job ever moves one before it later.
 *
 * The context remembers each waiting job's reservation (its start and what it takes from
 * each node) from one pass to the next. A pass:
 *   1. builds the availability profile from the running jobs;
 *   2. puts every remembered reservation back, in priority order, where it still fits
 *      (one that no longer does - a job overran its limit, the machine changed - is
 *      dropped and its job planned afresh below; one whose start passed without a pass
 *      gets the earliest slot in its turn);
 *   3. in priority order, takes each job's own reservation out and gives it the earliest
 *      slot that fits. Its old slot is still free - everything else in the profile was
 *      there when that slot was chosen, and every job moved before it had to fit around
 *      it - so a job only ever moves earlier ("compression"), and a job without a
 *      reservation (new, released, or dropped in 2) fits around all the others;
 *   4. those whose slot is now start; the others' slots are remembered.
 * Re-planning from scratch instead would let a greedy placement on several NUMA nodes
 * push a reservation later. A fresh context (corrald restarted) starts from step 3.
 * The work is O(queue x profile): meant for queues of hundreds to a few thousand. */
#include <string.h>

#include "sched-internal.h"
#include "sort.h"

/* Remembered reservations, sorted by job id, double-buffered in the context. */
static Resv *resv_find(const SchedContext *ctx, uint64_t id) {
        size_t lo = 0, hi = ctx->n_resv;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (ctx->resv[mid].id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < ctx->n_resv && ctx->resv[lo].id == id ? &ctx->resv[lo] : NULL;
}

static void resv_plan(const SchedContext *ctx, const Resv *rv, Plan *ret) {
        *ret = (Plan) { .gpus = rv->gpus };
        for (size_t i = 0; i < rv->n_parts; i++) {
                const ResvPart *x = &ctx->resv_parts[rv->parts + i];
                ret->node_mask |= UINT64_C(1) << x->node;
                ret->cpus[x->node] = x->cpus;
                ret->mem[x->node] = x->mem;
        }
}

/* Appends pl's per-node holdings to a parts pool; *ret_off: where they start. */
static int parts_append(ResvPart **parts, size_t *n_used, size_t *n_alloc, size_t n_nodes,
                        const Plan *pl, uint32_t *ret_off, uint32_t *ret_n) {
        unsigned n = popcount64(pl->node_mask);

        if (!GROW(*parts, *n_alloc, *n_used + n))
                return -ENOMEM;
        *ret_off = (uint32_t) *n_used;
        *ret_n = n;
        for (size_t k = 0; k < n_nodes; k++)
                if (pl->node_mask & (UINT64_C(1) << k))
                        (*parts)[(*n_used)++] = (ResvPart) {
                                .node = (uint8_t) k,
                                .cpus = pl->cpus[k],
                                .mem = pl->mem[k],
                        };
        return 0;
}

/* Points rv (of the last pass's table) at new parts describing pl. */
static int resv_set_parts(SchedContext *ctx, Resv *rv, size_t n_nodes, const Plan *pl) {
        rv->gpus = pl->gpus;
        return parts_append(&ctx->resv_parts, &ctx->n_resv_parts, &ctx->n_resv_parts_alloc, n_nodes, pl,
                            &rv->parts, &rv->n_parts);
}

static int resv_remember(SchedPass *p, const SchedJob *j, uint64_t start, const Plan *pl) {
        SchedContext *ctx = p->ctx;
        Resv rv = { .id = j->id, .start = start, .gpus = pl->gpus };
        int r;

        if (!GROW(ctx->resv_next, ctx->n_resv_next_alloc, ctx->n_resv_next + 1))
                return -ENOMEM;
        r = parts_append(&ctx->resv_parts_next, &ctx->n_resv_parts_next, &ctx->n_resv_parts_next_alloc,
                         p->n_nodes, pl, &rv.parts, &rv.n_parts);
        if (r < 0)
                return r;
        ctx->resv_next[ctx->n_resv_next++] = rv;
        return 0;
}

/* Remembers rv again as it is. */
static int resv_keep(SchedContext *ctx, const Resv *rv) {
        if (!GROW(ctx->resv_next, ctx->n_resv_next_alloc, ctx->n_resv_next + 1) ||
            !GROW(ctx->resv_parts_next, ctx->n_resv_parts_next_alloc, ctx->n_resv_parts_next + rv->n_parts))
                return -ENOMEM;
        ctx->resv_next[ctx->n_resv_next] = *rv;
        ctx->resv_next[ctx->n_resv_next++].parts = ctx->n_resv_parts_next;
        memcpy(ctx->resv_parts_next + ctx->n_resv_parts_next, ctx->resv_parts + rv->parts,
               sizeof(ResvPart) * rv->n_parts);
        ctx->n_resv_parts_next += rv->n_parts;
        return 0;
}

static inline bool resv_less(const void *ctx _unused_, const Resv *a, const Resv *b) {
        return a->id < b->id;
}
DEFINE_MERGE_SORT(sort_resv, Resv, resv_less);

static int resv_commit(SchedContext *ctx) {
        if (!GROW(ctx->resv_tmp, ctx->n_resv_tmp_alloc, ctx->n_resv_next))
                return -ENOMEM;
        sort_resv(ctx->resv_next, ctx->resv_tmp, ctx->n_resv_next, NULL);

        SWAP_TWO(ctx->resv, ctx->resv_next);
        SWAP_TWO(ctx->n_resv_alloc, ctx->n_resv_next_alloc);
        SWAP_TWO(ctx->resv_parts, ctx->resv_parts_next);
        SWAP_TWO(ctx->n_resv_parts_alloc, ctx->n_resv_parts_next_alloc);
        ctx->n_resv = ctx->n_resv_next;
        ctx->n_resv_parts = ctx->n_resv_parts_next;
        ctx->n_resv_next = ctx->n_resv_parts_next = 0;
        return 0;
}

static bool planned(const Cand *c) {
        return !c->started && c->reason == SCHED_REASON_NONE;
}

/* Step 2, one at a time, in priority order: each remembered reservation that still fits
 * goes back into the profile; held[i] says which did. A job whose slot has passed
 * without a pass to start it (a job killed at its limit took a moment to go) is due:
 * it gets the earliest slot left by the jobs before it, so a few seconds' delay does not
 * put it behind every job planned after it; those that no longer fit are planned
 * afresh after it. */
static int reinstate_each(Profile *pr, bool *held) {
        SchedPass *p = pr->p;
        SchedContext *ctx = p->ctx;
        int r;

        for (size_t i = 0; i < p->n_cands; i++) {
                Cand *c = &p->cands[i];
                const SchedJob *j = cand_job(p, c);
                Resv *rv;
                size_t s, e;
                Plan pl;

                held[i] = false;
                if (!planned(c))
                        continue;
                rv = resv_find(ctx, j->id);
                if (!rv)
                        continue;
                if (rv->start < p->now) {
                        if (!profile_find(pr, j, 0, &s, &pl))
                                continue;
                        /* The entry now describes the new slot; phase 3 treats it as any other. */
                        rv->start = ctx->seg_time[s];
                        r = resv_set_parts(ctx, rv, p->n_nodes, &pl);
                        if (r < 0)
                                return r;
                } else {
                        /* GPUs it may no longer have count as a changed machine too. */
                        bool bad = (rv->gpus & ~job_gpu_allowed(p, j)) != 0;
                        for (size_t x = 0; x < rv->n_parts; x++)
                                bad = bad || ctx->resv_parts[rv->parts + x].node >= p->n_nodes;
                        if (bad) /* the machine changed */
                                continue;
                        resv_plan(ctx, rv, &pl);
                }
                r = profile_span(pr, rv->start, j, &s, &e);
                if (r < 0)
                        return r;
                if (!profile_has(pr, s, e, &pl))
                        continue;
                profile_apply(pr, s, e, &pl, true);
                held[i] = true;
                ctx->resv_of[i] = (uint32_t) (rv - ctx->resv);
                cand_set_est(p, c, rv->start);
        }
        return 0;
}

static inline bool event_less(const void *ctx _unused_, const ProfEvent *a, const ProfEvent *b) {
        /* At one instant what ends is free before what starts takes. */
        return a->t != b->t ? a->t < b->t : a->take < b->take;
}
DEFINE_MERGE_SORT(sort_events, ProfEvent, event_less);

/* Step 2, the usual case: running jobs' ends and all remembered reservations swept into
 * the profile at once, O((jobs) log + segments) instead of a split per reservation.
 * false (and pr->n == 0) if some reservation no longer fits: then reinstate_each(). */
static int reinstate_all(Profile *pr, bool *held, bool *ret_ok) {
        SchedPass *p = pr->p;
        SchedContext *ctx = p->ctx;
        size_t n = 0;
        int r;

        r = pass_sort_releases(p);
        if (r < 0)
                return r;
        if (!GROW(ctx->events, ctx->n_events_alloc, p->n_releases + 2 * p->n_cands) ||
            !GROW(ctx->events_tmp, ctx->n_events_tmp_alloc, p->n_releases + 2 * p->n_cands))
                return -ENOMEM;

        for (size_t i = 0; i < p->n_releases; i++)
                if (ctx->releases[i].end != SCHED_TIME_INFINITY)
                        ctx->events[n++] = (ProfEvent) { .t = ctx->releases[i].end, .ref = i, .release = true };
        for (size_t i = 0; i < p->n_cands; i++) {
                Cand *c = &p->cands[i];
                const Resv *rv;
                uint64_t end;

                held[i] = false;
                if (!planned(c))
                        continue;
                rv = resv_find(ctx, c->id);
                if (!rv)
                        continue;
                if (rv->start < p->now) {
                        *ret_ok = false; /* due: needs its turn in priority order */
                        return 0;
                }
                if (rv->gpus & ~job_gpu_allowed(p, cand_job(p, c))) {
                        *ret_ok = false; /* the machine changed */
                        return 0;
                }
                for (size_t x = 0; x < rv->n_parts; x++)
                        if (ctx->resv_parts[rv->parts + x].node >= p->n_nodes) {
                                *ret_ok = false; /* the machine changed */
                                return 0;
                        }
                held[i] = true;
                ctx->resv_of[i] = (uint32_t) (rv - ctx->resv);
                cand_set_est(p, c, rv->start);
                ctx->events[n++] = (ProfEvent) { .t = rv->start, .ref = i, .take = true };
                end = time_add(rv->start, job_span(cand_job(p, c)));
                if (end != SCHED_TIME_INFINITY)
                        ctx->events[n++] = (ProfEvent) { .t = end, .ref = i };
        }
        sort_events(ctx->events, ctx->events_tmp, n, NULL);

        r = profile_reset(pr, n + 1);
        if (r < 0)
                return r;
        ctx->seg_time[0] = p->now;
        memcpy(seg(pr, 0), p->avail_now, sizeof(Avail) * p->n_nodes);
        pr->n = 1;
        for (size_t i = 0; i < n; i++) {
                const ProfEvent *ev = &ctx->events[i];
                Avail *a;

                if (ev->t != ctx->seg_time[pr->n - 1]) {
                        seg_sum(pr, pr->n - 1);
                        ctx->seg_time[pr->n] = ev->t;
                        memcpy(seg(pr, pr->n), seg(pr, pr->n - 1), sizeof(Avail) * p->n_nodes);
                        pr->n++;
                }
                a = seg(pr, pr->n - 1);
                if (ev->release)
                        avail_add(p, a, ctx->release_avail + ctx->releases[ev->ref].avail_off);
                else {
                        const Resv *rv = &ctx->resv[ctx->resv_of[ev->ref]];
                        const ResvPart *x = ctx->resv_parts + rv->parts;

                        if (rv->gpus) {
                                if (!ev->take)
                                        avail_add_gpus(p, a, rv->gpus);
                                else if (rv->gpus & ~avail_gpus(p, a)) {
                                        *ret_ok = false;
                                        pr->n = 0;
                                        return 0;
                                } else
                                        for (size_t k = 0; k < p->n_nodes; k++)
                                                a[k].gpus &= ~gpus_local(p, k, rv->gpus);
                        }

                        for (size_t q = 0; q < rv->n_parts; q++) {
                                Avail *an = &a[x[q].node];

                                if (!ev->take) {
                                        an->cpus = MIN(an->cpus + x[q].cpus, p->node_cpus[x[q].node]);
                                        an->mem = MIN(time_add(an->mem, x[q].mem), p->node_mem[x[q].node]);
                                } else if (an->cpus < x[q].cpus || an->mem < x[q].mem) {
                                        *ret_ok = false;
                                        pr->n = 0;
                                        return 0;
                                } else {
                                        an->cpus -= x[q].cpus;
                                        an->mem -= x[q].mem;
                                }
                        }
                }
        }
        seg_sum(pr, pr->n - 1);
        *ret_ok = true;
        return 0;
}

/* The first instant from now at which the profile has more of anything free than the
 * last pass left: a job reserved to end by then cannot have a better slot now. */
static uint64_t first_gain(const Profile *pr) {
        const SchedPass *p = pr->p;
        const SchedContext *ctx = p->ctx;
        size_t i = 0, j = 0;
        uint64_t t = p->now;

        if (ctx->n_prev == 0 || ctx->prev_nodes != p->n_nodes || ctx->prev_time[0] > p->now)
                return p->now;
        /* The last pass's segment holding now. */
        while (j + 1 < ctx->n_prev && ctx->prev_time[j + 1] <= t)
                j++;
        for (;;) {
                const Avail *a = seg(pr, i), *b = ctx->prev_avail + j * p->n_nodes;
                uint64_t next_a, next_b;

                for (size_t k = 0; k < p->n_nodes; k++)
                        if (a[k].cpus > b[k].cpus || a[k].mem > b[k].mem || (a[k].gpus & ~b[k].gpus))
                                return t;
                next_a = i + 1 < pr->n ? ctx->seg_time[i + 1] : SCHED_TIME_INFINITY;
                next_b = j + 1 < ctx->n_prev ? ctx->prev_time[j + 1] : SCHED_TIME_INFINITY;
                t = MIN(next_a, next_b);
                if (t == SCHED_TIME_INFINITY)
                        return SCHED_TIME_INFINITY;
                if (next_a == t)
                        i++;
                if (next_b == t)
                        j++;
        }
}

static int profile_save(const Profile *pr) {
        SchedContext *ctx = pr->p->ctx;

        if (!GROW(ctx->prev_time, ctx->n_prev_time_alloc, pr->n) ||
            !GROW(ctx->prev_avail, ctx->n_prev_avail_alloc, pr->n * pr->p->n_nodes))
                return -ENOMEM;
        memcpy(ctx->prev_time, ctx->seg_time, sizeof(uint64_t) * pr->n);
        memcpy(ctx->prev_avail, ctx->seg_avail, sizeof(Avail) * pr->n * pr->p->n_nodes);
        ctx->n_prev = pr->n;
        ctx->prev_nodes = pr->p->n_nodes;
        return 0;
}

static bool plan_equal(const SchedPass *p, const Plan *a, const Plan *b) {
        if (a->node_mask != b->node_mask || a->gpus != b->gpus)
                return false;
        for (size_t k = 0; k < p->n_nodes; k++)
                if (a->cpus[k] != b->cpus[k] || a->mem[k] != b->mem[k])
                        return false;
        return true;
}

/* A shard job joining a GPU already shared, now: only one whose holders end no sooner
 * than it (its GPU comes back when it did, so no reservation moves), with CPUs and
 * memory the profile has for its whole walltime from now. */
static bool join_shards(SchedPass *p, const Profile *pr, const SchedJob *j, Plan *ret) {
        uint64_t join, g;
        SchedJob cpus_only;
        size_t s;

        if (!job_shards(j) || j->gpus != 1 || !(join = shards_joinable(p, j)))
                return false;
        cpus_only = *j;
        cpus_only.gpus = 0;
        cpus_only.shards = 0;
        if (!profile_find(pr, &cpus_only, 0, &s, ret) || s != 0)
                return false;
        g = shards_pick(p, j, join, ret->node_mask);
        if (!g)
                return false;
        ret->gpus = g;
        return true;
}

static int plan_conservative(SchedPass *p) {
        SchedContext *ctx = p->ctx;
        Profile pr = { .p = p };
        bool first_blocked = true, ok = false;
        uint64_t gain;
        int r;

        if (!GROW(ctx->resv_held, ctx->n_resv_held_alloc, p->n_cands) ||
            !GROW(ctx->resv_of, ctx->n_resv_of_alloc, p->n_cands))
                return -ENOMEM;
        /* What the context remembers is only good if the last pass was ours. */
        if (ctx->resv_pass + 1 != ctx->n_passes) {
                ctx->n_resv = ctx->n_resv_parts = 0;
                ctx->n_prev = 0;
        }
        r = reinstate_all(&pr, ctx->resv_held, &ok);
        if (r < 0)
                return r;
        if (!ok) {
                r = profile_build(&pr);
                if (r < 0)
                        return r;
                r = reinstate_each(&pr, ctx->resv_held);
                if (r < 0)
                        return r;
        }
        gain = first_gain(&pr);

        ctx->n_resv_next = ctx->n_resv_parts_next = 0;
        for (size_t i = 0; i < p->n_cands; i++) {
                Cand *c = &p->cands[i];
                const SchedJob *j = cand_job(p, c);
                uint64_t start = SCHED_TIME_INFINITY;
                Plan pl, old;
                size_t s, e;

                if (!planned(c))
                        continue;

                if (ctx->resv_held[i]) {
                        const Resv *rv = &ctx->resv[ctx->resv_of[i]];

                        if (time_add(cand_est(p, c), job_span(j)) <= gain) {
                                /* Nothing was freed before its slot ends: it stays. */
                                if (cand_est(p, c) == p->now && limits_block(p, c)) {
                                        /* Due, but a limit holds it now: its slot goes. */
                                        continue;
                                } else if (cand_est(p, c) == p->now) {
                                        resv_plan(ctx, rv, &old);
                                        /* A capped project's job on the CPUs its slice allows, or not now. */
                                        if (cand_allowed_cpus(p, c) && !plan_fit_now(p, p->avail_now, c, &old)) {
                                                c->reason = SCHED_REASON_RESOURCES;
                                                cand_set_est(p, c, SCHED_TIME_INFINITY);
                                                continue;
                                        }
                                        r = pass_start(p, c, &old);
                                } else {
                                        c->reason = first_blocked ? SCHED_REASON_RESOURCES : SCHED_REASON_PRIORITY;
                                        first_blocked = false;
                                        r = resv_keep(ctx, rv);
                                }
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        resv_plan(ctx, rv, &old);
                        r = profile_span(&pr, cand_est(p, c), j, &s, &e);
                        if (r < 0)
                                return r;
                        profile_apply(&pr, s, e, &old, false);
                }

                if (_unlikely_(p->shard_open != 0) && join_shards(p, &pr, j, &pl))
                        start = p->now;
                else if (profile_find(&pr, j, 0, &s, &pl))
                        start = ctx->seg_time[s];
                if (ctx->resv_held[i]) {
                        if (start > cand_est(p, c)) {
                                /* Cannot be (its old slot is free and plan_fit takes any fit), but
                                 * if it were, the promise still holds: keep the old slot. */
                                start = cand_est(p, c);
                                pl = old;
                        }
                        if (start != cand_est(p, c) || !plan_equal(p, &pl, &old))
                                /* Its old slot is free now: later jobs may move into it. */
                                gain = MIN(gain, cand_est(p, c));
                }
                if (start == SCHED_TIME_INFINITY) {
                        c->reason = first_blocked ? SCHED_REASON_RESOURCES : SCHED_REASON_PRIORITY;
                        cand_set_est(p, c, SCHED_TIME_INFINITY);
                        first_blocked = false;
                        continue;
                }

                r = profile_span(&pr, start, j, &s, &e);
                if (r < 0)
                        return r;
                if (s == 0 && limits_block(p, c)) {
                        /* It could start now but a limit holds it: no slot, nothing taken. */
                        continue;
                } else if (s == 0 && cand_allowed_cpus(p, c) && !plan_fit_now(p, p->avail_now, c, &pl)) {
                        /* Its project's slice does not allow the CPUs free now. */
                        c->reason = first_blocked ? SCHED_REASON_RESOURCES : SCHED_REASON_PRIORITY;
                        cand_set_est(p, c, SCHED_TIME_INFINITY);
                        first_blocked = false;
                        continue;
                } else if (s == 0) {
                        /* Segment 0 is now, and holds no more than p->avail_now: the plan fits there. */
                        r = pass_start(p, c, &pl);
                        if (r < 0)
                                return r;
                } else {
                        c->reason = first_blocked ? SCHED_REASON_RESOURCES : SCHED_REASON_PRIORITY;
                        cand_set_est(p, c, start);
                        first_blocked = false;
                        r = resv_remember(p, j, start, &pl);
                        if (r < 0)
                                return r;
                }
                profile_apply(&pr, s, e, &pl, true);
        }

        r = profile_save(&pr);
        if (r < 0)
                return r;
        ctx->resv_pass = ctx->n_passes;
        return resv_commit(ctx);
}

const SchedPolicyOps sched_policy_conservative = {
        .name = "conservative",
        .plan = plan_conservative,
};
