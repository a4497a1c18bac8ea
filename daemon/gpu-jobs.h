/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* What running jobs do with their GPUs: every GPUSampleSec= a snapshot of NVML's figures
 * (gpu-telemetry.c, off the loop), each GPU a RUNNING job holds sampled (a suspended job's
 * are not), its figures kept in a table of their own by job id and written to the store
 * (job_gpu_usage) once the job no longer holds the GPU. Discovery's view of each NVIDIA
 * GPU (procfs/sysfs, which stays what scheduling uses) is compared with NVML's, each
 * disagreement logged once. */

#include <json-c/json.h>
#include <sys/types.h>

#include "devices.h"
#include "gpu-telemetry.h"
#include "manager.h"
#include "nvml.h"
#include "store.h"

/* One job's figures for one GPU over one run, while it runs. */
typedef struct GpuJobFigures {
        uint64_t job_id;
        uint32_t run;            /* the job's requeue count when first sampled */
        unsigned gpu;            /* Corral's index */
        uint64_t start_time;     /* the job's, seconds since the epoch */
        uint64_t last_sample;    /* seconds since the epoch */
        uint32_t samples;        /* readings with a utilisation */
        uint64_t util_sum;
        unsigned util_max;
        uint64_t memory_max;
        /* The job's own processes' memory on the GPU (NVML's per-process figures of the
         * processes in its cgroup, summed) at its highest; UINT64_MAX: none listed yet. */
        uint64_t own_memory_max;
        uint64_t own_memory_last; /* at the last reading; UINT64_MAX: none listed then */
        /* A shard job's share of the GPU's memory (its K of N shards), and whether its own
         * processes' went above it (ShardMemoryPolicy=); share 0: not a shard job, or the
         * GPU's memory unknown. */
        uint64_t share_bytes;
        bool share_exceeded;
        bool share_logged;       /* the excess logged */
        bool share_acted;        /* ShardMemoryPolicy=cancel done */
        uint64_t energy_mj;      /* the counter's increase across readings */
        uint64_t energy_prev_mj; /* the last reading; UINT64_MAX: none yet */
        bool energy_known;
        /* Idle (GPUIdlePercent=, GPUIdleSec=): how long by the samples' clock (the snapshot's
         * CLOCK_MONOTONIC, in seconds) it has read
         * below the threshold without a break; the stretch's last sample (0: none open). */
        uint64_t idle_sec;
        uint64_t idle_last;
        bool idle_acted;         /* GPUIdleAction= done for the job's idle stretch (kept on each of
                                  * its GPUs; cleared once the job is not idle) */
} GpuJobFigures;

#define GPU_JOB_FIGURES_INIT { .energy_prev_mj = UINT64_MAX, .own_memory_max = UINT64_MAX, .own_memory_last = UINT64_MAX }

/* Adds one reading. A counter that went back (the driver reloaded) restarts the sum from
 * the new reading. The processes NVML lists that /proc puts in f's job count as its own. */
void gpu_job_figures_add(GpuJobFigures *f, const NvmlGpuSample *s, uint64_t now);
/* The idle clock: a reading below below_percent adds the time since the stretch's last
 * one (none on the stretch's first reading), one at or above it ends the stretch and
 * zeroes the count, an unknown one or a suspension (gpu_job_figures_idle_pause) keeps
 * the count but opens a new stretch, so a pause's time never counts. */
void gpu_job_figures_idle(GpuJobFigures *f, int utilization, uint64_t now, unsigned below_percent);
void gpu_job_figures_idle_pause(GpuJobFigures *f);
/* The row to store, with end_time (seconds since the epoch) the end of its hold. */
void gpu_job_figures_to_store(const GpuJobFigures *f, uint64_t end_time, StoreGpuUsage *ret);

/* Whether discovery's d and NVML's g disagree (model, PCI address, NUMA node, UUID, where
 * both say): 1 with what differs in *ret ("gpu0: model: procfs says ..., NVML says ..."),
 * 0 when they agree, -ENOMEM. */
int gpu_cross_check(const Device *d, const NvmlGpuInfo *g, char **ret);
/* The reading in s of d, by UUID, else PCI address; -1: NVML does not see it. */
ssize_t gpu_snapshot_find(const GpuSnapshot *s, const Device *d);

/* How many of the processes NVML listed on a GPU belong to no Corral job (by /proc). */
size_t gpu_sample_unmanaged(const NvmlGpuSample *s) _pure_;
/* Bit g: Corral's GPU g (ds) runs a process of no job in s. */
uint64_t gpu_unmanaged_mask(const DeviceSet *ds, const GpuSnapshot *s) _pure_;

/* Starts the sampling (GPUSampleSec=, read at each round so a reload takes effect);
 * _at with procfs elsewhere (tests' fake tree; NULL: /proc). */
int manager_gpu_jobs_start(Manager *m);
int manager_gpu_jobs_start_at(Manager *m, const char *proc_root);
/* The GPUs in use outside Corral by the last snapshot (0 while telemetry is not on). */
uint64_t manager_gpu_jobs_unmanaged(Manager *m);
/* The GPUs in MIG mode by the last snapshot of a live telemetry: given to no job whole. */
uint64_t manager_gpu_jobs_mig(Manager *m);
/* The MIG devices of a GPU whose layout changed under a running job (a MIG device it holds
 * is gone since a reload): given to no new job until that job ends, so nothing is placed
 * on a GPU being re-sliced. */
uint64_t manager_gpu_jobs_mig_unsettled(Manager *m);
void manager_gpu_jobs_free(Manager *m);
/* The last snapshot (NULL: none yet, or telemetry not started) and telemetry's state now,
 * for the metrics file. */
const GpuSnapshot *manager_gpu_jobs_last(Manager *m, GpuTelemetryState *ret_state);
/* GetInfo's "gpu_telemetry": its state, why, what NVML and discovery disagree on, and
 * the last snapshot's figures per GPU. */
json_object *manager_gpu_jobs_info_json(Manager *m);
/* Whether running job j holds GPUs that have all been idle (below GPUIdlePercent=) for
 * GPUIdleSec= at least: the shortest of their idle times, in seconds, with how many GPUs
 * in *ret_gpus; 0 when not. */
uint64_t manager_gpu_jobs_idle_sec(Manager *m, const Job *j, unsigned *ret_gpus);
/* The sentence corral why and show say of an idle job ("its 2 GPUs (gpu0, gpu1) have been
 * below 5 % for 42 min"), NULL when it is not idle (or -ENOMEM). */
char *manager_gpu_jobs_idle_text(Manager *m, const Job *j);
/* What the mail at job j's end says of its GPUs, a line each, from the figures of its
 * last run (not settled into the store yet when its end is mailed). NULL: it neither
 * asked for GPUs nor was read on any, or -ENOMEM. */
char *manager_gpu_jobs_mail_text(Manager *m, const Job *j);
/* Whether shard job j's own processes went above its share of its GPU's memory: the
 * sentence show and why say ("its processes used up to 30G of gpu0's memory, above its
 * share of 20G (1 of 2 shards): a shared GPU's memory is not fenced"); NULL when not. */
char *manager_gpu_jobs_share_text(Manager *m, const Job *j);
/* Running job j's own processes' memory on its GPU gpu at the last reading (NVML's
 * per-process figures); UINT64_MAX: none listed. */
uint64_t manager_gpu_jobs_own_memory(Manager *m, const Job *j, unsigned gpu);
/* corral queue's GPU%: the mean utilisation of running job j's GPUs at the last reading of
 * a live telemetry; -1 when there is none. */
int manager_gpu_jobs_util_now(Manager *m, const Job *j);
/* Show's "gpu_usage" for job: the stored rows of its latest run, else the figures so far
 * of a running job. NULL: none (or -ENOMEM). */
json_object *manager_gpu_jobs_usage_json(Manager *m, uint64_t job_id);
