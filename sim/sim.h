/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Replays an SWF trace through sched/ in virtual time (or, where nothing needs the core,
 * through the simulator's flat-count engine that decides the same: see SimEngine).
 *
 * Machine: --procs, else "; MaxProcs:", else "; MaxNodes:"; split over numa_nodes nodes
 * with plenty of memory (trace memory is ignored, as in the published EASY results).
 * GPUs (SimOptions.n_gpus) on the nodes given or spread evenly.
 * Job: processors = field 8 (field 5 when 8 is unknown); GPUs = field 19 when the line
 * has one (Corral's extension to SWF); estimate = field 9, or the run
 * time with exact_estimates; the run time is clipped to the estimate (the job is killed
 * at its limit). Which jobs are kept is SimFilter's. Events: see SimSemantics.
 *
 * Policies, with a configuration (the daemon's Config, from a corral.conf-style file):
 * the job's user is field 12 (user "u<N>", uid N), its project field 13 (project "g<N>",
 * or the name project_map gives), its queue field 15 through queue_map (unmapped: the
 * DefaultQueue=). Queues give priority, walltime limits and target queue time; projects
 * of the configuration their [Limits]; with fairshare, every pass feeds each job its
 * project's fair-share factor, computed as corrald's accounting does (accounting/accounting.h:
 * decayed usage of ended runs plus the running jobs' credit, suspended time excluded,
 * the FairShareExcludeQueues= not counted).
 *
 * Suspension: whatever the scheduling core decides is applied. SUSPEND stops a running
 * job's clock (it keeps its allocation as sched/ sees it, and ends later by the time it
 * stays suspended); RESUME starts it again, on the decision's CPUs when it names any.
 * sched/ sees a resumed job with its start_time moved later by the time it was
 * suspended, so start_time + walltime stays its deadline. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "sched.h"
#include "swf.h"

/* An expansion factor at most this is "kept" (NCI's normal bound, MaxXFactor='s default). */
#define SIM_XFACTOR_OK 1.25

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

typedef enum SimEngine {
        /* The flat engine when it applies (see below), else the scheduling core. */
        SIM_ENGINE_AUTO,
        /* Every pass through sched_pass(), the daemon's scheduling core: any policy and
         * configuration, NUMA nodes; at most CPU_SET_MAX processors. */
        SIM_ENGINE_CORE,
        /* The machine as a flat count of processors, any number of them, and the passes
         * of the fcfs and easy policies made by the simulator itself, to the same rules
         * and with the same results job by job as the core (test-sim checks it), without
         * CPU sets or a sort per pass. Only without a configuration, NUMA nodes or a pass
         * of the caller's. */
        SIM_ENGINE_FLAT,
        _SIM_ENGINE_MAX,
        _SIM_ENGINE_INVALID = -EINVAL,
} SimEngine;

/* "default", "strong"; "corral", "published"; "auto", "core", "flat". */
const char *sim_filter_to_string(SimFilter f) _const_;
SimFilter sim_filter_from_string(const char *s) _pure_;
const char *sim_semantics_to_string(SimSemantics m) _const_;
SimSemantics sim_semantics_from_string(const char *s) _pure_;
const char *sim_engine_to_string(SimEngine e) _const_;
SimEngine sim_engine_from_string(const char *s) _pure_;

/* One trace job as simulated, in trace order (SimOptions.results). */
typedef struct SimJobResult {
        int64_t wait;                      /* start - submit; -1: the job was skipped */
        int64_t run;                       /* the run time simulated (clipped to its request) */
        int64_t suspended;                 /* seconds suspended in all */
        uint32_t suspensions;
} SimJobResult;

/* One "NUMBER=NAME" of a map option (--queue-map, --project-map). */
typedef struct SimMap {
        int64_t number;
        char *name;
} SimMap;

/* "1=express,2=normal": NUMBER an integer, NAME a queue or project name, no NUMBER twice.
 * -EINVAL with a message naming the bad entry. */
int sim_map_parse(const char *s, SimMap **ret, size_t *ret_n, char **ret_error);
void sim_map_free(SimMap *m, size_t n);

/* --gpus: "N" (N GPUs spread evenly over the NUMA nodes: *ret_nodes NULL) or
 * "N:K,K,...", the NUMA node of each of the N GPUs (-1: none known). -EINVAL with a
 * message. */
int sim_gpus_parse(const char *s, unsigned *ret_n, int **ret_nodes, char **ret_error);

/* Stands in for sched_pass() (tests: a policy that suspends). */
typedef int (*SimPassFunc)(void *userdata, SchedContext *ctx, const SchedConfig *config,
                           const SchedMachine *machine, const SchedJob *jobs, size_t n_jobs, uint64_t now,
                           SchedResult *ret);

typedef struct SimOptions {
        const SchedPolicyOps *policy;      /* NULL: easy */
        SchedBackfillOrder backfill_order;
        unsigned procs;                    /* 0: from the trace */
        unsigned numa_nodes;               /* 0: 1 */
        /* GPUs of the machine, and the NUMA node of each (-1: none known; NULL: spread
         * evenly over the nodes). A job's GPUs are SWF field 19 (Corral's extension);
         * gpu_binding: all GPU jobs ask for enforce-binding. */
        unsigned n_gpus;
        const int *gpu_nodes;
        bool gpu_binding;
        bool exact_estimates;
        bool missing_estimate_runtime;     /* SIM_FILTER_DEFAULT only */
        SimFilter filter;
        SimSemantics semantics;
        SimEngine engine;
        SimJobResult *results;             /* NULL, or one per trace job, filled by sim_run() */
        /* NULL: one queue of priority 0, projects without limits, as without policies.
         * Its Policy= and BackfillOrder= are not used: policy and backfill_order are. */
        const Config *config;
        const SimMap *queue_map;           /* field 15 -> queue name (needs config) */
        size_t n_queue_map;
        const SimMap *project_map;         /* field 13 -> project name */
        size_t n_project_map;
        bool fairshare;                    /* needs config */
        SimPassFunc pass;                  /* NULL: sched_pass() */
        void *pass_userdata;
} SimOptions;

/* The figures of the jobs of one queue or one project. */
typedef struct SimGroupStats {
        char *name;
        size_t jobs;
        double avg_wait, max_wait, avg_bsld, max_bsld;
        size_t suspensions;                /* of its jobs */
        size_t suspended_jobs;             /* jobs suspended at least once */
        /* Expansion factor of a job: (requested walltime + time suspended) / requested
         * walltime (NCI's; 1 for a job never suspended). */
        double avg_xfactor, max_xfactor;
        double xfactor_ok;                 /* share of its jobs at most SIM_XFACTOR_OK */
        double cpu_seconds;                /* processors × run time of its jobs */
        double gpu_seconds;                /* GPUs × run time of its jobs */
} SimGroupStats;

typedef struct SimStats {
        unsigned procs, numa_nodes, n_gpus;
        SimEngine engine;                  /* the one that ran: core or flat */
        size_t simulated;
        size_t skipped;                    /* the sum of the four below */
        size_t skipped_unknown;            /* run time, processors or submit time unknown */
        size_t skipped_no_estimate;
        size_t skipped_too_big;
        /* The configuration refuses it: more CPUs than its queue's MaxCPUsPerJob=, more
         * time than its queue's or its project's MaxWalltime= (it would wait forever). */
        size_t skipped_refused;
        size_t passes;
        size_t max_pending;                /* the most jobs waiting at once */
        double avg_wait, avg_bsld, max_bsld, avg_flow, max_flow;
        double utilization;                /* processor-seconds used / (procs * makespan) */
        double gpu_utilization;            /* GPU-seconds used / (GPUs * makespan); 0 without GPUs */
        uint64_t makespan;                 /* first submission to last termination */
        size_t suspensions, resumes;
        double avg_xfactor, max_xfactor, xfactor_ok;
        /* Per queue (those with jobs, in configuration order) and per project (by name).
         * Freed by sim_stats_done(). */
        SimGroupStats *queues, *projects;
        size_t n_queues, n_projects;
        /* Jain's fairness index of the projects' mean bounded slowdowns x_i:
         * (Σ x_i)² / (n Σ x_i²), 1 when all are equal, 1/n when one project takes it all. */
        double jain_bsld;
} SimStats;

void sim_stats_done(SimStats *st);

/* 0, or -EINVAL (no machine size, more processors than CPU_SET_MAX for the core, or options
 * that contradict each other, a map naming no configured queue; the message then says
 * which), -ENOMEM, -EDEADLK (jobs left that can never start: a limit holds them forever),
 * -EPROTO (the core suspended a job not running, or resumed one not suspended).
 * *ret is filled only on success. */
int sim_run(const SwfTrace *t, const SimOptions *o, SimStats *ret, char **ret_error);

/* Writes the simulated schedule: the job lines of the trace in is (the file t was read
 * from) with field 3 the simulated wait and field 4 the run time simulated (with the time
 * suspended: from start to end, as SWF counts it), the other
 * fields as they were; skipped jobs are left out; a note on what was simulated (note,
 * may be NULL) follows the trace's header comments. -EINVAL with a message if in no
 * longer matches t. */
int sim_write_schedule(FILE *in, const char *name, const SwfTrace *t, const SimJobResult *results,
                       const char *note, FILE *out, char **ret_error);
