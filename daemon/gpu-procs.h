/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Whose the processes NVML lists on each GPU are: each one's cgroup (<proc>/PID/cgroup)
 * and owner (<proc>/PID), read on the telemetry thread (never the event loop) against a
 * procfs directory fd, a fake tree in tests. A process in no corral-job-N.scope uses its
 * GPU outside Corral (UnmanagedGPU=, gpu-jobs.c). */

#include <stdint.h>

#include "macro.h"
#include "nvml.h"

/* The job whose corral-job-N.scope the cgroup path is in, at any depth ("/corral.slice/
 * corral-p.slice/corral-job-12.scope/payload" -> 12); 0 when none. */
uint64_t gpu_cgroup_job_id(const char *path) _pure_;

/* Fills each listed process's owner_known, uid and job_id in the n samples from proc_fd.
 * A process gone since NVML listed it is left unknown. */
void gpu_samples_owners(int proc_fd, NvmlGpuSample *samples, size_t n);
