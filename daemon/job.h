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

typedef struct Job {
        uint64_t id;
        uid_t uid;
        gid_t gid;
        /* Interned (intern.h): shared by all jobs, never freed. */
        const char *user;
        const char *project;
        const char *queue;
        JobState state;
        const char *reason; /* why it waits, or how it ended; interned too */
        /* The request, without argv, script and environment once stored: with 100,000
         * queued jobs those would dominate memory, and they are only needed to launch or
         * to show details, when they are read back from the store. */
        SubmitRequest req;
        bool has_script;
        char *packed; /* one block holding the request's remaining strings, see job_trim_request() */
        struct StrChunk *packed_chunk;
        /* Array tasks share one stored request, their first task's: request_id names it
         * (0: the job's own). request_bytes is its stored size, counted once per array
         * against MaxStoredBytesPerUser=. */
        uint64_t request_id;
        size_t request_bytes;
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
        /* Why the launch failed, in words that may name the user's paths: shown to the
         * owner and admins only, the public reason says just "LaunchFailed". */
        char *launch_error;
        uint32_t requeue_count;
        uint64_t array_job_id;
        uint32_t array_task_id;

        uint64_t submit_time, eligible_time, start_time, end_time; /* seconds since the epoch */
        uint64_t suspended_usec;
        uint64_t suspend_start; /* seconds; while suspended */
        int exit_code;          /* -1: none */
        int exit_signal;
        SchedAllocation *alloc; /* once started; NULL before (most jobs of a long queue) */
        JobUsage usage;

        /* Not stored: */
        bool cancel_requested;  /* a cancel is under way: the outcome says Cancelled */
        /* A limit reason's numbers (SchedWait); for Grant, service units × JOB_GRANT_SCALE. */
        uint64_t limit_value, limit_wanted;
        bool launching;
        bool scope_empty_seen;  /* the last sweep found its scope empty */
        uint64_t est_start;
        double priority;
        uint32_t bypass_count;
        SchedDep *deps; /* refreshed before every pass */
        /* Preemption: the job it was suspended for (stored: it survives a restart), what
         * stays resident of it after reclaim, whether it was reclaimed (its swap is then
         * switched off again as it resumes), and when a pass last resumed it. */
        uint64_t preempted_by;
        uint64_t resident_memory;
        bool reclaimed;
        uint64_t last_resume;
        /* What is to be done to its scope once the pass that decided it is committed:
         * freeze, or thaw (first moving it, switching its swap off). */
        enum { PREEMPT_ACT_NONE, PREEMPT_ACT_FREEZE, PREEMPT_ACT_THAW } preempt_act;
        bool preempt_moved, preempt_swap_off;
        /* An interactive job's client and descriptors (interactive.h); NULL for the rest,
         * and for an interactive job once it has ended or after a restart. */
        struct Interactive *interactive;
} Job;

/* A zeroed job (exit_code -1, an empty request) from the job slabs. */
Job *job_new(void);
Job *job_free(Job *j);
DEFINE_TRIVIAL_CLEANUP_FUNC(Job *, job_free);

int job_set_reason(Job *j, const char *reason);
/* Drops argv, script and environment from the in-memory request (the store has them). */
void job_trim_request(Job *j);
/* An output path with Slurm's patterns expanded (%j %x %u %A %a %%). *ret is malloc'ed, or
 * NULL for a NULL pattern. -ENAMETOOLONG when the expansion would not fit in PATH_MAX. */
int job_expand_path(const Job *j, const char *pattern, char **ret);
/* The public queue view, and with details the owner/admin view. */
/* full: the complete request read back from the store, for details (may be NULL). */
int job_to_info(const Job *j, bool details, const SubmitRequest *full, const char *hostname, JobInfo *ret);
