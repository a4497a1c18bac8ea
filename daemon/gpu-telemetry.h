/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* GPU telemetry off the event loop: NVML (executor/nvml.c) on a thread of its own. The
 * loop asks for a snapshot (every GPU's identity and counters, in NVML's order) and gets it
 * back through done(), on the loop. A call that the driver does not answer within the
 * timeout makes telemetry "stalled": done() hears -ETIMEDOUT at once, no new snapshot is
 * asked for until the thread comes back (it may never: a wedged driver's call cannot be
 * interrupted), and scheduling never waits on it. Freeing leaves a wedged thread behind,
 * detached, with what it shares. */

#include <systemd/sd-event.h>

#include "macro.h"
#include "nvml.h"

typedef struct GpuTelemetry GpuTelemetry;

typedef enum GpuTelemetryState {
        GPU_TELEMETRY_STARTING,  /* NVML not loaded yet */
        GPU_TELEMETRY_ON,
        GPU_TELEMETRY_OFF,       /* no NVML here, or it failed to start: why in the reason */
        GPU_TELEMETRY_STALLED,   /* a call has not returned within the timeout */
        _GPU_TELEMETRY_STATE_MAX,
} GpuTelemetryState;

typedef struct GpuSnapshot {
        NvmlGpuInfo *gpus;
        NvmlGpuSample *samples;  /* samples[i] is of gpus[i] */
        size_t n_gpus;
        uint64_t taken_usec;     /* CLOCK_MONOTONIC, when the thread finished reading */
} GpuSnapshot;

/* On the loop. r < 0: no snapshot (s NULL): -ETIMEDOUT (stalled), or NVML's failure (the
 * reason says it). s is valid during the call only. */
typedef void (*gpu_telemetry_done_t)(GpuTelemetry *t, int r, const GpuSnapshot *s, void *userdata);

/* library: NULL for nvml_open()'s default. timeout_usec: how long one snapshot may take.
 * The thread starts, and loads NVML, on the first request. */
int gpu_telemetry_new(sd_event *event, const char *library, uint64_t timeout_usec,
                      gpu_telemetry_done_t done, void *userdata, GpuTelemetry **ret);
/* Where procfs is for the processes' owners (NULL: /proc; a fake tree in tests). Before the
 * first request only: -EBUSY after. */
int gpu_telemetry_set_proc_root(GpuTelemetry *t, const char *path);
GpuTelemetry *gpu_telemetry_free(GpuTelemetry *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(GpuTelemetry *, gpu_telemetry_free);

/* Asks for a snapshot: 0; -EBUSY while one is under way (or stalled), -ENODEV when
 * telemetry is off. Never blocks. */
int gpu_telemetry_request(GpuTelemetry *t);

GpuTelemetryState gpu_telemetry_state(const GpuTelemetry *t, const char **ret_reason);
const char *gpu_telemetry_state_to_string(GpuTelemetryState s) _const_;
