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
#include "projects.h"
#include "sched/sched.h"

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
        char *metrics_file;     /* NULL: the node exporter's directory, when it exists */
        char *mail_prog;        /* job mail, as Slurm's MailProg; NULL: CORRAL_SENDMAIL_PATH */
        /* Preemption (sched.h, SchedPreempt). */
        double max_xfactor;
        uint64_t suspend_window_sec;
        uint64_t max_suspend_time;   /* 0: none */
        bool reclaim_suspended;
        QueueConfig *queues;
        size_t n_queues;
        char **removed_builtins; /* the built-in queues Disabled=yes removed */
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
/* Fills a SchedConfig from the policy settings. */
int config_sched(const Config *c, SchedConfig *ret);
