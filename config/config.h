/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* corrald's configuration: <confdir>/corral.conf and then <confdir>/corral.conf.d/NAME.conf
 * in lexical order, INI as systemd writes it. Later files override earlier ones key by key;
 * [Queue] sections with the same Name= merge key by key too, starting from the three
 * built-in queues (express, normal, bonus), which a [Queue] of another name does not
 * replace and Disabled=yes removes. Errors name file:line. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"
#include "string-table.h"
#include "projects.h"
#include "sched/sched.h"

/* Where a queue's jobs run: here, or forwarded to a Slurm cluster (corrald(8), FORWARDING
 * TO SLURM). */
typedef enum QueueBackend {
        QUEUE_BACKEND_LOCAL,
        QUEUE_BACKEND_SLURM,
        _QUEUE_BACKEND_MAX,
        _QUEUE_BACKEND_INVALID = -EINVAL,
} QueueBackend;

DECLARE_STRING_TABLE_LOOKUP(queue_backend, QueueBackend);

#define CONFIG_MAX_FORWARDED_DEFAULT 1000U
#define CONFIG_SLURM_POLL_SEC_DEFAULT 30U
#define CONFIG_SLURM_POLL_SEC_MIN 5U
/* GPUSampleSec=: how often a running job's GPUs are read through NVML (0: never). */
#define CONFIG_GPU_SAMPLE_SEC_DEFAULT 10U
#define CONFIG_GPU_SAMPLE_SEC_MAX 3600U
/* A running job whose every GPU has been below GPUIdlePercent= for GPUIdleSec= is idle. */
#define CONFIG_GPU_IDLE_PERCENT_DEFAULT 5U
#define CONFIG_GPU_IDLE_SEC_DEFAULT 1800U

/* GPUIdleAction=: what corrald does to a job once it is idle, beyond showing it. */
typedef enum GpuIdleAction {
        GPU_IDLE_ACTION_NONE,
        GPU_IDLE_ACTION_CANCEL,
        GPU_IDLE_ACTION_MAIL,
} GpuIdleAction;
/* Where corral-slurm-compat's dpkg-divert puts the real Slurm client's commands. */
#define CONFIG_SLURM_DIVERTED_BINDIR "/usr/lib/corral/slurm-client/bin"

#define CONFIG_INTERACTIVE_HANGUP_SEC_DEFAULT 30U

typedef struct QueueConfig {
        char *name;
        int32_t priority;       /* express > normal > bonus */
        bool rerunnable;        /* default for jobs that do not say */
        uint64_t max_walltime;  /* seconds; 0: none */
        uint64_t default_walltime; /* seconds; 0: unlimited */
        double charge_factor;   /* service units per core-hour (NCI: express 3, normal 1, bonus 0) */
        uint32_t max_cpus_per_job; /* 0: the machine's */
        char **allow_projects;  /* NULL: every project */
        char **allow_groups;    /* NULL: everyone; else members of these unix groups */
        uint64_t target_queue_time; /* seconds a job should wait at most (Maui's QTTARGET); 0: none */
        /* Preemption: the queues whose running jobs its jobs may suspend, and as a mask of
         * their indexes in Config.queues (set by config_load); same-queue parallel-run; and
         * whether its own jobs may be suspended at all. */
        char **preempts;
        uint64_t preempts_mask;
        bool parallel_run;
        bool preemptable;
        /* Backend=slurm: the partition (NULL: the cluster's default), the project -> account
         * map ("PROJECT:ACCOUNT" entries, one bare "ACCOUNT" for the others; NULL: the
         * project's name), and the most jobs handed to the cluster and not yet ended. */
        QueueBackend backend;
        char *slurm_partition;
        char **slurm_account;
        uint32_t max_forwarded;
        /* A local queue's jobs that have waited overflow_after seconds go to the
         * Backend=slurm queue overflow_to (NULL: none). */
        char *overflow_to;
        uint64_t overflow_after;

        /* Interactive jobs (corral run, srun --pty, salloc): taken at all, and their
         * longest walltime (0: MaxWalltime= alone). */
        bool allow_interactive;
        uint64_t max_interactive_walltime;
        bool disabled;          /* Disabled=yes: removed once every file is read */
        bool builtin;           /* one of the three corrald has without configuration */
        char **overridden;      /* built-in: the keys [Queue] sections set ("Priority", ...) */
} QueueConfig;

/* The group the built-in express queue is open to (with root and the operator group):
 * express suspends other users' normal jobs, so it is not everybody's by default.
 * debian/corral.postinst creates it. */
#define CORRAL_EXPRESS_GROUP "corral-express"


/* A [Device] section: a device declared (FPGAs, a test's fake GPUs), or one that discovery
 * found (matched by Name= or PCIAddress=) overridden or, with Hide=yes, removed. Sections
 * are kept in file order and applied in that order over discovery by corrald
 * (executor/devices.h, device_set_apply()), so a later section of the same Name= overrides
 * an earlier one key by key. */
typedef struct DeviceConfig {
        char *name;
        char *pci_address;      /* "0000:3b:00.0" */
        char *vendor;           /* Vendor= or Kind=: nvidia, amd, other; NULL: unset */
        char **nodes;           /* absolute paths below /dev */
        char *model;
        char **features;
        int numa_node;          /* CONFIG_NUMA_NODE_UNSET, -1 (none) or a node */
        int shards;             /* Shards=: CONFIG_SHARDS_UNSET, 0 (whole only) or how many */
        bool hide;
        char *where;            /* "file:line" of the section, for corrald's messages */
} DeviceConfig;
#define CONFIG_NUMA_NODE_UNSET (-2)
#define CONFIG_SHARDS_UNSET (-1)

typedef struct Config {
        char *operator_group;   /* NULL: only root is an admin */
        bool users_may_suspend;
        uint64_t kill_wait_sec;
        char *default_queue;
        /* Bounds on what one user may make corrald hold (corrald(8), "LIMITS"). */
        uint32_t max_jobs_per_user; /* not yet final (queued, held, running); 0: no limit */
        uint32_t max_array_size;    /* tasks in one array; 0: CORRAL_ARRAY_TASKS_MAX */
        uint64_t max_stored_bytes_per_user; /* stored requests of unfinished jobs; 0: no limit */
        uint32_t max_connections_per_user;  /* root is exempt */
        uint32_t max_waits_per_connection;
        /* How long an interactive job runs on once its client has gone (hangup, closed
         * connection) before it is cancelled; 0: at once. */
        uint64_t interactive_hangup_sec;
        uint64_t max_connection_output;     /* unread reply bytes before a client is dropped */
        uint32_t request_share_per_user;    /* percent of corrald's time; 0: no budget */
        uint64_t request_burst_per_user;    /* seconds of corrald's time a user may take at once */
        char *policy;           /* fcfs | easy | conservative */
        char *backfill_order;   /* priority | sjf */
        char *priority_type;    /* multifactor | fcfs (Slurm's priority/multifactor, priority/basic) */
        bool shuffle;           /* Ordering=shuffle: NCI's queue shuffling */
        SchedWeights weights;   /* PriorityWeight*= */
        /* Accounting (usage.c): the fair-share usage's half-life (0: no decay), the queues
         * whose jobs do not count toward it (IT4I's qexp), the Prometheus textfile. */
        uint64_t fairshare_half_life;
        char **fairshare_exclude_queues;
        double charge_per_gpu_hour; /* ChargePerGPUHour=: core-hours a GPU-hour counts as */
        char *metrics_file;     /* NULL: the node exporter's directory, when it exists */
        uint64_t gpu_sample_sec; /* GPUSampleSec=; 0: no GPU telemetry */
        uint32_t gpu_idle_percent; /* GPUIdlePercent=; 0: no job is ever idle */
        uint64_t gpu_idle_sec;     /* GPUIdleSec= */
        GpuIdleAction gpu_idle_action;
        bool unmanaged_gpu_avoid;  /* UnmanagedGPU=avoid: no new job on a GPU used outside Corral */
        uint32_t gpu_shards;       /* GPUShards=: each GPU's shards, unless its [Device] says; 0: none */
        bool shard_memory_cancel;  /* ShardMemoryPolicy=cancel: a shard job above its share of
                                    * its GPU's memory is cancelled; report (false): shown */
        char *slurm_bin_dir;    /* the real Slurm client; NULL: config_slurm_bin_dir() decides */
        uint64_t slurm_poll_sec;
        char *mail_prog;        /* job mail, as Slurm's MailProg; NULL: CORRAL_SENDMAIL_PATH */
        /* Preemption (sched.h, SchedPreempt). */
        double max_xfactor;
        uint64_t suspend_window_sec;
        uint64_t max_suspend_time;   /* 0: none */
        bool reclaim_suspended;
        QueueConfig *queues;
        size_t n_queues;
        char **removed_builtins; /* the built-in queues Disabled=yes removed */
        DeviceConfig *devices;
        size_t n_devices;
        /* projects.d/: none means every unix group is a project. */
        ProjectConfig *projects;
        size_t n_projects;
} Config;

Config *config_free(Config *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Config *, config_free);

/* Loads the configuration from confdir (a missing corral.conf means defaults), with the
 * project files in confdir/projects.d: all of it or, on a syntax or value error, none
 * (-EINVAL and "file:line: what" in *ret_error). */
int config_load(const char *confdir, Config **ret, char **ret_error);
/* The same from explicit paths (corral-sim --config): the main file, its drop-in
 * directory and the project directory, each NULL for none. */
int config_load_paths(const char *main_path, const char *dropdir, const char *projects_dir, Config **ret,
                      char **ret_error);

const QueueConfig *config_find_queue(const Config *c, const char *name) _pure_;
const ProjectConfig *config_find_project(const Config *c, const char *name) _pure_;
/* Whether q's AllowProjects=/AllowGroups= let in a job of project whose submitter is in
 * the groups group_names. Only the queue's rule: admins are let in by authz.c. */
bool queue_config_allows(const QueueConfig *q, const char *project, char *const *group_names) _pure_;
/* The refusal for a job that queue_config_allows() keeps out: which queue, what would let
 * it in, and how an administrator opens it. */
int queue_config_refusal(const QueueConfig *q, const char *project, char **ret);
/* The Slurm account a job of project is charged to in q (never NULL for a project). */
const char *queue_config_slurm_account(const QueueConfig *q, const char *project) _pure_;
/* The directory of the real Slurm client: SlurmBinDir=, else CONFIG_SLURM_DIVERTED_BINDIR
 * when it holds sbatch (below root, "/" in production), else /usr/bin. */
const char *config_slurm_bin_dir(const Config *c, const char *root);
/* Fills a SchedConfig from the policy settings. */
int config_sched(const Config *c, SchedConfig *ret);
