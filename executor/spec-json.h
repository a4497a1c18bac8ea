/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <signal.h>

#include "job-spec.h"

/* A signal for a job's processes (scancel --signal), relayed by its supervisor: corrald
 * queues JOB_SIGNAL_RELAY to the supervisor with the signal as its value, ORed with
 * JOB_SIGNAL_RELAY_BATCH for the job's main process alone. Not systemd's KillUnit: that
 * reaches the supervisor too, which a SIGTERM stops and a SIGUSR1 would end. */
#define JOB_SIGNAL_RELAY (SIGRTMIN + 2)
#define JOB_SIGNAL_RELAY_BATCH 0x10000

/* The job spec as the daemon hands it to the per-job supervisor (a root-only file in the
 * run directory): JSON, so a daemon and a supervisor of different versions can still read
 * each other and a human can inspect a stuck launch. */
int job_spec_to_json(const JobSpec *spec, char **ret);
int job_spec_from_json(const char *text, JobSpec **ret);

/* What the supervisor reports when the job has ended: plain data, also JSON. */
typedef struct JobOutcome {
        uint64_t id;
        int exit_code;       /* valid when signal == 0 and launch_errno == 0 */
        int signal;          /* the terminating signal, 0 if it exited */
        bool oom_killed;     /* memory.events oom_kill advanced */
        bool timed_out;      /* the supervisor killed it at its walltime */
        bool cancelled;      /* the supervisor was asked to stop it (SIGTERM to the scope) */
        int launch_errno;    /* > 0: it never ran; launch_error says which step failed */
        /* What failed and why, in words fit for anyone's eyes (the public queue view): no
         * path, no argument, e.g. "cannot open the output file: Permission denied". */
        char *launch_error;
        /* The same with the path or program named, for the job's owner and the admin (the
         * supervisor also writes it to the job's journal stream). May be NULL. */
        char *launch_detail;
        uint64_t start_usec, end_usec; /* CLOCK_REALTIME */
        uint64_t suspended_usec;       /* time the scope spent frozen, as the supervisor saw it */
        /* Accounting from the job's cgroup at its end. */
        uint64_t cpu_usage_usec, cpu_user_usec, cpu_system_usec;
        uint64_t memory_peak, io_read_bytes, io_write_bytes, io_read_ios, io_write_ios;
        uint64_t pids_peak, oom_kills;
        /* Stall totals (PSI) of the job's cgroup, µs: some/full for cpu, memory and io,
         * read as it ends, when the scope is still there. */
        bool has_pressure;
        uint64_t cpu_some_usec, cpu_full_usec, memory_some_usec, memory_full_usec, io_some_usec, io_full_usec;
} JobOutcome;

static inline void job_outcome_done(JobOutcome *o) {
        o->launch_error = mfree(o->launch_error);
        o->launch_detail = mfree(o->launch_detail);
}

/* The accounting fields of o (cpu_* to io_full_usec) from the cgroup at root_fd/cgroup
 * as it is now: the one reading of a job's counters, by the supervisor at the job's end
 * and by executor_job_usage() while it runs (job-cgroup.c). A counter the kernel does not
 * keep leaves its field as it was. -ENOENT when the cgroup is gone. */
int job_outcome_read_usage(int root_fd, const char *cgroup, JobOutcome *o);

int job_outcome_to_json(const JobOutcome *o, char **ret);
int job_outcome_from_json(const char *text, JobOutcome *ret);
