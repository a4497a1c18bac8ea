/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* A job as corrald keeps it: the user's request (as submitted, validated), who submitted
 * it, where it is in its life, and what it used. */

#include <stdint.h>
#include <sys/types.h>

#include "cpuset.h"
#include "intern.h"
#include "job-request.h"
#include "job-state.h"
#include "sched/sched.h"

/* The reason Grant carries service units in hundredths (its grant, what is used of it). */
#define JOB_GRANT_SCALE 100

/* What a job keeps in memory of its request: what a scheduling pass, List, Logs, why and
 * mail read. Members are named as in SubmitRequest. The rest (argv, script, environment,
 * io limits, tasks max, umask, the warning signal, the array's list) is read back from
 * the store (store_load_request()) when the job is launched or shown in detail. The
 * strings live in the job's packed block (job_set_request()). */
typedef struct JobRequest {
        char *name, *workdir, *stdin_path, *stdout_path, *stderr_path;
        char *gpu_type, *constraint;
        char *mail_user;
        JobDependency *dependencies; /* malloc'ed */
        uint64_t memory, walltime_sec, begin_time;
        uint32_t n_dependencies;
        unsigned cpus, gpus;
        int nice;
        unsigned mail_events;
        struct {
                uint32_t max_concurrent;
        } array;
        bool gpu_binding, exclusive, interactive;
} JobRequest;

/* Members are ordered to leave little padding: with 100,000 queued jobs every 8 bytes
 * are 800 KB. */
typedef struct Job {
        uint64_t id;
        uid_t uid;
        gid_t gid;
        /* Interned (intern.h): shared by all jobs, never freed. */
        const char *user;
        const char *project;
        const char *queue;
        JobState state;
        uint32_t requeue_count;
        const char *reason; /* why it waits, or how it ended; interned too */
        /* What memory keeps of the request (JobRequest): with 100,000 queued jobs the whole
         * of it would dominate corrald's memory, and the rest is only needed to launch the
         * job or show its details, when it is read back from the store. */
        JobRequest req;
        char *packed; /* one block holding req's strings, see job_set_request() */
        struct StrChunk *packed_chunk;
        /* The complete request, borrowed from Submit from job_set_request() until the
         * store has recorded it (store_insert_job()); NULL otherwise. */
        const SubmitRequest *submitted;
        /* Array tasks share one stored request, their first task's: request_id names it
         * (0: the job's own). request_bytes is its stored size, counted once per array
         * against MaxStoredBytesPerUser=. */
        uint64_t request_id;
        size_t request_bytes;
        bool has_script;
        bool rerunnable;
        bool held_by_admin;
        bool suspended_by_admin;
        /* Suspended by a scheduling pass to let another job run (preemption): it holds
         * its memory, not its CPUs, nobody but a pass resumes it. Stored with
         * suspended_by_admin, as bit 2 (admin 1, person 4). */
        bool suspended_by_sched;
        /* A person suspended it too (the pass's suspension and theirs raced, or they
         * suspended it while the pass held it): a pass's resume then leaves it suspended,
         * on the CPUs the pass gave it, and their resume only lifts their hold. */
        bool suspended_by_person;
        bool launching;         /* not stored */
        bool scope_empty_seen;  /* not stored: the last sweep found its scope empty */
        /* Why the launch failed, in words that may name the user's paths: shown to the
         * owner and admins only, the public reason says just "LaunchFailed". */
        char *launch_error;
        uint64_t array_job_id;
        uint32_t array_task_id;
        uint32_t bypass_count; /* not stored */

        uint64_t submit_time, eligible_time, start_time, end_time; /* seconds since the epoch */
        uint64_t suspended_usec;
        uint64_t suspend_start; /* seconds; while suspended */
        int exit_code;          /* -1: none */
        int exit_signal;
        SchedAllocation *alloc; /* once started; NULL before (most jobs of a long queue) */
        JobUsage usage;

        /* Not stored: */
        /* A limit reason's numbers (SchedWait); for Grant, service units × JOB_GRANT_SCALE. */
        uint64_t limit_value, limit_wanted;
        uint64_t est_start;
        double priority;
        SchedDep *deps; /* refreshed before every pass */
        /* Preemption: the job it was suspended for (stored: it survives a restart), what
         * stays resident of it after reclaim, whether it was reclaimed (its swap is then
         * switched off again as it resumes), and when a pass last resumed it. */
        uint64_t preempted_by;
        uint64_t resident_memory;
        uint64_t last_resume;
        /* What is to be done to its scope once the pass that decided it is committed:
         * freeze, or thaw (first moving it, switching its swap off). */
        enum { PREEMPT_ACT_NONE, PREEMPT_ACT_FREEZE, PREEMPT_ACT_THAW } preempt_act;
        bool preempt_moved, preempt_swap_off;
        bool reclaimed;
        bool cancel_requested;  /* not stored: a cancel is under way, the outcome says Cancelled */
        /* An interactive job's client and descriptors (interactive.h); NULL for the rest,
         * and for an interactive job once it has ended or after a restart. */
        struct Interactive *interactive;
} Job;

/* A zeroed job (exit_code -1, an empty request) from the job slabs. */
Job *job_new(void);
Job *job_free(Job *j);
DEFINE_TRIVIAL_CLEANUP_FUNC(Job *, job_free);

int job_set_reason(Job *j, const char *reason);
/* Keeps in j->req what memory holds of req (copied: req stays the caller's), its strings
 * in one packed block; replaces what j->req held. -ENOMEM leaves j->req empty. */
int job_set_request(Job *j, const SubmitRequest *req);
/* An output path with Slurm's patterns expanded (%j %x %u %A %a %%). *ret is malloc'ed, or
 * NULL for a NULL pattern. -ENAMETOOLONG when the expansion would not fit in PATH_MAX. */
int job_expand_path(const Job *j, const char *pattern, char **ret);
/* The public queue view, and with details the owner/admin view. */
/* full: the complete request read back from the store, for details (may be NULL). */
int job_to_info(const Job *j, bool details, const SubmitRequest *full, const char *hostname, JobInfo *ret);
