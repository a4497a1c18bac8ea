/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Replays an SWF trace through sched/ in virtual time.
 *
 * Machine: --procs, else "; MaxProcs:", else "; MaxNodes:"; split over numa_nodes nodes
 * with plenty of memory (trace memory is ignored, as in the published EASY results).
 * Job: processors = field 8 (field 5 when 8 is unknown); estimate = field 9, or the run
 * time with exact_estimates; the run time is clipped to the estimate (the job is killed
 * at its limit). Jobs with unknown run time, processors or submit time are skipped, so
 * are jobs larger than the machine and jobs without an estimate (unless
 * missing_estimate_runtime). All events at one instant are applied (submissions first,
 * then terminations, each in file order) before one scheduling pass at that instant. */

#include <stdbool.h>
#include <stdint.h>

#include "sched.h"
#include "swf.h"

typedef struct SimOptions {
        const SchedPolicyOps *policy;      /* NULL: easy */
        SchedBackfillOrder backfill_order;
        unsigned procs;                    /* 0: from the trace */
        unsigned numa_nodes;               /* 0: 1 */
        bool exact_estimates;
        bool missing_estimate_runtime;
} SimOptions;

typedef struct SimStats {
        unsigned procs, numa_nodes;
        size_t simulated;
        size_t skipped;                    /* the sum of the three below */
        size_t skipped_unknown;            /* run time, processors or submit time unknown */
        size_t skipped_no_estimate;
        size_t skipped_too_big;
        size_t passes;
        double avg_wait, avg_bsld, max_bsld, avg_flow, max_flow;
        double utilization;                /* processor-seconds used / (procs * makespan) */
        uint64_t makespan;                 /* first submission to last termination */
} SimStats;

/* 0, or -EINVAL (no machine size, or too many processors: at most CPU_SET_MAX; the
 * message then says which), -ENOMEM, -EDEADLK (should not happen: jobs left that can
 * never start). */
int sim_run(const SwfTrace *t, const SimOptions *o, SimStats *ret, char **ret_error);
