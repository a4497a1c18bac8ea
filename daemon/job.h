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

/* The strings a job keeps of its request, indexes of JobShared.str. */
typedef enum JobString {
        JOB_NAME,
        JOB_WORKDIR,
        JOB_STDIN_PATH,
        JOB_STDOUT_PATH,
        JOB_STDERR_PATH,
        JOB_GPU_TYPE,
        JOB_CONSTRAINT,
        JOB_MAIL_USER,
        _JOB_STRING_MAX,
} JobString;

/* What a job keeps in memory of its request: what a scheduling pass, List, Logs, why and
 * mail read. Members are named as in SubmitRequest. The rest (argv, script, environment,
 * io limits, tasks max, umask, the warning signal, the array's list) is read back from
 * the store (store_load_request()) when the job is launched or shown in detail.
 * It is in two parts. JobRequest, in the job: what differs from job to job of one array
 * (its dependencies, refreshed before every pass) and what fits in its padding. JobShared:
 * the numbers and strings, made by job_set_request() and shared by the jobs that
 * submitted the same (an array's tasks, a burst of one script's submits), never written
 * once made: with 100,000 queued jobs of a few requests each of its 56 bytes and strings
 * is 5.6 MB once instead of once a job. Read through job_shared(). */
/* Who acts on a job: what a transition or a mark leaves on it depends on it (an
 * administrator's hold or suspension binds the job's owner, a pass's suspension only a
 * pass lifts). */
typedef enum JobActor {
        JOB_BY_CORRALD, /* corrald on its own: the executor's and Slurm's reports, a restart */
        JOB_BY_PERSON,  /* the job's owner, or an administrator acting on their own job */
        JOB_BY_ADMIN,   /* an administrator acting on another's job (authz_is_admin_action()) */
        JOB_BY_SCHED,   /* a scheduling pass (preemption) */
} JobActor;

typedef struct JobRequest {
        /* malloc'ed; as a pass takes them, their status refreshed before every pass */
        SchedDep *dependencies;
        uint32_t n_dependencies;
        /* As narrow as the decoder's bounds allow (job_set_request() asserts them). */
        uint16_t cpus; /* CORRAL_CPUS_MAX */
        uint8_t gpus;  /* CORRAL_GPUS_MAX */
        bool gpu_binding : 1, exclusive : 1, interactive : 1;
} JobRequest;

typedef struct JobShared {
        uint64_t memory, walltime_sec, begin_time;
        struct {
                uint32_t max_concurrent;
        } array;
        uint32_t refs; /* the jobs holding it */
        int16_t nice;         /* CORRAL_NICE_MIN..CORRAL_NICE_MAX */
        uint16_t mail_events; /* MailEvent */
        /* Each string's offset in data plus one (0: NULL), 2 bytes instead of a pointer's
         * 8, data being bounded by the decoder's limits (JOB_PACKED_MAX). */
        uint16_t str[_JOB_STRING_MAX];
        uint16_t size; /* of data */
        bool alone;    /* big and allocated on its own (job.c), not from a chunk */
        char data[];
} JobShared;

/* What a job without a request reads: zeros, no strings. */
extern const JobShared job_shared_none;

/* The largest packed block job_set_request() takes: what the decoder lets through
 * (names, paths, the GPU type, the constraint, the mail address, each with its NUL)
 * fits, with room to spare. */
#define JOB_PACKED_MAX UINT16_MAX

/* What only a job that has started uses (its allocation, its usage, suspensions, preemption, a launch
 * failure's words, its exit status): kept apart, allocated when it starts
 * (job_run_ensure()), so that a queued job carries one pointer instead of 112 bytes of
 * zeros. A job without one reads zeros and exit code -1 (job_run()). */
typedef struct JobRun {
        /* Where it runs (job_alloc()); NULL before a pass starts it. Kept once it ends, for
         * the record (show lists its CPUs), then shared (job_alloc_share()). */
        SchedAllocation *alloc;
        JobUsage usage;
        uint64_t suspended_usec;
        uint64_t suspend_start; /* seconds; while suspended */
        /* Why the launch failed, in words that may name the user's paths: shown to the
         * owner and admins only, the public reason says just "LaunchFailed". */
        char *launch_error;
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
        int exit_code; /* -1: none */
        int exit_signal;
} JobRun;

/* Members are ordered to leave little padding, the flags are bits, and the enum a byte:
 * with 100,000 queued jobs every 8 bytes are 800 KB. */
typedef struct Job {
        uint64_t id;
        /* Interned (intern.h) by id, 4 bytes instead of a pointer's 8: 0 is NULL, equal
         * names have equal ids. Read as strings through job_user() and the like. */
        uint32_t user;
        uint32_t project;
        uint32_t queue;
        uint32_t reason; /* why it waits, or how it ended */
        /* What memory keeps of the request (JobRequest): with 100,000 queued jobs the whole
         * of it would dominate corrald's memory, and the rest is only needed to launch the
         * job or show its details, when it is read back from the store. */
        JobRequest req;
        const JobShared *shared; /* the rest of it, see JobShared; NULL: job_shared_none */
        /* Array tasks share one stored request, their first task's (request_of_array,
         * job_request_id()). request_bytes is its stored size, counted once per array
         * against MaxStoredBytesPerUser=. */
        uint64_t array_job_id;

        /* Seconds since the epoch, in 32 bits (until 2106): they are set from the clock,
         * never from a user's numbers (a begin time is JobShared's). */
        uint32_t submit_time, eligible_time, start_time, end_time;
        JobRun *run; /* once started, see JobRun; NULL before (most jobs of a long queue) */

        /* Not stored: */
        /* A limit reason's numbers (SchedWait); for Grant, service units × JOB_GRANT_SCALE. */
        uint64_t limit_value, limit_wanted;
        uint64_t est_start;
        double priority;

        uid_t uid;
        gid_t gid;
        uint32_t requeue_count;
        uint32_t request_bytes;
        uint32_t array_task_id;
        uint32_t bypass_count; /* not stored */
        JobState state : 8;
        bool has_script : 1;
        bool rerunnable : 1;
        bool held_by_admin : 1;
        bool suspended_by_admin : 1;
        /* Suspended by a scheduling pass to let another job run (preemption): it holds
         * its memory, not its CPUs, nobody but a pass resumes it. Stored with
         * suspended_by_admin, as bit 2 (admin 1, person 4). */
        bool suspended_by_sched : 1;
        /* A person suspended it too (the pass's suspension and theirs raced, or they
         * suspended it while the pass held it): a pass's resume then leaves it suspended,
         * on the CPUs the pass gave it, and their resume only lifts their hold. */
        bool suspended_by_person : 1;
        bool launching : 1;         /* not stored */
        bool scope_empty_seen : 1;  /* not stored: the last sweep found its scope empty */
        bool cancel_requested : 1;  /* not stored: a cancel is under way, the outcome says Cancelled */
        bool has_interactive : 1;   /* see job_interactive() */
        bool has_submitted : 1;     /* see job_submitted() */
        bool request_of_array : 1;  /* its stored request is its array's first task's */
        /* The request's shards of one GPU (SubmitRequest.shards): of JobRequest, kept here
         * in what was the Job's padding. */
        uint16_t req_shards;
} Job;

/* A zeroed job (queued, an empty request, no run) from the job slabs. */
Job *job_new(void);
Job *job_free(Job *j);
DEFINE_TRIVIAL_CLEANUP_FUNC(Job *, job_free);

/* What a job has of its run, to read: zeros (and exit code -1) for a job without (one that
 * never started). */
extern const JobRun job_run_none;
static inline const JobRun *job_run(const Job *j) {
        return j->run ?: &job_run_none;
}
/* The job's allocation: its run's, NULL while it has none. */
static inline SchedAllocation *job_alloc(const Job *j) {
        return j->run ? j->run->alloc : NULL;
}
/* The same, to write: allocated (as job_run_none) on first use. NULL only when memory is
 * short. */
JobRun *job_run_ensure(Job *j);
/* Takes words (malloc'ed, may be NULL) as the job's launch error. -ENOMEM (words freed)
 * when memory is short for its run: the job ends all the same, its public reason says
 * why. */
int job_take_launch_error(Job *j, char *words);
/* Forgets the run (a requeued job starts again from scratch). */
void job_run_forget(Job *j);
/* Whether a run (NULL: none) holds nothing job_run_none does not: not worth keeping, as
 * the run a job that never started reads back from the store. */
bool job_run_is_empty(const JobRun *r) _pure_;

/* An interactive job's client and descriptors (interactive-job.h); NULL for the rest, and
 * for an interactive job once it has ended or after a restart. Kept beside the jobs, not
 * in each: few have one (corrald bounds the waiting ones, and the running ones by its
 * connections), and in each of 100,000 queued jobs a pointer is 800 KB of NULLs. */
struct Interactive *job_interactive_find(const Job *j) _pure_;
static inline struct Interactive *job_interactive(const Job *j) {
        return j->has_interactive ? job_interactive_find(j) : NULL;
}
/* Takes it as the job's (NULL: none), freeing what the job had. -ENOMEM when memory is
 * short: it is freed, and the job has none. */
int job_set_interactive(Job *j, struct Interactive *it);

/* The complete request, borrowed from Submit from job_set_request() until the store has
 * recorded it (store_insert_job()); NULL otherwise. Kept beside the jobs, not in each:
 * only the jobs of the Submit under way have one. */
const SubmitRequest *job_submitted_find(const Job *j) _pure_;
static inline const SubmitRequest *job_submitted(const Job *j) {
        return j->has_submitted ? job_submitted_find(j) : NULL;
}
/* Lends req (NULL: none) as the job's complete request. -ENOMEM when memory is short: the
 * job has none. */
int job_set_submitted(Job *j, const SubmitRequest *req);

/* A finished job's allocation, kept for the record (show lists its CPUs), is never written
 * again: finished jobs with equal ones share one (a day of short jobs on a small machine
 * holds a handful of distinct ones, each 1.5 KB). Takes a (malloc'ed) and returns the
 * shared one equal to it, a itself when memory is short for sharing it. */
SchedAllocation *job_alloc_share(SchedAllocation *a);
/* Frees an allocation of the job's own, or lets go of a shared one. Returns NULL. */
SchedAllocation *job_alloc_free(SchedAllocation *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(SchedAllocation *, job_alloc_free);

/* The job whose stored request is this one's: its array's first task, for the other
 * tasks; 0 for the job's own. */
static inline uint64_t job_request_id(const Job *j) {
        return j->request_of_array ? j->array_job_id : 0;
}

/* What a job keeps of its request besides JobRequest, never NULL. */
static inline const JobShared *job_shared(const Job *j) {
        return j->shared ?: &job_shared_none;
}

/* One of the request's strings kept in memory (JobString), or NULL. */
static inline const char *job_str(const Job *j, JobString s) {
        const JobShared *sh = job_shared(j);
        return sh->str[s] ? sh->data + sh->str[s] - 1 : NULL;
}

/* The interned names, NULL when none. */
static inline const char *job_user(const Job *j) {
        return intern_name(j->user);
}
static inline const char *job_project(const Job *j) {
        return intern_name(j->project);
}
static inline const char *job_queue(const Job *j) {
        return intern_name(j->queue);
}
static inline const char *job_reason(const Job *j) {
        return intern_name(j->reason);
}

int job_set_reason(Job *j, const char *reason);
/* Keeps in j->req and j->shared what memory holds of req (copied: req stays the
 * caller's), sharing the JobShared of a job made a little earlier from an equal request;
 * replaces what the job held. -ENOMEM, or -E2BIG for strings beyond
 * JOB_PACKED_MAX (more than the decoder lets through), or -ERANGE for numbers beyond
 * the decoder's bounds (CORRAL_CPUS_MAX, ...), leaves j->req empty. */
int job_set_request(Job *j, const SubmitRequest *req);
/* An output path with Slurm's patterns expanded (%j %x %u %A %a %%). *ret is malloc'ed, or
 * NULL for a NULL pattern. -ENAMETOOLONG when the expansion would not fit in PATH_MAX. */
int job_expand_path(const Job *j, const char *pattern, char **ret);
/* The public queue view, and with details the owner/admin view. */
/* full: the complete request read back from the store, for details (may be NULL). */
int job_to_info(const Job *j, bool details, const SubmitRequest *full, const char *hostname, JobInfo *ret);
