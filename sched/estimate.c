/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Estimated starts for the jobs behind the top one under "easy" and "fcfs": the first
 * SchedConfig.estimate_depth of them, in priority order, planned in the profile as
 * conservative backfilling would place them if nothing else arrived and every job ran to
 * its limit. Only an estimate (EASY may yet start a lower job that delays them), as
 * squeue --start and showstart give; the top job's reservation is the promise. Bounded
 * by the depth because each placement walks the profile. */
#include <string.h>

#include "sched-internal.h"

int pass_estimate(SchedPass *p, bool in_order) {
        SchedContext *ctx = p->ctx;
        size_t depth = p->config->estimate_depth, done = 0;
        uint64_t floor = p->now;
        Profile pr = { .p = p };
        size_t cpus = 0;
        int r;

        if (depth == 0)
                return 0;
        r = profile_build(&pr);
        if (r < 0)
                return r;
        /* Only taken from here on: where each CPU count first fits can only move later,
         * and each job's walk starts there (the walks were a tenth of a pass). */
        for (size_t k = 0; k < p->n_nodes; k++)
                cpus += p->node_cpus[k];
        if (!GROW(ctx->est_first, ctx->n_est_first_alloc, cpus + 1))
                return -ENOMEM;
        memset(ctx->est_first, 0, (cpus + 1) * sizeof(uint64_t));
        pr.first = ctx->est_first;
        pr.n_first = cpus + 1;

        for (size_t i = 0; i < p->n_cands; i++) {
                Cand *c = &p->cands[i];
                const SchedJob *j = cand_job(p, c);
                size_t from = 0, s, e;
                Plan pl;

                SchedReason why = cand_reason(p, c);

                if (c->started || (why != SCHED_REASON_RESOURCES && why != SCHED_REASON_PRIORITY))
                        continue;
                /* The top job (Resources) is placed (where its reservation is) but does not count. */
                if (why == SCHED_REASON_PRIORITY && done++ == depth)
                        break;
                if (in_order) {
                        r = profile_split(&pr, floor, &from);
                        if (r < 0)
                                return r;
                }
                if (!profile_find(&pr, j, from, &s, &pl)) {
                        /* Needs what a job without a limit holds: unknown, and so is
                         * everything after it when none may pass it. */
                        if (in_order)
                                break;
                        continue;
                }
                if (why == SCHED_REASON_PRIORITY)
                        cand_set_est(p, c, ctx->seg_time[s]);
                floor = ctx->seg_time[s];
                r = profile_span(&pr, ctx->seg_time[s], j, &s, &e);
                if (r < 0)
                        return r;
                profile_apply(&pr, s, e, &pl, true);
        }
        return 0;
}
