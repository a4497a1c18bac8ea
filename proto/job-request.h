/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The parameters of Submit (SubmitRequest) and the job view that List/Show/Wait return
 * (JobInfo), as C structs with JSON codecs. Each struct's wire form is one table of rows in
 * job-request.c (see json-codec.h): key, type, member, bounds, whether and when it is sent;
 * the rows are the reference for every key. from_json validates every field against the
 * bounds in protocol.h and rejects unknown keys; on -EINVAL *ret_bad_field names the
 * offending parameter (the top-level JSON key, e.g. "cpus" or "env", also for a bad entry
 * inside a list; valid as long as the JSON object is), so the daemon can answer
 * InvalidParameter{"parameter": ...} without guessing.
 *
 * Conventions: 0 (or NULL, or an empty list) means "not given, use the default"; times
 * are seconds since the epoch (CLOCK_REALTIME); sizes are bytes; rates are per second.
 * Output paths may contain Slurm's %j (job id), %x (job name), %u (user), %A/%a (array
 * job id/task index) and %% patterns: they travel verbatim and the daemon substitutes
 * them when the job starts, because only it knows the id. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"
#include "string-table.h"
#include "text-util.h"

#define CORRAL_GPUS_MAX 64U                             /* SCHED_GPUS_MAX */
#define CORRAL_SHARDS_MAX 1024U                         /* of one GPU (Shards=, --gres=shard:K) */
#define CORRAL_GPU_TYPE_LENGTH_MAX 64U
#define CORRAL_CONSTRAINT_LENGTH_MAX 1023U
#define CORRAL_CPUS_MAX 8192U                           /* CPU_SET_MAX: a whole machine */
#define CORRAL_NICE_MIN (-10000)
#define CORRAL_NICE_MAX 10000
#define CORRAL_IO_WEIGHT_MIN 1U
#define CORRAL_IO_WEIGHT_MAX 10000U
#define CORRAL_TASKS_MAX_MAX UINT64_C(4194304)          /* the kernel's PID_MAX_LIMIT */
#define CORRAL_SIZE_MAX (UINT64_C(1) << 60)             /* 1 EiB: any sane byte count or rate */
#define CORRAL_WALLTIME_MAX (UINT64_C(100) * 365 * 86400)
#define CORRAL_WALLTIME_INFINITY UINT64_MAX             /* "infinity" on the wire */
#define CORRAL_JOB_ID_MAX (UINT64_C(1) << 53)           /* exact in every JSON reader */
#define CORRAL_ARRAY_INDEX_MAX 4000000U
#define CORRAL_ARRAY_TASKS_MAX 100000U
#define CORRAL_TIME_MAX (UINT64_C(1) << 40)             /* seconds since the epoch, year ~36800 */
#define CORRAL_UMASK_MAX 0777U
#define CORRAL_UMASK_DEFAULT 0022U                      /* what a request without "umask" gets */
#define CORRAL_WARN_SIGNAL_MAX 64U                      /* SIGRTMAX on Linux */
#define CORRAL_WARN_SEC_MAX 65535U                      /* as sbatch --signal */
#define CORRAL_MAIL_USER_LENGTH_MAX 254U                /* an address, RFC 5321's path limit */

/* sbatch --mail-type, qsub -m: the events a job's mail is sent for. */
typedef enum MailEvent {
        MAIL_BEGIN = 1 << 0,
        MAIL_END = 1 << 1,   /* any end, successful or not */
        MAIL_FAIL = 1 << 2,  /* an unsuccessful end */
        MAIL_REQUEUE = 1 << 3,
        MAIL_ALL = MAIL_BEGIN | MAIL_END | MAIL_FAIL | MAIL_REQUEUE,
        MAIL_ARRAY_TASKS = 1 << 4, /* each task of an array (within a cap); else one summary per array */
        /* Slurm's TIME_LIMIT_50/80/90 and TIME_LIMIT: at those fractions of the walltime
         * the job has run (suspension pauses it), and when it reaches it. Not in ALL. */
        MAIL_TIME_LIMIT_50 = 1 << 5,
        MAIL_TIME_LIMIT_80 = 1 << 6,
        MAIL_TIME_LIMIT_90 = 1 << 7,
        MAIL_TIME_LIMIT = 1 << 8,
        MAIL_TIME_LIMITS = MAIL_TIME_LIMIT_50 | MAIL_TIME_LIMIT_80 | MAIL_TIME_LIMIT_90 | MAIL_TIME_LIMIT,
} MailEvent;

typedef enum DependencyType {
        DEPENDENCY_AFTER,       /* the other job started (or ended) */
        DEPENDENCY_AFTERANY,    /* ended, whatever the result */
        DEPENDENCY_AFTEROK,     /* ended with exit code 0 */
        DEPENDENCY_AFTERNOTOK,  /* ended otherwise */
        _DEPENDENCY_TYPE_MAX,
        _DEPENDENCY_TYPE_INVALID = -EINVAL,
} DependencyType;

DECLARE_STRING_TABLE_LOOKUP(dependency_type, DependencyType);

typedef struct JobDependency {
        DependencyType type;
        uint64_t job_id;
} JobDependency;

/* One device's limit: a bandwidth in bytes/s or a rate in IO/s. */
typedef struct IoDeviceLimit {
        char *device;           /* absolute path of the block device, e.g. /dev/vdb */
        uint64_t limit;
} IoDeviceLimit;

typedef struct IoDeviceLimits {
        IoDeviceLimit *items;
        size_t n;
} IoDeviceLimits;

/* One START-END:STEP of an array list. */
typedef struct ArrayRange {
        uint32_t start, end, step;
} ArrayRange;

/* Slurm's --array: "START[-END[:STEP]][,...][%MAX]". One range (also a list whose indexes
 * are evenly spaced) is start/end/step; any other list keeps its ranges, ascending and
 * without an index twice, in ranges (owned: array_spec_done(); start and end are then
 * the lowest and highest index, step 1). */
#define CORRAL_ARRAY_RANGES_MAX 40U     /* so the canonical form fits CORRAL_ARRAY_SPEC_LENGTH_MAX */
#define CORRAL_ARRAY_SPEC_LENGTH_MAX 1023U

typedef struct ArraySpec {
        bool set;
        uint32_t start, end, step;
        uint32_t max_concurrent;        /* 0: no limit */
        ArrayRange *ranges;             /* NULL: the one range above */
        uint32_t n_ranges;
} ArraySpec;

/* -EINVAL on syntax, start > end or a list naming an index twice, -ERANGE beyond the
 * array bounds above (tasks, indexes, ranges), -ENOMEM. */
int array_spec_parse(const char *s, ArraySpec *ret);
/* Canonical form ("1-100:2%10", "1,6-7,12"); buf >= CORRAL_ARRAY_SPEC_LENGTH_MAX + 1
 * bytes holds any. */
char *array_spec_format(const ArraySpec *a, char *buf, size_t size);
/* The index of task t (0 <= t < array_spec_count()). */
uint32_t array_spec_index(const ArraySpec *a, uint32_t t) _pure_;
int array_spec_copy(const ArraySpec *src, ArraySpec *ret);
void array_spec_done(ArraySpec *a);
uint32_t array_spec_count(const ArraySpec *a) _pure_;

typedef struct SubmitRequest {
        char *name;
        char **argv;            /* exactly one of argv and script */
        char *script;           /* script text, run with its #! interpreter */
        char **env;             /* "NAME=value", complete: the client resolves --export */
        char *workdir;          /* absolute */
        char *stdin_path, *stdout_path, *stderr_path;   /* absolute or relative to workdir */

        unsigned cpus;
        uint64_t memory;        /* bytes */
        /* GPUs in total (--gpus, --gres=gpu:N, --gpus-per-task x tasks, ngpus=), of a type
         * (--gres=gpu:TYPE:N, NULL: any) and matching a Slurm feature expression
         * (--constraint, e.g. "a100|h100", "gpu&nvlink"; NULL: any); gpu_binding is
         * --gres-flags=enforce-binding. Type and constraint are matched against each
         * device's name, model and features, case-insensitively (daemon side). */
        unsigned gpus;
        char *gpu_type;
        char *constraint;
        bool gpu_binding;
        /* Slurm's shards (--gres=shard:K): K shards of one GPU, shared with other shard
         * jobs, instead of whole GPUs (gpus is then 0); gpu_type and constraint still
         * pick the GPU. */
        unsigned shards;
        uint64_t walltime_sec;  /* or CORRAL_WALLTIME_INFINITY */
        IoDeviceLimits io_read_bw, io_write_bw, io_read_iops, io_write_iops;
        unsigned io_weight;
        uint64_t tasks_max;
        /* The submitter's umask, which the job runs with (as sbatch passes it on). On the
         * wire only when it is not CORRAL_UMASK_DEFAULT, so an older daemon still takes the
         * common case; a request without it gets the default. */
        mode_t umask;

        char *queue;
        char *project;
        bool exclusive;
        int rerunnable;         /* -1: the queue's default, else 0/1 */
        bool hold;
        int nice;

        JobDependency *dependencies;
        size_t n_dependencies;
        ArraySpec array;
        uint64_t begin_time;

        /* sbatch --signal=[B:]SIG@TIME: signal (0: none) sent warn_sec before the
         * walltime ends, to the job script's shell only (batch_only, "B:") or to every
         * process of the job; how checkpointing jobs survive their limit. */
        unsigned warn_signal;
        unsigned warn_sec;
        bool warn_batch_only;

        /* Mail for these MailEvents (0: none) to mail_user, or to the submitting user
         * when NULL, through the machine's sendmail. */
        unsigned mail_events;
        char *mail_user;

        /* sbatch --comment: kept and shown (squeue %k, sacct Comment), never interpreted. */
        char *comment;
        /* --open-mode=append: the output files are appended to, not truncated. */
        bool output_append;

        /* corral run, srun --pty, salloc, qsub -I: the job runs on descriptors its client
         * passed with the Run method (SCM_RIGHTS), not on files; not preemptable. */
        bool interactive;
} SubmitRequest;

#define SUBMIT_REQUEST_INIT { .rerunnable = -1, .umask = CORRAL_UMASK_DEFAULT }

void submit_request_done(SubmitRequest *req);
/* A deep copy into *ret (which is overwritten, not freed). -ENOMEM leaves *ret untouched. */
int submit_request_copy(const SubmitRequest *src, SubmitRequest *ret);

int io_device_limits_add(IoDeviceLimits *l, const char *device, uint64_t limit);
void io_device_limits_done(IoDeviceLimits *l);
int submit_request_add_dependency(SubmitRequest *req, DependencyType type, uint64_t job_id);

/* Why a request was refused: the wire key, and for text that a terminal could take for
 * a command (a control character, invalid UTF-8) what and at which byte of the value. */
typedef struct SubmitRequestError {
        const char *field;
        TextProblem problem;    /* TEXT_OK: another of the field's rules */
        size_t offset;
} SubmitRequestError;

typedef enum SubmitRequestDecodeFlags {
        /* A request corrald stored itself, perhaps before the text rules: it is loaded as
         * it was accepted, and escaped wherever it is shown. */
        SUBMIT_REQUEST_STORED = 1 << 0,
} SubmitRequestDecodeFlags;

/* Checks a request built in C (by the CLI) with the same rules from_json applies. */
int submit_request_validate(const SubmitRequest *req, const char **ret_bad_field);
/* The text rules alone: names and paths are single lines of UTF-8 without control
 * characters. 0, or -EINVAL filling *ret_error (may be NULL). */
int submit_request_check_text(const SubmitRequest *req, SubmitRequestError *ret_error);

int submit_request_to_json(const SubmitRequest *req, json_object **ret);
/* Fills *ret (initialized here) or, on failure, leaves it empty. -EINVAL with *ret_error
 * set, or -ENOMEM. A non-object gives bad field "parameters". */
int submit_request_decode(json_object *o, unsigned flags, SubmitRequest *ret, SubmitRequestError *ret_error);
/* submit_request_decode() of what a user sends, naming only the field. */
int submit_request_from_json(json_object *o, SubmitRequest *ret, const char **ret_bad_field);

/* Small validators the CLI reuses for early, precise errors. */
bool env_assignment_is_valid(const char *s) _pure_;
bool env_name_is_valid(const char *s, size_t n) _pure_;
bool ident_is_valid(const char *s) _pure_;          /* queue/project: [A-Za-z0-9_.-]{1,64} */
bool job_name_is_valid(const char *s) _pure_;     /* one line of UTF-8, no control characters */
bool job_comment_is_valid(const char *s) _pure_;  /* the same, up to CORRAL_COMMENT_LENGTH_MAX */
bool mail_user_is_valid(const char *s) _pure_;   /* user or user@host, no spaces or quotes */

typedef struct JobUsage {
        uint64_t cpu_usec;
        uint64_t memory_peak;
        uint64_t io_read_bytes, io_write_bytes;
        uint64_t tasks_peak;
} JobUsage;

/* What List shows to everyone (the public queue view), plus, when has_details, what only
 * the owner and admins may see. The state is its display name (see daemon/job-state.h),
 * carried as a string so clients need not share the daemon's enum. */
/* A job's GPU figures summed over its GPUs, from Show's gpu_usage (corrald's NVML
 * readings): filled by the client, not a field of the wire's job object. */
typedef struct JobGpuTotals {
        unsigned n;             /* GPUs read; 0: none */
        double util_mean;       /* percent, summed */
        unsigned util_max;      /* percent, summed */
        uint64_t memory_max;    /* bytes, summed */
        bool has_energy;
        double energy_j;
} JobGpuTotals;

typedef struct JobInfo {
        uint64_t id;
        char *name;
        char *user;
        uid_t uid;
        char *project, *queue;
        char *state;
        char *reason;           /* why it waits or why it ended, Slurm's REASON column */
        unsigned cpus;
        uint64_t memory;
        unsigned gpus;          /* requested */
        char *gpu_type;         /* requested type, NULL: any */
        char *gpus_allocated;   /* once started: the GPUs' indexes on the machine, e.g. "1,3" */
        unsigned shards;        /* requested shards of one GPU (gpus_allocated names it) */
        char *constraint;       /* requested feature expression, NULL: none (scontrol's Features=) */
        uint64_t walltime_sec;
        int nice;
        uint64_t submit_time, start_time, end_time;
        int exit_code;          /* -1: none yet */
        int exit_signal;        /* 0: none */
        char *node;             /* host name once started */
        char *cpus_allocated;   /* cpulist, e.g. "0-3" */
        uint64_t array_job_id;  /* 0 unless part of an array */
        uint32_t array_task_id;
        bool interactive;       /* run on its client's terminal or pipes (corral run) */
        /* Running with every GPU it holds below GPUIdlePercent= for GPUIdleSec= at least:
         * for how long (seconds); 0: not idle. */
        uint64_t gpu_idle_sec;
        /* Running: its GPUs' utilisation at the last telemetry reading, their mean in
         * percent; -1: none (no GPUs, telemetry off, not read yet). */
        int gpu_util;

        bool has_details;
        char **argv;
        bool has_script;        /* the text itself is not sent back: it can be 512K */
        char **env;
        char *workdir, *stdin_path, *stdout_path, *stderr_path;
        char *comment;          /* sbatch --comment */
        JobUsage usage;
        JobGpuTotals gpu_totals;

        /* The scheduler's view of a pending job (List and Show only, not Wait): */
        uint64_t est_start;     /* when it is expected to start; 0: no estimate, not sent */
        bool has_priority;      /* priority is sent only when set */
        double priority;        /* its current priority, higher starts first */
} JobInfo;

#define JOB_INFO_INIT { .exit_code = -1, .gpu_util = -1 }

void job_info_done(JobInfo *info);
/* details: include the owner-only fields (the caller has already checked authz). */
int job_info_to_json(const JobInfo *info, bool details, json_object **ret);
/* Client side: unknown keys are ignored so a newer daemon can add fields; known keys must
 * still have the right type. */
int job_info_from_json(json_object *o, JobInfo *ret, const char **ret_bad_field);
