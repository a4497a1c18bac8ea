/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The availability profile: what is free on each node over time, as running jobs end and
 * planned jobs come and go. Conservative backfilling plans every job in it; EASY and FCFS
 * use it to estimate when the jobs behind the top one may start. */
#include <assert.h>
#include <string.h>

#include "sched-internal.h"

/* Sums over the nodes, kept per segment: the cheap test before a per-node one. */
void seg_sum(const Profile *pr, size_t i) {
        const Avail *a = seg(pr, i);
        uint64_t mem = 0;
        uint32_t cpus = 0;

        /* Summed in registers, stored once (a store to the total inside the loop would
         * make each node wait for the last one's). */
        for (size_t k = 0; k < pr->p->n_nodes; k++) {
                cpus += a[k].cpus;
                mem = time_add(mem, a[k].mem);
        }
        pr->p->ctx->seg_total[i] = (Avail) { .cpus = cpus, .mem = mem };
        if (pr->p->n_gpus > 0)
                pr->p->ctx->seg_gpus[i] = avail_gpus(pr->p, a);
}

int profile_grow(Profile *pr, size_t n) {
        SchedContext *ctx = pr->p->ctx;
        size_t nodes = pr->p->n_nodes, need = ctx->seg_front + n;

        if (!GROW(ctx->seg_time_base, ctx->n_seg_time_alloc, need) ||
            !GROW(ctx->seg_total_base, ctx->n_seg_total_alloc, need) ||
            !GROW(ctx->seg_avail_base, ctx->n_seg_avail_alloc, need * nodes) ||
            (pr->p->n_gpus > 0 && !GROW(ctx->seg_gpus_base, ctx->n_seg_gpus_alloc, need)))
                return -ENOMEM;
        ctx->seg_time = ctx->seg_time_base + ctx->seg_front;
        ctx->seg_total = ctx->seg_total_base + ctx->seg_front;
        ctx->seg_avail = ctx->seg_avail_base + ctx->seg_front * nodes;
        ctx->seg_gpus = ctx->seg_gpus_base ? ctx->seg_gpus_base + ctx->seg_front : NULL;
        return 0;
}

int profile_reset(Profile *pr, size_t n) {
        /* Room for as many splits near the start as there are segments, and some:
         * estimates and reservations mostly land early, where a split moved the rest. */
        pr->p->ctx->seg_front = n + 256;
        return profile_grow(pr, n);
}

int profile_build(Profile *pr) {
        SchedPass *p = pr->p;
        SchedContext *ctx = p->ctx;
        int r;

        r = pass_sort_releases(p);
        if (r < 0)
                return r;
        r = profile_reset(pr, p->n_releases + 1);
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
                        seg_sum(pr, pr->n - 1);
                        ctx->seg_time[pr->n] = rel->end;
                        memcpy(seg(pr, pr->n), seg(pr, pr->n - 1), sizeof(Avail) * p->n_nodes);
                        pr->n++;
                }
                avail_add(p, seg(pr, pr->n - 1), ctx->release_avail + rel->avail_off);
        }
        seg_sum(pr, pr->n - 1);
        return 0;
}

/* The index of the segment that starts at t, splitting the one containing t if needed;
 * pr->n for SCHED_TIME_INFINITY. t must not be before now. */
int profile_split(Profile *pr, uint64_t t, size_t *ret) {
        SchedContext *ctx = pr->p->ctx;
        size_t lo = 0, hi = pr->n;
        int r;

        assert(t >= ctx->seg_time[0]);
        if (t == SCHED_TIME_INFINITY) {
                *ret = pr->n;
                return 0;
        }
        /* The last segment starting at or before t. */
        while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (ctx->seg_time[mid] <= t)
                        lo = mid;
                else
                        hi = mid;
        }
        if (ctx->seg_time[lo] == t) {
                *ret = lo;
                return 0;
        }

        r = profile_grow(pr, pr->n + 1);
        if (r < 0)
                return r;
        lo++;
        if (ctx->seg_front > 0 && lo < pr->n - lo) {
                /* Fewer before it than after: those before move down a slot, into the
                 * room before the first, and keep their indexes. */
                size_t nodes = pr->p->n_nodes;

                ctx->seg_front--;
                ctx->seg_time--;
                ctx->seg_total--;
                ctx->seg_avail -= nodes;
                memmove(ctx->seg_time, ctx->seg_time + 1, sizeof(uint64_t) * lo);
                memmove(ctx->seg_total, ctx->seg_total + 1, sizeof(Avail) * lo);
                memmove(ctx->seg_avail, ctx->seg_avail + nodes, sizeof(Avail) * nodes * lo);
                if (pr->p->n_gpus > 0) {
                        ctx->seg_gpus--;
                        memmove(ctx->seg_gpus, ctx->seg_gpus + 1, sizeof(uint64_t) * lo);
                }
        } else {
                memmove(ctx->seg_time + lo + 1, ctx->seg_time + lo, sizeof(uint64_t) * (pr->n - lo));
                memmove(ctx->seg_total + lo + 1, ctx->seg_total + lo, sizeof(Avail) * (pr->n - lo));
                memmove(seg(pr, lo + 1), seg(pr, lo), sizeof(Avail) * pr->p->n_nodes * (pr->n - lo));
                if (pr->p->n_gpus > 0)
                        memmove(ctx->seg_gpus + lo + 1, ctx->seg_gpus + lo, sizeof(uint64_t) * (pr->n - lo));
        }
        ctx->seg_time[lo] = t;
        ctx->seg_total[lo] = ctx->seg_total[lo - 1];
        if (pr->p->n_gpus > 0)
                ctx->seg_gpus[lo] = ctx->seg_gpus[lo - 1];
        memcpy(seg(pr, lo), seg(pr, lo - 1), sizeof(Avail) * pr->p->n_nodes);
        pr->n++;
        *ret = lo;
        return 0;
}

/* The first segment at which j fits for its whole walltime, with its placement. Made
 * twice by the compiler: with GPUs and without, so that a job that plans none (every
 * job on a machine without) walks the profile as it always did. */
/* The first segment from from on with c CPUs free in all: from pr->first[c], kept. */
static size_t first_with_cpus(const Profile *pr, unsigned c, size_t from) {
        const uint64_t *t = pr->p->ctx->seg_time;
        const Avail *tot = pr->p->ctx->seg_total;
        uint64_t *first = &pr->first[c];
        size_t lo = 0, hi = pr->n;

        if (*first == SCHED_TIME_INFINITY)
                return pr->n;
        /* The segment starting at *first: splits add starts, never remove one. */
        while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (t[mid] <= *first)
                        lo = mid;
                else
                        hi = mid;
        }
        while (lo < pr->n && tot[lo].cpus < c)
                lo++;
        *first = lo < pr->n ? t[lo] : SCHED_TIME_INFINITY;
        return MAX(lo, from);
}

static inline __attribute__((always_inline)) bool find(const Profile *pr, const SchedJob *j, size_t from,
                                                       bool with_gpus, size_t *ret_seg, Plan *ret_plan) {
        const uint64_t *t = pr->p->ctx->seg_time;
        const Avail *tot = pr->p->ctx->seg_total;
        const uint64_t allowed = with_gpus ? job_gpu_allowed(pr->p, j) : 0, span = job_span(j), mem = j->memory;
        const unsigned cpus = MAX(j->cpus, 1u), gpus = with_gpus ? j->gpus : 0;
        const size_t n = pr->n;
        Avail m[SCHED_NODES_MAX];

        /* The segments before it fail seg_may_fit() on CPUs alone. */
        if (pr->first && cpus < pr->n_first)
                from = first_with_cpus(pr, cpus, from);
        for (size_t s = from; s < n; ) {
                uint64_t end;
                size_t k;

                /* Most of a walk is segments that fail the totals: passed in a loop of
                 * their own, with what it tests in registers. */
                while (s < n && (tot[s].cpus < cpus || tot[s].mem < mem))
                        s++;
                if (s >= n)
                        break;
                if (gpus > 0 && !seg_may_fit_gpus(pr, s, allowed, gpus)) {
                        s++;
                        continue;
                }
                end = time_add(t[s], span);
                /* seg_may_fit() and seg_may_fit_gpus() through the window, with the
                 * job's figures in registers. */
                for (k = s + 1; k < n && t[k] < end; k++)
                        if (tot[k].cpus < cpus || tot[k].mem < mem || (gpus > 0 && !seg_may_fit_gpus(pr, k, allowed, gpus)))
                                break;
                if (k < n && t[k] < end) {
                        /* No window containing segment k can work: skip past it. */
                        s = k + 1;
                        continue;
                }
                /* The window's minimum, node by node: each node's in registers over the
                 * segments, where a walk of the segments made each wait for the last
                 * one's store. With GPUs, also those free throughout; without, m's
                 * GPUs are the first segment's, as plan_fit() reads none. k: the window's
                 * end, where the test above stopped. */
                for (size_t x = 0, nodes = pr->p->n_nodes; x < nodes; x++) {
                        const Avail *a = seg(pr, s) + x;
                        uint64_t mm = a->mem;
                        uint32_t mc = a->cpus, mg = a->gpus;

                        for (size_t y = s + 1; y < k; y++) {
                                a += nodes;
                                mc = MIN(mc, a->cpus);
                                mm = MIN(mm, a->mem);
                                if (with_gpus)
                                        mg &= a->gpus;
                        }
                        m[x] = (Avail) { .cpus = mc, .mem = mm, .gpus = mg };
                }
                if (plan_fit(pr->p, m, j, ret_plan)) {
                        *ret_seg = s;
                        return true;
                }
                s++;
        }
        return false;
}

bool profile_find(const Profile *pr, const SchedJob *j, size_t from, size_t *ret_seg, Plan *ret_plan) {
        /* Never on a machine without GPUs: a job asking for any is TooBig there. */
        if (job_plans_gpus(pr->p, j))
                return find(pr, j, from, true, ret_seg, ret_plan);
        return find(pr, j, from, false, ret_seg, ret_plan);
}

/* Does pl fit in segments [s, e)? */
bool profile_has(const Profile *pr, size_t s, size_t e, const Plan *pl) {
        for (size_t i = s; i < e; i++) {
                const Avail *a = seg(pr, i);

                if (pl->gpus && (pl->gpus & ~pr->p->ctx->seg_gpus[i]))
                        return false;

                for (size_t k = 0; k < pr->p->n_nodes; k++)
                        if (a[k].cpus < pl->cpus[k] || a[k].mem < pl->mem[k])
                                return false;
        }
        return true;
}

/* avail_sub() then seg_sum() of segment i, in one walk of its nodes: the estimates'
 * placements take from hundreds of segments each when many running jobs end apart. */
static inline void seg_take(const Profile *pr, size_t i, const Plan *pl) {
        const SchedPass *p = pr->p;
        Avail *a = seg(pr, i);
        uint64_t mem = 0;
        uint32_t cpus = 0;

        for (size_t k = 0; k < p->n_nodes; k++) {
                a[k].cpus -= MIN(a[k].cpus, pl->cpus[k]);
                a[k].mem -= MIN(a[k].mem, pl->mem[k]);
                cpus += a[k].cpus;
                mem = time_add(mem, a[k].mem);
        }
        p->ctx->seg_total[i] = (Avail) { .cpus = cpus, .mem = mem };
        if (pl->gpus) {
                for (size_t k = 0; k < p->n_nodes; k++)
                        a[k].gpus &= ~gpus_local(p, k, pl->gpus);
                /* seg_gpus[i] is avail_gpus() of the segment (seg_sum(), a split's
                 * copy, this): less what was taken, without walking every node's. */
                p->ctx->seg_gpus[i] &= ~pl->gpus;
        }
        assert(p->n_gpus == 0 || p->ctx->seg_gpus[i] == avail_gpus(p, a));
}

/* Takes pl out of (take) or gives it back to (!take) segments [s, e). */
void profile_apply(Profile *pr, size_t s, size_t e, const Plan *pl, bool take) {
        Avail give[SCHED_NODES_MAX];

        if (take) {
                for (size_t i = s; i < e; i++)
                        seg_take(pr, i, pl);
                return;
        }
        for (size_t k = 0; k < pr->p->n_nodes; k++)
                give[k] = (Avail) { .cpus = pl->cpus[k], .mem = pl->mem[k], .gpus = gpus_local(pr->p, k, pl->gpus) };
        for (size_t i = s; i < e; i++) {
                avail_add(pr->p, seg(pr, i), give);
                seg_sum(pr, i);
        }
}

/* The segments [*ret_s, *ret_e) that j holds from start, split out of the profile. */
int profile_span(Profile *pr, uint64_t start, const SchedJob *j, size_t *ret_s, size_t *ret_e) {
        int r;

        /* The start first: splitting at the end, later, cannot move it. */
        r = profile_split(pr, start, ret_s);
        if (r < 0)
                return r;
        return profile_split(pr, time_add(start, job_span(j)), ret_e);
}

