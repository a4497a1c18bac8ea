/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The executor: runs jobs as transient systemd scopes, asynchronously on the daemon's
 * sd-event loop. It never blocks: every systemd call is an async sd-bus call, and results
 * arrive through callbacks.
 *
 *   lifecycle.c  executor_new()/executor_free(): the run directory, systemd's version
 *   launch.c     StartTransientUnit with the job's limits and its supervisor as the PID
 *   control.c    freeze/thaw (FreezeUnit/ThawUnit, confirmed in cgroup.events), cancel
 *   results.c    the supervisors' outcome files, and the running scopes after a restart
 *   job-cgroup.c what the daemon reads of a job's scope: processes left, memory, usage so far
 *   mail.c       job mail through sendmail, in a transient service
 *   slice-caps.c a project slice's caps (SetUnitProperties) */

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "job-spec.h"
#include "spec-json.h"

typedef struct Executor Executor;

/* error < 0: the job did not start; message says why in words for the user. */
typedef void (*executor_started_t)(Executor *e, uint64_t job_id, int error, const char *message, void *userdata);
/* A job ended (or never launched; see launch_errno). The outcome file stays until
 * executor_outcome_consumed() so that a daemon that dies before recording it sees it again. */
typedef void (*executor_finished_t)(Executor *e, const JobOutcome *o, void *userdata);
/* Completion of freeze/thaw/cancel. */
typedef void (*executor_done_t)(Executor *e, uint64_t job_id, int error, const char *message, void *userdata);

typedef struct ExecutorConfig {
        const char *supervisor_path; /* corral-supervisor */
        const char *run_dir;         /* holds jobs/ (specs) and results/ (outcomes) */
        const char *cgroup_root;     /* where every job cgroup is read and written: CGROUP_ROOT */
        uint64_t kill_wait_sec;      /* SIGTERM → SIGKILL grace */
        /* Scopes are ordered Before= this unit (the daemon's own), so that at shutdown the
         * daemon stops first and never mistakes the jobs being stopped for cancellations:
         * they are found lost after the reboot and requeued or marked NodeFail. */
        const char *before_unit;
        executor_started_t on_started;
        executor_finished_t on_finished;
        void *userdata;
} ExecutorConfig;

/* bus NULL: an executor that reads the jobs' cgroups and outcome files and asks systemd
 * nothing (its launches and controls fail with -ENOTCONN), for unit tests. */
int executor_new(sd_event *event, sd_bus *bus, const ExecutorConfig *config, Executor **ret);
Executor *executor_free(Executor *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(Executor *, executor_free);

/* Starts the job; on_started reports the result. -EEXIST if it is being launched. */
int executor_start(Executor *e, const JobSpec *spec);
/* The same with the job's stdin, stdout and stderr given as descriptors (an interactive
 * job's, n_fds 3; NULL/0: the spec's files): the supervisor inherits them and the job
 * gets them in place of any file; a terminal among them becomes the job's controlling
 * terminal, with the job in its foreground. The caller keeps its own copies. */
int executor_start_fds(Executor *e, const JobSpec *spec, const int *fds, size_t n_fds);
bool executor_is_launching(Executor *e, uint64_t job_id);

/* Suspends or resumes the job's scope; done is called once cgroup.events confirms. */
int executor_freeze(Executor *e, uint64_t job_id, const char *project, bool freeze, executor_done_t done,
                    void *userdata);
/* Thaws a frozen job's scope after moving it (runtime AllowedCPUs=, and AllowedMemoryNodes=,
 * which migrates its pages on cgroup v2; NULL: unchanged) and, with swap_off, setting its
 * MemorySwapMax= back to 0 after executor_reclaim(); done once thawed. */
int executor_thaw_onto(Executor *e, uint64_t job_id, const char *project, const CpuSet *cpus, const CpuSet *mems,
                       bool swap_off, executor_done_t done, void *userdata);
/* Pushes a frozen job's memory out: allows it swap (MemorySwapMax=infinity) and writes its
 * memory.current to its memory.reclaim, in a child. -EOPNOTSUPP without memory.reclaim
 * (kernel < 5.19); done when the child is through. */
int executor_reclaim(Executor *e, uint64_t job_id, const char *project, executor_done_t done, void *userdata);
/* Stops the job: thaws it if frozen, then SIGTERM to the scope (the supervisor gives the
 * job the grace period and records the outcome), SIGKILL if the scope outlives that. */
int executor_cancel(Executor *e, uint64_t job_id, executor_done_t done, void *userdata);

/* Reads outcome files already there (after a restart), then watches for new ones. */
int executor_scan_outcomes(Executor *e);
/* Whether an outcome was left unread since the last call (short of memory while reading
 * it): the caller scans again before it takes a job with no process left for lost. */
bool executor_outcomes_unread(Executor *e);
/* Removes a recorded outcome and, with remove_spec, the job's spec file: not when the
 * job has been launched again under the same id (a requeue), whose spec it now is. */
int executor_outcome_consumed(Executor *e, uint64_t job_id, bool remove_spec);

/* The ids of all corral-job-*.scope units systemd has loaded and active, synchronously:
 * for start-up only, before the daemon serves anyone. */
int executor_list_running(Executor *e, uint64_t **ret_ids, size_t *ret_n);

/* Hands a whole message (headers, blank line, body) to mailprog -t -oi, run by systemd as
 * uid in a transient service; asynchronous and best effort (failures are logged).
 * -ENOENT/-EACCES: no mailprog to run. */
/* The slice mail runs in (units/corral-mail.slice); so no project may be named "mail". */
#define EXECUTOR_MAIL_SLICE "corral-mail.slice"
int executor_send_mail(Executor *e, uint64_t job_id, uid_t uid, const char *mailprog, const char *message);

/* A short command run by systemd as uid in a transient service of its own
 * (<unit_prefix>-<time>-<n>.service in EXECUTOR_MAIL_SLICE), its output read back over
 * pipes (run-command.c): the Slurm client for a forwarding queue. done() is called once,
 * from the event loop, when systemd has answered and both pipes have ended: error is
 * systemd's refusal (-EIO, its message as err) or -EFBIG for output over max_output (16M
 * when 0); the exit status is not reported, the output says it. */
typedef struct ExecutorCommand {
        const char *unit_prefix;
        const char *description;
        uid_t uid;
        char **argv;            /* argv[0] absolute */
        char **env;             /* the whole environment, beside what systemd sets for User= */
        const char *stdin_data; /* NULL: /dev/null */
        mode_t umask;
        uint64_t timeout_sec;   /* 0: 120 */
        size_t max_output;
} ExecutorCommand;
typedef void (*ExecutorCommandDone)(int error, const char *out, const char *err, void *userdata);
int executor_run_command(Executor *e, const ExecutorCommand *cmd, ExecutorCommandDone done, void *userdata);

/* The cgroup path of a job's scope, relative to the cgroup root. */
int executor_job_cgroup(uint64_t job_id, const char *project, char **ret);

/* What the daemon reads of a job's scope (job-cgroup.c), below config->cgroup_root; each
 * -ENOENT when the scope has no cgroup (not created yet, or gone). */
/* Whether a process is left in it (cgroup.events): 1 or 0. */
int executor_job_populated(Executor *e, uint64_t job_id, const char *project);
/* Its memory.current. */
int executor_job_memory_current(Executor *e, uint64_t job_id, const char *project, uint64_t *ret);
/* Its usage so far: *ret holds the accounting an outcome carries (job_outcome_read_usage()),
 * read now, and the job's id; the rest is zero. */
int executor_job_usage(Executor *e, uint64_t job_id, const char *project, JobOutcome *ret);

/* Sends sig (1.._NSIG-1) to the job's processes, or with batch_only to its main process
 * alone, through its supervisor (JOB_SIGNAL_RELAY): 0 once queued, -ESRCH when the scope
 * or its supervisor is gone, -EOPNOTSUPP for a supervisor from before the relay (a job
 * started before an upgrade), -ENOTCONN without an executor. */
int executor_signal(Executor *e, uint64_t job_id, const char *project, int sig, bool batch_only);

/* A project slice's caps (slice-caps.c); each at 0 (allowed_cpus NULL) is none: systemd's
 * default, which lifts the cap if it was set before. allowed_cpus is borrowed for the call. */
typedef struct ExecutorSliceCaps {
        const CpuSet *allowed_cpus;
        uint64_t memory_max, memory_high; /* bytes */
        uint64_t cpu_weight, io_weight;   /* 1..10000 */
        uint64_t tasks_max;
} ExecutorSliceCaps;
/* error < 0: systemd refused them, message says why (its words). slice is the unit's name. */
typedef void (*executor_slice_caps_done_t)(const char *slice, int error, const char *message, void *userdata);
/* Sets the caps of project's slice, runtime, asynchronously; done (if any) is called once
 * systemd has answered (or the connection failed). It takes the bus, not the Executor:
 * corrald sets the caps when it loads its configuration, which at start-up is before the
 * executor exists. -ENOTCONN with no bus; -EINVAL for a project no slice can be named for. */
int executor_set_slice_caps(sd_bus *bus, const char *project, const ExecutorSliceCaps *caps,
                            executor_slice_caps_done_t done, void *userdata);
/* The SetUnitProperties call executor_set_slice_caps() sends, and the slice's name. */
int executor_slice_caps_message(sd_bus *bus, const char *project, const ExecutorSliceCaps *caps,
                                sd_bus_message **ret, char **ret_slice);
