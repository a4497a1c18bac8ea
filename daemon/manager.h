/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The manager: corrald's state, and its composition root (manager.c). It owns the jobs
 * (mirrored in the store), runs a scheduling pass after every event that can change a
 * decision, has the decisions acted on by each job's backend, and answers the methods the
 * server hands it. Every daemon file takes the Manager from here; each declares its own
 * functions in a header of its own (docs/ARCHITECTURE.md, "The daemon's tiers"); only
 * manager.c, which builds the Manager and picks its tables, includes them all. */

#include <json-c/json.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "authz.h"
#include "config/config.h"
#include "devices.h"
#include "executor.h"
#include "fd-closer.h"
#include "job.h"
#include "nss-cache.h"
#include "protocol.h"
#include "server.h"
#include "store.h"
#include "worker.h"

typedef struct Manager {
        sd_event *event;
        sd_bus *bus;
        Store *store;
        Executor *executor;
        WorkerPool *workers;    /* reads that must not hold the loop (worker.h) */
        /* The store's syncs that no action waits for (only replies): one thread, one
         * sync at a time, each covering every commit made before it began. */
        WorkerPool *sync_pool;
        bool sync_in_flight;
        /* Usage reports being read, per uid (usage-report.c bounds them). */
        struct UsageInflight { uid_t uid; unsigned n; } *usage_inflight;
        size_t n_usage_inflight;
        Config *config;
        Server *server;
        FdCloser *fd_closer;    /* where users' descriptors are closed, off the loop */
        char *confdir, *statedir, *rundir;
        char hostname[256];

        Job **jobs;          /* sorted by id */
        size_t n_jobs, allocated_jobs;
        /* The same jobs by user (job-table.c), for what one user asks of their own jobs
         * (corral queue --me, a submit's per-user limits) without a walk of everyone's. */
        struct UserJobs *user_jobs; /* job-table.h */
        size_t n_user_jobs, allocated_user_jobs;
        uint64_t next_id;

        SchedContext *sched;
        SchedConfig sched_config;
        SchedNode *nodes;
        unsigned *numa_ids; /* the kernel's NUMA node id of each SchedNode */
        SchedMachine machine;
        /* The schedulable devices in force (discovery + [Device] sections, rebuilt on
         * start and reload): device g is SchedMachine.gpus[g] and bit g of an
         * allocation's gpu_mask. */
        DeviceSet *devices;
        SchedGpu *gpus;
        char **device_fence_base; /* device_fence_base() of devices; NULL: no device */
        bool sched_needed;
        SchedJob *sched_jobs;
        size_t allocated_sched_jobs;
        uint64_t *to_launch;
        size_t n_to_launch, allocated_to_launch;
        uint64_t *outcomes_done; /* outcome files to remove once the store has committed */
        size_t n_outcomes_done, allocated_outcomes_done;
        bool outcomes_rescan; /* an outcome could not be recorded: read the results again */

        /* The projects' limits as sched/ takes them (built from the configuration):
         * project i has id i + 1; project_names are interned, as Job.project is. */
        SchedProject *sched_projects;
        SchedUserLimits *sched_users;
        const char **project_names;
        size_t n_projects;
        char *config_error; /* why the files on disk do not load (file:line), for corral info */
        /* The configuration in force: the last good one saved in the state directory
         * (started on it, the files on disk did not load), and when it was loaded or
         * saved; the warning every reply carries while config_error is set. */
        bool config_lastgood;
        uint64_t config_since;
        char *config_notice;

        AuthzPolicy authz;
        /* Submissions' users and groups (nss-cache.h); NULL asks NSS every time. */
        struct NssCache *nss;
        sd_event_source *post_source, *sched_timer;
        unsigned n_running;
        uint64_t last_pass_usec; /* wall time of the last scheduling pass, for GetInfo */
        uint64_t last_pass_end;  /* CLOCK_MONOTONIC µs, of the whole manager_schedule() */
        uint64_t last_schedule_usec; /* the whole: the queue built, the pass, its results applied */
        sd_event_source *sched_defer;
        sd_event_source *sched_trim; /* gives back the passes' memory once they stop (sched-driver.c) */
        size_t last_pass_jobs;
        uint64_t last_estimate_end, last_estimate_usec; /* TestSubmit's what-if pass, spaced out */

        /* Accounting (usage.c): charges, decayed usage, grants. */
        struct Accounting *acct;
        sd_event_source *metrics_timer; /* the Prometheus textfile, each minute (metrics.c) */
        struct JobMail *mail;           /* job mail queued until the commit, and its bounds (job-mail.c) */
        /* Each queue's backend, by its Backend= (job-backend.h), picked at start-up. */
        const struct JobBackendOps *backends[_QUEUE_BACKEND_MAX];
        struct Forwarder *forward;      /* the Slurm backend's links and poll (backend-slurm.c) */
        struct GpuJobs *gpu_jobs;       /* GPU telemetry and each running job's figures (gpu-jobs.c) */
} Manager;

int manager_new(sd_event *event, sd_bus *bus, const char *confdir, const char *statedir, const char *rundir,
                Manager **ret);
Manager *manager_free(Manager *m);
/* Each queue's backend by its Backend= (manager_new() does it; for tests that build a
 * Manager of their own). */
void manager_pick_backends(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* The jobs of the store into memory, and the next job id: what a start-up (or a test's
 * restart) does first. */
int manager_load_jobs(Manager *m);
/* Loads jobs; each backend takes its unfinished ones back (re-adopts running scopes, reads
 * the Slurm links) and settles the ones lost while we were down. */
int manager_startup(Manager *m);
int manager_reload(Manager *m, char **ret_error);
/* At start-up: the configuration in confdir, saved as the last good one; when it does not
 * load, the last good one, with the error in config_error (logged); -EINVAL, logged,
 * when there is none. */
int manager_load_config(Manager *m);
/* The configuration in force, in words ("the last good configuration, saved ..."). */
int manager_config_in_force(Manager *m, char **ret);
/* A status line for sd_notify. */
void manager_status(Manager *m, char *buf, size_t size);

/* Listens on socket_path (NULL: the socket systemd passed) and serves the methods
 * (methods.c) there. The manager owns the server. */
int manager_listen(Manager *m, const char *socket_path);
