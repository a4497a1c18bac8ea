/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The manager: corrald's state and policy. It owns the jobs (mirrored in the store), runs
 * a scheduling pass after every event that can change a decision, applies the decisions
 * through the executor, and answers the methods the server hands it. */

#include <json-c/json.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "authz.h"
#include "config/config.h"
#include "devices.h"
#include "executor.h"
#include "job-forward.h"
#include "job.h"
#include "nss-cache.h"
#include "protocol.h"
#include "fd-closer.h"
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
        struct UserJobs *user_jobs;
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
        struct Forwarder *forward;      /* Backend=slurm queues' links and poll (job-forward.c) */
} Manager;

int manager_new(sd_event *event, sd_bus *bus, const char *confdir, const char *statedir, const char *rundir,
                Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Loads jobs, re-adopts running scopes and settles the ones lost while we were down. */
/* The jobs of the store into memory, and the next job id: what a start-up (or a test's
 * restart) does first. */
int manager_load_jobs(Manager *m);
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
/* The methods, for the server's ops table (methods.c). */
extern const ServerOps manager_server_ops;
/* The job table (job-table.c). */
Job *manager_find_job(Manager *m, uint64_t id);
/* Where a job of this id is or would go in jobs (n of them, sorted by id): the first whose
 * id is not below it. manager_job_index() for m->jobs. */
size_t job_array_index(Job *const *jobs, size_t n, uint64_t id);
size_t manager_job_index(Manager *m, uint64_t id);
/* Appends j (the highest id yet) to the table and to its user's jobs. */
int manager_add_job(Manager *m, Job *j);
/* Frees the table's jobs from index n on (the last ones added: a submission rolled back). */
void manager_truncate_jobs(Manager *m, size_t n);
/* Forgets final jobs that ended more than a day ago (the store keeps them). */
void manager_purge_finished(Manager *m, uint64_t now);
/* Frees every job, and the table. */
void manager_free_jobs(Manager *m);
/* One user's jobs in memory, in id order: borrowed, valid until the next job is added or
 * purged. NULL when the user has none (user: a name, as a request gives it). */
typedef struct UserJobs {
        const char *user; /* interned, as Job.user */
        Job **jobs;
        size_t n, allocated;
        /* The first job's uid; mixed_uids: not every job's (the name was given to another
         * account, between their submissions). Limits count by uid (check_user_limits()). */
        uid_t uid;
        bool mixed_uids;
} UserJobs;
const UserJobs *manager_user_jobs(Manager *m, const char *user);

/* Who acts on a job: what a transition or a mark leaves on it depends on it (an
 * administrator's hold or suspension binds the job's owner, a pass's suspension only a
 * pass lifts). */
typedef enum JobActor {
        JOB_BY_CORRALD, /* corrald on its own: the executor's and Slurm's reports, a restart */
        JOB_BY_PERSON,  /* the job's owner, or an administrator acting on their own job */
        JOB_BY_ADMIN,   /* an administrator acting on another's job (authz_is_admin_action()) */
        JOB_BY_SCHED,   /* a scheduling pass (preemption) */
} JobActor;

/* Every state change of a job, and only here (job-transition.c): checks the transition
 * table (-EBUSY/-EALREADY/-EINVAL as job_state_transition_allowed() says, nothing
 * changed), sets what goes with the event (start and end times, suspended time, a fresh
 * run on requeue, the running count, who holds or suspends it, as `by` says), sets the
 * reason, writes the job into the open transaction (SUBMIT: inserts it and adds it to the
 * table), tells waiters and asks for a scheduling pass. One HOLD of a held job is not
 * -EALREADY: an administrator's, of a job its owner held, makes the hold theirs (stored).
 * Nobody's hold of a held job lowers an administrator's. */
int manager_job_transition_by(Manager *m, Job *j, JobEvent event, JobState to, const char *reason,
                              JobActor by);
/* The same, by corrald itself (JOB_BY_CORRALD). */
int manager_job_transition(Manager *m, Job *j, JobEvent event, JobState to, const char *reason);

/* What qualifies a job's state without changing it, set only by manager_job_mark()
 * (job-transition.c, which tests/unit/test-state-writes.sh holds to it). */
typedef enum JobMark {
        JOB_MARK_LAUNCHED,     /* its launch is over (started, failed, or it runs on Slurm) */
        JOB_MARK_CANCEL,       /* a cancel is under way: its outcome says Cancelled */
        JOB_MARK_REQUEUE,      /* a requeue is under way: its outcome queues it again */
        JOB_MARK_REQUEUE_HOLD, /* the same, held */
        /* A person suspends a job a pass holds suspended (preemption): both hold it
         * (stored). -EBUSY unless a pass holds it. */
        JOB_MARK_SUSPEND,
        /* That person's hold is lifted, the pass's stands (stored). -EBUSY unless a
         * person holds it suspended beside a pass. */
        JOB_MARK_RESUME,
} JobMark;
/* Sets what mark says (by: who does it); the launch and cancel marks are kept in memory
 * only, as ever. A store failure leaves the job as it was. */
int manager_job_mark(Manager *m, Job *j, JobMark mark, JobActor by);
/* Stores a change that is not a state change (a reason, a flag) and tells waiters. */
int manager_job_save(Manager *m, Job *j);
json_object *manager_job_json(Manager *m, const Job *j, bool details);

/* Sets every project's [Slice] caps on its slice, and lifts those of projects the
 * configuration before (old, may be NULL) had and this one has not (project-slices.c);
 * asynchronous, a failure is logged. */
void manager_apply_slices(Manager *m, const Config *old);

/* The id of a job's project in the scheduler's limits (sched-driver.c); 0 when it has none. */
uint32_t manager_project_id(Manager *m, const Job *j);

/* The adapter to sched/ (sched-driver.c): one pass over the queue, its starts recorded;
 * whether a pass must wait (spacing). */
int manager_schedule(Manager *m);
/* Frees what only passes use (the SchedJob array, the pass's scratch); a timer calls it
 * once passes have stopped for a while. */
void manager_sched_trim(Manager *m);
/* The job as the scheduler sees it (its dependencies are filled by a pass only). */
void manager_sched_job(Manager *m, Job *j, SchedJob *ret);
/* job-preempt.c: a pass's SCHED_DECISION_SUSPEND and SCHED_DECISION_RESUME. */
void manager_preempt_suspend(Manager *m, Job *j, const SchedDecision *d);
void manager_preempt_resume(Manager *m, Job *j, const SchedDecision *d);
/* After the commit: the freeze or thaw recorded for j (from manager_launch_pending()). */
void manager_preempt_act(Manager *m, Job *j);
/* corral why: what holds the job back and what its priority is made of (job-why.c). */
json_object *manager_job_why(Manager *m, Job *j);
bool manager_sched_deferred(Manager *m);
/* TestSubmit: when the probe (a job not in the table, with an unused id) would start if
 * submitted now: now, an estimate, or SCHED_TIME_INFINITY, and the reason it would wait
 * (NULL: none). -EBUSY when a what-if ran too recently, -ENOMEM. */
int manager_estimate_start(Manager *m, Job *probe, uint64_t *ret_est, const char **ret_reason);
/* The walltime limit a job runs under (sched_effective_walltime() with its queue's). */
uint64_t manager_job_walltime(Manager *m, const Job *j);

/* Job mail (job-mail.c): the kind a state change calls for under the job's
 * --mail-type (0: none), the message for it. manager_job_mail() only queues (the
 * transition calls it); manager_commit() sends the queue once the store has committed
 * the states it speaks of, and drops it when the commit fails. Each user gets at most
 * JOB_MAIL_USER_BUDGET messages per JOB_MAIL_WINDOW_SEC, the rest in one digest; an
 * array with ARRAY_TASKS at most JOB_MAIL_ARRAY_TASKS_CAP, then its summary. */
#define JOB_MAIL_USER_BUDGET 50U
#define JOB_MAIL_WINDOW_SEC 3600U
#define JOB_MAIL_ARRAY_TASKS_CAP 20U
MailEvent job_mail_event(const Job *j, JobEvent event);
int job_mail_compose(const Job *j, MailEvent what, uint64_t now, char **ret);
void manager_job_mail(Manager *m, const Job *j, JobEvent event);
/* The store's commit, then the mail it makes true (once that is on disk); -errno from the
 * commit or the sync. */
int manager_commit(Manager *m);
/* Every commit so far on disk, on the loop's thread, and the replies that waited for it
 * sent: before corrald acts outside itself on what the commits hold (a job started, an
 * sbatch run, an outcome file removed, mail sent). */
int manager_sync(Manager *m);
/* CLOCK_MONOTONIC as of this event-loop iteration (sd_event_now()): for what may be a few
 * milliseconds old, such as a cache's age; read once per iteration, not per use. */
uint64_t manager_now(Manager *m);
size_t manager_mail_queued(Manager *m);
void manager_mail_flush(Manager *m, uint64_t now);
size_t manager_mail_discard(Manager *m);
/* The TIME_LIMIT_50/80/90 warnings and the digests due by now (the mail timer). */
void manager_mail_tick(Manager *m, uint64_t now);
/* When a run reaches percent of its walltime (seconds since the epoch; time suspended
 * does not count); UINT64_MAX while suspended or without a walltime. */
uint64_t job_mail_time_limit_due(const Job *j, uint64_t walltime, unsigned percent);
/* Where the messages go (default: the executor, to MailProg=); for tests. */
typedef int (*JobMailSender)(void *userdata, uint64_t job_id, uid_t uid, const char *message);
void job_mail_set_sender(Manager *m, JobMailSender sender, void *userdata);
struct JobMail *job_mail_free(struct JobMail *q);

/* Launching (job-launch.c), after the commit: the starts a pass recorded in to_launch,
 * and the freezes and thaws (JobRun.preempt_act) of its preemptions. */
void manager_launch_pending(Manager *m);

/* The methods Usage and Share (usage-report.c), over the accounting (usage.c). */
/* Answered later, off the loop, when call is given (NULL: now, as unit tests call it). */
json_object *manager_method_usage(Manager *m, Call *call, const Peer *peer, json_object *params);
json_object *manager_method_share(Manager *m, const Peer *peer, json_object *params);
/* Writes the metrics (metrics.c) to MetricsFile=, else to the node exporter's textfile
 * directory when it exists; 0 when there is nowhere to write. Atomic: temp + rename. */
int manager_write_metrics(Manager *m);
/* The textfile's path now, or NULL. */
const char *manager_metrics_path(Manager *m);

/* The spec the executor starts a job from (job-spec-build.c). */
int manager_build_spec(Manager *m, Job *j, JobSpec **ret);

/* The executor's reports (job-outcome.c). */
void manager_on_job_started(Executor *e, uint64_t id, int error, const char *message, void *userdata);
void manager_on_job_finished(Executor *e, const JobOutcome *o, void *userdata);
/* Ends a job whose launch failed: the details stay out of the public reason. */
int manager_job_launch_failed(Manager *m, Job *j, JobState state, const char *detail);
