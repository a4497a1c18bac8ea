/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The Slurm backend (backend-slurm.c; corrald(8), FORWARDING TO SLURM): the jobs of
 * Backend=slurm queues, through job_backend_slurm; the rest is for its tests. */

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "executor.h"
#include "job-backend.h"
#include "job.h"

struct Manager;
typedef struct Forwarder Forwarder;

extern const JobBackendOps job_backend_slurm;

/* How the Slurm client is run: production's executor_run_command(), or a test's fake.
 * done() must come later, from the event loop, never from within run(). */
typedef struct ForwardRunnerOps {
        int (*run)(void *userdata, const ExecutorCommand *c, ExecutorCommandDone done, void *cookie);
} ForwardRunnerOps;

/* At start-up, after the jobs are loaded: their links from the store, the poll timer. */
int manager_forward_start(struct Manager *m);
void manager_forward_free(struct Manager *m);
void manager_forward_set_runner(struct Manager *m, const ForwardRunnerOps *ops, void *userdata);

/* Whether j's queue forwards its jobs; its Slurm job (0: none yet). */
bool manager_job_forwarded(struct Manager *m, const Job *j);
uint64_t manager_job_slurm_id(struct Manager *m, const Job *j);
/* Where Slurm writes a forwarded job's output when it names no file: slurm-%j.out
 * (slurm-%A_%a.out for an array task) in its working directory, its Slurm id from its
 * link, or for an ended job from the store (a read: for one job, never for lists). 1 and
 * *ret (relative) when known, 0 and NULL for a job that is not forwarded or has no Slurm
 * job (yet). */
int manager_forward_output_path(struct Manager *m, const Job *j, char **ret);
/* Submit's check for a forwarding queue: 0, or -EOPNOTSUPP with what cannot be mapped. */
int manager_forward_check(struct Manager *m, const SubmitRequest *req, const QueueConfig *q, const char *user,
                          const char *project, char **ret_reason);
/* After a pass is committed: sbatch for the queued jobs that may go (MaxForwarded=). */
void manager_forward_submit(struct Manager *m);
/* One squeue for every forwarded job (the timer's, every SlurmPollSec=). */
void manager_forward_poll(struct Manager *m);
unsigned manager_forward_polls(struct Manager *m);
/* Cancel: 0 when the job is only here (cancel it here), 1 when Slurm has it (scancel
 * runs), -errno. Hold/release: scontrol's, after the transition here. */
int manager_forward_cancel(struct Manager *m, Job *j);
void manager_forward_hold(struct Manager *m, Job *j, bool hold);
/* A running or suspended job: its user's scontrol requeue[hold]. -EAGAIN while its Slurm
 * id is not confirmed yet. */
int manager_forward_requeue(struct Manager *m, Job *j, bool hold);
