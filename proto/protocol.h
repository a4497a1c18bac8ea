/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The wire contract between corral(1) and corrald: varlink-style JSON over the unix stream
 * socket CORRAL_SOCKET_PATH. Each message is one JSON object followed by a NUL byte.
 *
 *   request:  {"method": "io.corral.Manager.Submit", "parameters": {...},
 *              "more": true (optional, streamed replies), "oneway": true (optional, no reply;
 *              refused with OnewayRefused where the reply is all the method does),
 *              "protocol": 1 (optional; a mismatch fails with ProtocolVersionMismatch)}
 *   reply:    {"parameters": {...}, "continues": true (only while more replies follow),
 *              "warning": "..." (optional, on any reply: what every user should see)}
 *   error:    {"error": "io.corral.Manager.NoSuchJob", "parameters": {...}}
 *
 * Every name that crosses the socket is defined here and nowhere else. */

#include "macro.h"
#include "string-table.h"

#define CORRAL_INTERFACE "io.corral.Manager"

/* Bumped on incompatible changes only; additions of optional parameters keep it. Clients
 * learn the server's value from GetInfo ("protocol_version") or send "protocol" with any
 * request to have the server check it. */
#define CORRAL_PROTOCOL_VERSION 1

/* What clients may count on of corrald's timing (scontrol show config says them in
 * Slurm's words): a scheduling pass at least this often, and a final job kept in its
 * memory (corral queue, Wait, dependencies) this long after it ended. */
#define CORRAL_SCHED_INTERVAL_SEC 30U
#define CORRAL_FINISHED_KEEP_SEC (24U * 3600U)

/* Methods. Parameters are documented next to each; "job_id" is always an integer >= 1. */
typedef enum CorralMethod {
        CORRAL_METHOD_SUBMIT,   /* SubmitRequest (job-request.h) -> {"job_id", "job_ids"?: every task's id, for arrays,
                                 * "notice"?: what changed on the way, e.g. a spent grant's bonus queue} */
        CORRAL_METHOD_LIST,     /* {"user"?, "states"?: [..], "queue"?, "project"?, "after_id"?, "limit"?,
                                 * "charges"?: bool, each job's "charge" where the caller may see
                                 * details, "history"?: bool, also the finished jobs read back from
                                 * the store (all it keeps, not only the last day's), "ended_since"?:
                                 * seconds, leave out jobs that ended before}
                                 * -> {"jobs": [JobInfo public view], "next_after_id"?}: jobs in id
                                 * order after after_id; a page ends at limit jobs or ~768 KiB, and
                                 * next_after_id, present when more match, is the next after_id */
        CORRAL_METHOD_SHOW,     /* {"job_id"} -> {"job": JobInfo, details for owner/admin} */
        CORRAL_METHOD_CANCEL,   /* {"job_id", "signal"?} -> {} */
        CORRAL_METHOD_HOLD,     /* {"job_id"} -> {} */
        CORRAL_METHOD_RELEASE,  /* {"job_id"} -> {} */
        CORRAL_METHOD_SUSPEND,  /* {"job_id"} -> {} */
        CORRAL_METHOD_RESUME,   /* {"job_id"} -> {} */
        CORRAL_METHOD_REQUEUE,  /* {"job_id", "hold"?} -> {} */
        CORRAL_METHOD_WAIT,     /* {"job_id"}, usually with "more": state changes stream as
                                 * {"job": JobInfo} with "continues" until a final state */
        CORRAL_METHOD_LOGS,     /* {"job_id", "lines"?} -> {"unit", "workdir", "uid", "gid", "stdout_path"?,
                                 * "stderr_path"?, "lines"?: [..], "truncated"?}: files are read by the
                                 * client with its own permissions (root's as the job's uid and gid);
                                 * output that went to the journal (which users cannot read) comes
                                 * back as "lines", the newest last */
        CORRAL_METHOD_GET_INFO, /* {} -> {"version", "protocol_version", "hostname", "cpus", "memory",
                                 * "gpus"?, "devices"?: [DeviceInfo] (device-info.h: each GPU with the
                                 * job holding it)} */
        CORRAL_METHOD_RELOAD,   /* {} -> {}: re-read configuration (admin only) */
        CORRAL_METHOD_USAGE,    /* {"since"?, "until"?: "YYYY-MM-DD" (UTC days, inclusive), "by"?: "user" |
                                 * "project" (default) | "queue" | "day", "user"?, "project"?, "queue"?}
                                 * -> {"by", "since"?, "until"?, "all": whether the caller sees every
                                 * user's, "rows": [{"key", "jobs", "core_hours", "service_units",
                                 * "cpu_hours", "efficiency", "memory_peak", "io_read_bytes",
                                 * "io_write_bytes", "io_ops", "stall_sec": {"cpu_some", ...}}],
                                 * "total": the same without "key", "truncated"?}: runs summed by the
                                 * day they ended; users see their own and their projects' */
        CORRAL_METHOD_SHARE,    /* {} -> {"half_life_sec", "total_usage", "projects": [{"name", "share",
                                 * "usage" (decayed core-hours), "fairshare", "grant"?, "grant_used"?,
                                 * "grant_left"?, "period_begin"?, "period_end"?}], "user"?: {"name",
                                 * "usage"}} */
        CORRAL_METHOD_WHY,      /* {"job_id"} -> {"job_id", "state", "reason"?, "priority", "terms": [{"name",
                                 * "input", "weight", "value"}], "position"?, "eligible"?, "est_start"?,
                                 * "why": [sentences]}: owner and admins */
        CORRAL_METHOD_TEST_SUBMIT, /* SubmitRequest -> {"accepted": true, "queue", "project", "tasks",
                                 * "notice"?, "reason"?: why it would wait, "est_start"?: when it would
                                 * start (now if it would start at once; absent: unknown),
                                 * "estimate_unavailable"?: why there is none}: Submit's checks and
                                 * errors, nothing queued or stored (sbatch --test-only) */
        CORRAL_METHOD_RUN,      /* SubmitRequest with "interactive": true, and the job's stdin, stdout and
                                 * stderr as CORRAL_RUN_FDS descriptors (SCM_RIGHTS) sent with the
                                 * request's first byte; the only method that takes descriptors.
                                 * Always with "more": {"job_id"} (continues), then every change of
                                 * the job as Wait streams it, until a final state. The job is
                                 * withdrawn or cancelled when the connection closes before it ends
                                 * (InteractiveHangupSec= once it runs) */
        CORRAL_METHOD_SIGNAL,   /* {"job_id", "signal": 1..64, "batch"?: true: its main process alone}
                                 * -> {}: sends a running job's processes the signal, which does
                                 * not end it by itself (scancel --signal) */
        _CORRAL_METHOD_MAX,
        _CORRAL_METHOD_INVALID = -EINVAL,
} CorralMethod;

#define CORRAL_METHOD_NAME(m) CORRAL_INTERFACE "." m

/* The two objects the methods share. Their codecs are the tables submit_request_fields and
 * job_info_fields in job-request.c (one row per key: type, bounds, when sent), which the
 * lists below summarize; the bounds are the CORRAL_*_MAX of job-request.h and this file.
 * "?" marks a key that is left out when it has its default; integers are JSON integers,
 * times are seconds since the epoch, sizes bytes.
 *
 * SubmitRequest (Submit's parameters; an unknown key is InvalidParameter{its name}):
 *   "name"?, "argv"?: [..] | "script"?: text (exactly one of the two), "env"?: ["NAME=value"],
 *   "workdir"?: absolute, "stdin_path"?, "stdout_path"?, "stderr_path"?, "cpus"?, "memory"?,
 *   "walltime_sec"?: n | "infinity", "io_read_bw"?, "io_write_bw"?, "io_read_iops"?,
 *   "io_write_iops"?: [{"device": absolute path, "limit"}], "io_weight"?, "tasks_max"?,
 *   "umask"?: sent unless 0022, "queue"?, "project"?, "exclusive"?: true, "rerunnable"?: bool,
 *   "hold"?: true, "nice"?, "dependencies"?: [{"type": "after" | "afterany" | "afterok" |
 *   "afternotok", "job_id"}], "array"?: "START[-END[:STEP]][%MAX]", "begin_time"?
 *
 * JobInfo (List, Show, Wait; a client ignores keys it does not know):
 *   public:  "id", "name"?, "user"?, "uid", "project"?, "queue"?, "state": display name,
 *            "reason"?, "cpus", "memory", "walltime_sec": n | "infinity", "nice",
 *            "submit_time"?, "start_time"?, "end_time"?, "exit_code"?: once ended,
 *            "exit_signal"?: when killed by one, "node"?, "cpus_allocated"?: cpulist,
 *            "array_job_id"? and "array_task_id": for array tasks
 *   owner and admins (Show, and List for them): "argv"?, "has_script", "env"?, "workdir"?,
 *            "stdin_path"?, "stdout_path"?, "stderr_path"?, "usage": {"cpu_usec",
 *            "memory_peak", "io_read_bytes", "io_write_bytes", "tasks_peak"}, and, added by
 *            the daemon outside the codec, "charge": what the job was charged so far
 *   pending jobs in List and Show: "est_start"?: the scheduler's start estimate,
 *            "priority": a number, higher starts first; a bad value of either is dropped
 *            by clients rather than failing the listing */

/* Fully qualified names, e.g. "io.corral.Manager.Submit". */
DECLARE_STRING_TABLE_LOOKUP(corral_method, CorralMethod);

/* Errors, with the parameters each carries. */
typedef enum CorralError {
        CORRAL_ERROR_INVALID_PARAMETER,          /* {"parameter": name, "message"?} */
        CORRAL_ERROR_NO_SUCH_JOB,                /* {"job_id"} */
        CORRAL_ERROR_PERMISSION_DENIED,          /* {} */
        CORRAL_ERROR_INVALID_STATE,              /* {"state": current state name} */
        CORRAL_ERROR_MESSAGE_TOO_LARGE,          /* {"limit": bytes} */
        CORRAL_ERROR_TOO_MANY_CONNECTIONS,       /* {"limit"} */
        CORRAL_ERROR_METHOD_NOT_FOUND,           /* {"method"} */
        CORRAL_ERROR_INVALID_REQUEST,            /* {"message"?}: malformed JSON or envelope */
        CORRAL_ERROR_PROTOCOL_VERSION_MISMATCH,  /* {"server": n, "client": n} */
        CORRAL_ERROR_BUSY,                       /* {}: try again (e.g. during reload) */
        CORRAL_ERROR_QUOTA_EXCEEDED,             /* {"limit"?, "message"?}: a per-user or per-connection
                                                  * bound; the message names its setting */
        CORRAL_ERROR_INTERNAL_ERROR,             /* {"message"?} */
        CORRAL_ERROR_NO_PROJECT,                 /* {"message"}: the submitter belongs to no project;
                                                  * the message says what an admin runs to fix it */
        CORRAL_ERROR_ONEWAY_REFUSED,             /* {"method", "message"}: "oneway" on a method whose only
                                                  * product is its reply (List, Show, ...); sent although
                                                  * the request asked for no reply */
        _CORRAL_ERROR_MAX,
        _CORRAL_ERROR_INVALID = -EINVAL,
} CorralError;

#define CORRAL_ERROR_NAME(e) CORRAL_INTERFACE "." e

DECLARE_STRING_TABLE_LOOKUP(corral_error, CorralError);

/* Names of the fields that error replies carry. */
#define CORRAL_FIELD_PARAMETER "parameter"
#define CORRAL_FIELD_MESSAGE "message"
#define CORRAL_FIELD_STATE "state"
#define CORRAL_FIELD_LIMIT "limit"
#define CORRAL_FIELD_METHOD "method"
#define CORRAL_FIELD_JOB_ID "job_id"
/* In a reply's envelope, beside "parameters", on any reply: what the daemon wants every
 * user to see on stderr (the configuration on disk does not load). */
#define CORRAL_FIELD_WARNING "warning"

/* Bounds. Everything a peer sends is checked against these before it is stored, so one
 * client cannot make the daemon allocate without limit. */
#define CORRAL_MESSAGE_SIZE_MAX (UINT64_C(1) << 20)     /* one message, without its NUL */
#define CORRAL_SCRIPT_SIZE_MAX (UINT64_C(512) << 10)    /* a job script */
#define CORRAL_ARGV_MAX 4096U                           /* argv entries */
#define CORRAL_ENV_MAX 4096U                            /* environment entries */
#define CORRAL_ARG_LENGTH_MAX (128U << 10)              /* one argv or env entry (MAX_ARG_STRLEN) */
#define CORRAL_PATH_LENGTH_MAX 4095U                    /* PATH_MAX without the NUL */
#define CORRAL_NAME_LENGTH_MAX 255U                     /* job names */
#define CORRAL_COMMENT_LENGTH_MAX 1024U                 /* sbatch --comment */
#define CORRAL_IDENT_LENGTH_MAX 64U                     /* queue, project, user names */
#define CORRAL_DEPENDENCIES_MAX 1024U
#define CORRAL_IO_DEVICES_MAX 64U                       /* entries per io limit list */
#define CORRAL_CONNECTIONS_MAX 512U
#define CORRAL_LIST_JOBS_MAX 100000U
#define CORRAL_RUN_FDS 3U                               /* descriptors Run takes: stdin, stdout, stderr */                    /* List's "limit": jobs in one page */
