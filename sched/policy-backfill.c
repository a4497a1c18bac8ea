/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The "fcfs" and "easy" policies: start in priority order until a job does not fit;
 * that job (the top job) gets a reservation; "easy" then lets later jobs start if they
 * cannot delay it (Lifka's EASY backfilling, over the whole queue every pass). */
#include <string.h>

#include "sched-internal.h"
#include "sort.h"

typedef struct Shadow {
        uint64_t start;                 /* the top job's reserved start */
        Avail after[SCHED_NODES_MAX];   /* free at that time once the top job is placed */
        Avail both[SCHED_NODES_MAX];    /* min(now, after): what a job running past it may use */
} Shadow;

static inline bool eligible(const Cand *c) {
        return !c->started && c->reason == SCHED_REASON_NONE;
}

/* Starts eligible jobs in order until one does not fit; returns its position or n. */
static int start_in_order(SchedPass *p, size_t *ret_top) {
        size_t i;
        int r;

        for (i = 0; i < p->n_cands; i++) {
                Cand *c = &p->cands[i];
                Plan pl;

                if (!eligible(c) || limits_block(p, c))
                        continue;
                if (!plan_fit_now(p, p->avail_now, c, &pl))
                        break;
                r = pass_start(p, c, &pl);
                if (r < 0)
                        return r;
        }
        *ret_top = i;
        return 0;
}

/* The eligible jobs from from on that were not started wait for Priority: said once,
 * read through cand_reason(). */
static void rest_wait(SchedPass *p, size_t from) {
        p->wait_from = from;
}

/* Reserves for the top job; false if it can never start (holders without a limit). */
static int reserve_top(SchedPass *p, size_t top, Shadow *sh, bool *ret_have) {
        Cand *c = &p->cands[top];
        int r;

        r = pass_sort_releases(p);
        if (r < 0)
                return r;
        *ret_have = pass_reserve(p, cand_job(p, c), &sh->start, sh->after);
        c->reason = SCHED_REASON_RESOURCES;
        cand_set_est(p, c, *ret_have ? sh->start : SCHED_TIME_INFINITY);
        if (*ret_have) {
                avail_min(p, sh->both, p->avail_now, sh->after);
                /* From now on a job joining a GPU's shards must not keep it past the top
                 * job's start unless it is held then anyway. */
                if (p->shard_horizon != 0) {
                        p->shard_horizon = sh->start;
                        p->shard_free_at_horizon = p->shard_open ? avail_gpus(p, sh->after) : 0;
                }
        }
        return 0;
}

/* What every policy here begins with: the jobs that fit started in order, and a
 * reservation for the first that did not, the top job (*ret_top). 0 when all started, so
 * nothing is left to plan; 1 otherwise. */
static int start_then_reserve(SchedPass *p, size_t *ret_top, Shadow *sh, bool *ret_have) {
        int r;

        r = start_in_order(p, ret_top);
        if (r < 0)
                return r;
        if (*ret_top >= p->n_cands)
                return 0;
        r = reserve_top(p, *ret_top, sh, ret_have);
        if (r < 0)
                return r;
        return 1;
}

static int plan_fcfs(SchedPass *p) {
        Shadow sh;
        size_t top;
        bool have;
        int r;

        r = start_then_reserve(p, &top, &sh, &have);
        if (r <= 0)
                return r;
        rest_wait(p, top + 1);
        return pass_estimate(p, true);
}

const SchedPolicyOps sched_policy_fcfs = {
        .name = "fcfs",
        .plan = plan_fcfs,
};

static inline bool order_less(const void *ctx, const OrderEntry *a, const OrderEntry *b) {
        return a->key != b->key ? a->key < b->key : a->pos < b->pos;
}
DEFINE_MERGE_SORT(sort_order, OrderEntry, order_less);

/* The candidates after the top job, in the configured backfill order. */
static int backfill_order(SchedPass *p, size_t top, size_t *ret_n) {
        SchedContext *ctx = p->ctx;
        bool sjf = p->config->backfill_order == SCHED_BACKFILL_SJF;
        size_t n = 0;

        if (!GROW(ctx->order, ctx->n_order_alloc, p->n_cands - top))
                return -ENOMEM;
        for (size_t i = top + 1; i < p->n_cands; i++)
                if (eligible(&p->cands[i]))
                        ctx->order[n++] = (OrderEntry) {
                                .key = sjf ? sched_job_walltime(cand_job(p, &p->cands[i])) : 0,
                                .pos = i,
                        };
        if (sjf) {
                if (!GROW(ctx->order_tmp, ctx->n_order_tmp_alloc, n))
                        return -ENOMEM;
                sort_order(ctx->order, ctx->order_tmp, n, NULL);
        }
        *ret_n = n;
        return 0;
}

static int plan_easy(SchedPass *p) {
        size_t top, n, last_started = 0;
        Shadow sh;
        bool have;
        int r;

        r = start_then_reserve(p, &top, &sh, &have);
        if (r <= 0)
                return r;
        /* Every job needs a CPU: with none left the rest of the queue just waits, and
         * with none free now none of it need be looked at. */
        n = 0;
        if (p->now_cpus > 0) {
                r = backfill_order(p, top, &n);
                if (r < 0)
                        return r;
        }

        for (size_t i = 0; i < n; i++) {
                Cand *c = &p->cands[p->ctx->order[i].pos];
                const SchedJob *j;
                bool before_shadow;
                Plan pl;

                if (p->now_cpus == 0)
                        break;
                /* Its CPUs from the candidate: most jobs stop here, without their job read. */
                if (c->cpus > p->now_cpus || limits_block(p, c))
                        continue;
                j = cand_job(p, c);
                before_shadow = !have || time_add(p->now, sched_job_walltime(j)) <= sh.start;

                /* Done by the shadow time: anything free now will do. Running past it:
                 * only what the top job does not need then. */
                if (!plan_fit_now(p, before_shadow ? p->avail_now : sh.both, c, &pl))
                        continue;
                r = pass_start(p, c, &pl);
                if (r < 0)
                        return r;
                if (have) {
                        if (!before_shadow)
                                avail_sub(p, sh.after, &pl);
                        avail_min(p, sh.both, p->avail_now, sh.after);
                        if (_unlikely_(p->shard_open != 0))
                                p->shard_free_at_horizon = avail_gpus(p, sh.after);
                }
                last_started = MAX(last_started, p->ctx->order[i].pos);
        }

        rest_wait(p, top + 1);
        for (size_t i = top; i < last_started; i++) {
                Cand *c = &p->cands[i];

                SchedReason why = cand_reason(p, c);

                if (!c->started && (why == SCHED_REASON_RESOURCES || why == SCHED_REASON_PRIORITY))
                        c->bypassed = true;
        }
        return pass_estimate(p, false);
}

const SchedPolicyOps sched_policy_easy = {
        .name = "easy",
        .plan = plan_easy,
};
