/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

#include "cpuset.h"
#include "macro.h"
#include "strv.h"

/* What the launcher needs to start one job: plain data filled by the daemon from the
 * queued request and the scheduler's allocation. Everything is owned by the JobSpec and
 * released by job_spec_free(). */

/* One block device's throttle; 0 in a field means no limit for that direction. */
typedef struct JobIoLimit {
        char *device; /* an absolute path such as "/dev/nvme0n1", or "MAJ:MIN" */
        uint64_t read_bps;
        uint64_t write_bps;
        uint64_t read_iops;
        uint64_t write_iops;
} JobIoLimit;

typedef struct JobSpec {
        uint64_t id;
        char *name;
        char *user;
        uid_t uid;
        gid_t gid;
        gid_t *supplementary_gids;
        size_t n_supplementary_gids;
        /* The user's home and shell as the daemon looked them up (job_spec_set_identity()),
         * for the job's HOME and SHELL: with them the supervisor asks the name service
         * nothing. NULL (a spec from an older daemon): it looks the user up itself. */
        char *home, *shell;
        char *project; /* NULL or "": no project, the job goes to corral.slice itself */
        char *queue;

        /* Exactly one of argv and script. A script without a "#!" line runs with /bin/sh. */
        char **argv;
        char *script;
        char **environment; /* KEY=VALUE */
        char *working_directory;
        char *stdin_path;  /* NULL: /dev/null */
        char *stdout_path; /* NULL: the journal */
        char *stderr_path; /* NULL: the journal */
        /* The submitter's umask, set before the output files are created and the job is
         * exec'ed. Without it (a spec from an older daemon, or one that does not pass it
         * on) the job gets 0022, never the supervisor's own. */
        bool has_umask;
        mode_t umask;

        /* The allocation. */
        CpuSet cpus;      /* must not be empty */
        CpuSet mem_nodes; /* empty: no restriction */
        uint64_t memory_max; /* bytes; 0: none */
        JobIoLimit *io_limits;
        size_t n_io_limits;
        uint64_t io_weight; /* 1..10000; 0: unset */
        /* The device fence (devices.h): when device_fence is set the scope may open no
         * GPU but the nodes in device_allow (its own GPUs' nodes and their vendor's shared
         * nodes), and every other device as before. Not set: a machine without schedulable
         * devices, no fence at all. device_allow holds systemd DeviceAllow= entries: the
         * machine's base (device_fence_base(): every driver but the GPUs' by "char-NAME" /
         * "block-NAME", other nodes of the GPUs' majors by path) and then the job's nodes.
         * device_environment: CUDA_VISIBLE_DEVICES=... and the rest, set last by the
         * supervisor, which drops the submitter's values of those names under a fence. */
        bool device_fence;
        char **device_allow;
        char **device_environment;
        /* TasksMax= of the scope, threads included. 0: the executor's default,
         * exec_tasks_max_default() (properties.h), so that no job is unbounded by
         * accident; UINT64_MAX: no limit ("infinity"), for a daemon configured so. */
        uint64_t tasks_max;
        uint64_t walltime_sec; /* 0 or DURATION_INFINITY: none; enforced by the supervisor */
        /* --signal: warn_signal (0: none) warn_sec before the walltime ends, to the job's
         * first process only (warn_batch_only) or to all of its processes. */
        int warn_signal;
        uint64_t warn_sec;
        bool warn_batch_only;
        /* --open-mode=append: stdout_path and stderr_path are appended to, not truncated. */
        bool output_append;
        uint64_t array_job_id; /* 0: not part of an array */
        uint32_t array_task_id;
        /* The whole array, as Slurm's SLURM_ARRAY_TASK_{MIN,MAX,COUNT,STEP} give it. */
        uint32_t array_task_min, array_task_max, array_task_count, array_task_step;
} JobSpec;

static inline JobSpec *job_spec_free(JobSpec *s) {
        if (!s)
                return NULL;
        free(s->name);
        free(s->user);
        free(s->supplementary_gids);
        free(s->home);
        free(s->shell);
        free(s->project);
        free(s->queue);
        strv_free(s->argv);
        free(s->script);
        strv_free(s->environment);
        free(s->working_directory);
        free(s->stdin_path);
        free(s->stdout_path);
        free(s->stderr_path);
        for (size_t i = 0; i < s->n_io_limits; i++)
                free(s->io_limits[i].device);
        free(s->io_limits);
        strv_free(s->device_allow);
        strv_free(s->device_environment);
        free(s);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(JobSpec *, job_spec_free);
#define _cleanup_job_spec_free_ _cleanup_(job_spec_freep)
