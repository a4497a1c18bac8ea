/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Replays an SWF trace through sched/ in virtual time.
 *
 * Machine: --procs, else "; MaxProcs:", else "; MaxNodes:"; split over numa_nodes nodes
 * with plenty of memory (trace memory is ignored, as in the published EASY results).
 * Job: processors = field 8 (field 5 when 8 is unknown); estimate = field 9, or the run
 * time with exact_estimates; the run time is clipped to the estimate (the job is killed
 * at its limit). Which jobs are kept is SimFilter's. Events: see SimSemantics. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sched.h"
#include "swf.h"

typedef enum SimFilter {
        /* Skipped: unknown run time (< 0), processors or submit time; more processors
         * than the machine; no requested time (unless missing_estimate_runtime). */
        SIM_FILTER_DEFAULT,
        /* The published simulation studies' input filter: a job is kept only if neither
         * field 5 nor field 8 exceeds the machine and one of them is > 0, its run time
         * is > 0 and its requested time is > 0; the run time is clipped to the request. */
        SIM_FILTER_STRONG,
        _SIM_FILTER_MAX,
        _SIM_FILTER_INVALID = -EINVAL,
} SimFilter;

typedef enum SimSemantics {
        /* Corral's, as the daemon works: every event of an instant (submissions, then
         * terminations, each in submission order) is applied, then one pass decides
         * knowing all of them. */
        SIM_SEMANTICS_CORRAL,
        /* The published simulators' (pyss/predictsim): a job that reaches its requested
         * time is over at that instant; every other event gets its own pass, submissions
         * first, then the jobs that end early, one at a time. When two jobs end early at
         * the same instant, the pass after the first still counts the second as running
         * until its requested time, so a job backfilled then may take CPUs the top job
         * would have started on once both had ended. */
        SIM_SEMANTICS_PUBLISHED,
        _SIM_SEMANTICS_MAX,
        _SIM_SEMANTICS_INVALID = -EINVAL,
} SimSemantics;

/* "default", "strong"; "corral", "published". */
const char *sim_filter_to_string(SimFilter f) _const_;
SimFilter sim_filter_from_string(const char *s) _pure_;
const char *sim_semantics_to_string(SimSemantics m) _const_;
SimSemantics sim_semantics_from_string(const char *s) _pure_;

/* One trace job as simulated, in trace order (SimOptions.results). */
typedef struct SimJobResult {
        int64_t wait;                      /* start - submit; -1: the job was skipped */
        int64_t run;                       /* the run time simulated (clipped to its request) */
} SimJobResult;

typedef struct SimOptions {
        const SchedPolicyOps *policy;      /* NULL: easy */
        SchedBackfillOrder backfill_order;
        unsigned procs;                    /* 0: from the trace */
        unsigned numa_nodes;               /* 0: 1 */
        bool exact_estimates;
        bool missing_estimate_runtime;     /* SIM_FILTER_DEFAULT only */
        SimFilter filter;
        SimSemantics semantics;
        SimJobResult *results;             /* NULL, or one per trace job, filled by sim_run() */
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

/* 0, or -EINVAL (no machine size, too many processors: at most CPU_SET_MAX, or options
 * that contradict each other; the message then says which), -ENOMEM, -EDEADLK (should
 * not happen: jobs left that can never start). */
int sim_run(const SwfTrace *t, const SimOptions *o, SimStats *ret, char **ret_error);

/* Writes the simulated schedule: the job lines of the trace in is (the file t was read
 * from) with field 3 the simulated wait and field 4 the run time simulated, the other
 * fields as they were; skipped jobs are left out; a note on what was simulated (note,
 * may be NULL) follows the trace's header comments. -EINVAL with a message if in no
 * longer matches t. */
int sim_write_schedule(FILE *in, const char *name, const SwfTrace *t, const SimJobResult *results,
                       const char *note, FILE *out, char **ret_error);
