/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* One job's efficiency as Slurm's seff prints it, with the GPU lines Corral adds:
 * `corral usage --job` and seff(1). The figures come from Show's job (what sacct prints
 * as TotalCPU, MaxRSS, Elapsed) and its "gpu_usage"; printing them is pure, so the text is
 * unit-tested from figures (tests/unit/test-job-efficiency.c). */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "client.h"
#include "commands.h"
#include "job-request.h"

typedef struct JobEfficiency {
        uint64_t id;
        uint64_t array_job_id;  /* 0: not an array task */
        uint32_t array_task_id;
        const char *cluster, *user, *group, *state;
        bool pending;           /* not started: no efficiency yet */
        bool active;            /* running or suspended: figures so far */
        int exit_code;          /* -1: none */
        unsigned cores;
        uint64_t cpu_usec;      /* CPU time used */
        uint64_t wall_sec;      /* from start to end, or now */
        uint64_t memory_peak;   /* bytes */
        uint64_t memory_requested; /* bytes; 0: none requested */

        /* The GPUs it held (Show's gpu_usage, its latest run), 0: none. */
        unsigned gpus;
        uint64_t gpu_held_sec;          /* summed over the GPUs */
        unsigned gpus_sampled;          /* the GPUs NVML read; 0: the figures below unknown */
        uint64_t gpu_sampled_sec;       /* their held seconds */
        double gpu_used_sec;            /* their held seconds × mean utilisation / 100 */
        double gpu_util_mean;           /* percent, the mean of their means */
        unsigned gpu_util_max;          /* percent, the highest of any */
        uint64_t gpu_memory_max;        /* bytes, the most on any one GPU */
        bool has_energy;
        double energy_j;                /* summed */
} JobEfficiency;

/* From a job Show described (info, its details included) and its "gpu_usage" (NULL:
 * none). The strings point into info; cluster, group and state are left for the caller. */
void job_efficiency_from_info(const JobInfo *info, json_object *gpu_usage, time_t now, JobEfficiency *ret);

/* seff's lines. */
int job_efficiency_print(FILE *f, const JobEfficiency *e);
/* The same figures as an object (unknown ones null). */
json_object *job_efficiency_to_json(const JobEfficiency *e);

/* Slurm seff's time2str() and kbytes2str(): "1-02:03:04", "1.50 GB". */
char *job_efficiency_time(char *buf, size_t size, uint64_t sec);
char *job_efficiency_size(char *buf, size_t size, uint64_t bytes);

/* One job as `corral usage --job` and seff fetch it: Show's job (the same authorization:
 * one's own jobs, administrators' all) and its figures, the strings in entry or here. */
typedef struct JobEfficiencyView {
        JobEntry entry;
        JobEfficiency eff;
        char cluster[256], group[256];
} JobEfficiencyView;

void job_efficiency_view_done(JobEfficiencyView *v);
/* arg: "42", or "42_3" for an array's task. 0, or an exit status after the error is said;
 * a job that does not exist is said as Slurm's seff says it with slurm, as corral does
 * without. A job whose usage Show does not give the caller (someone else's) is refused. */
int job_efficiency_fetch(Cli *cli, const char *arg, bool slurm, JobEfficiencyView *ret);
