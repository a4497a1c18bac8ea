/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The pure parts of corral(1): job id arguments, the state vocabulary and the queue's
 * sections, script detection, exit statuses and human formatting. No I/O here, so every
 * rule is unit-tested (tests/unit/test-cli-util.c). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "macro.h"
#include "proto/job-request.h"

#define strcaseeq(a, b) (strcasecmp((a), (b)) == 0)

static inline bool streq_ptr(const char *a, const char *b) {
        return a && b ? streq(a, b) : a == b;
}

/* Exit statuses of corral(1), documented in corral.1. Waiting commands exit with the
 * job's own status instead. */
#define CLI_EXIT_SUCCESS 0
#define CLI_EXIT_FAILURE 1      /* a request failed: no such job, permission denied, ... */
#define CLI_EXIT_USAGE 2        /* bad command line, option or directive */
#define CLI_EXIT_UNREACHABLE 3  /* cannot reach corrald (or it is busy) */

/* A job named on the command line: "42", or "42_3" for task 3 of array job 42 (Slurm's
 * form, resolved against List). */
typedef struct JobRef {
        uint64_t id;
        bool has_task;
        uint32_t task;
} JobRef;

/* -EINVAL for anything but those two forms with ids in range. */
int job_ref_parse(const char *s, JobRef *ret);

/* A signal as Slurm's commands take it: a number (1 to 64) or a name, with or without
 * "SIG", in any case (USR1, SIGUSR1, term). -EINVAL otherwise. */
int signal_parse(const char *s, int *ret);

/* The sections of `corral queue`, after Maui's showq. */
typedef enum QueueSection {
        QUEUE_SECTION_ACTIVE,   /* RUNNING, SUSPENDED: hold resources */
        QUEUE_SECTION_ELIGIBLE, /* PENDING: the scheduler may start it */
        QUEUE_SECTION_BLOCKED,  /* HELD, BLOCKED: needs a release or a policy change */
        QUEUE_SECTION_FINISHED, /* final states, shown with --all */
        _QUEUE_SECTION_MAX,
} QueueSection;

/* States the daemon names (daemon/job-state.h's display names). Unknown names, from a
 * newer daemon, are put among the blocked jobs: they are not running, and showing them
 * as eligible would promise a start that may never come. */
QueueSection queue_section_of_state(const char *state) _pure_;
const char *queue_section_name(QueueSection s) _const_;

bool job_state_name_is_final(const char *state) _pure_;

/* Every state name the daemon knows, NULL-terminated. */
extern const char *const cli_job_states[];

/* Expands a -t/--state list: comma-separated long names (any case) or Slurm's short codes
 * ("PD" gives PENDING, HELD and BLOCKED; "CD", "R", ...), or "all". Duplicates are
 * dropped. -EINVAL with *ret_bad (malloc'ed) naming the offending entry. */
int job_states_parse(const char *s, char ***ret, char **ret_bad);

/* Whether text is a batch script rather than the contents of some other file: a first
 * line starting with "#!", or a #SBATCH/#PBS/#CORRAL directive among the leading comment
 * lines. Text with a NUL byte in the first n bytes is never a script. */
bool text_is_script(const char *text, size_t n) _pure_;
bool text_has_shebang(const char *text, size_t n) _pure_;

/* The exit status that stands for a finished job, as a shell reports it: its exit code,
 * 128+signal if a signal killed it, 1 for an unsuccessful end without either (cancelled
 * while pending, node failure), 0 for COMPLETED without a code. */
int job_exit_status(const JobInfo *info) _pure_;

/* "COMPLETED, exit code 0", "FAILED, killed by signal 9 (KILL)", "CANCELLED". */
char *format_job_outcome(char *buf, size_t size, const JobInfo *info);

/* Elapsed time as squeue's TIME column: "M:SS", "H:MM:SS", "D-HH:MM:SS". */
char *format_elapsed(char *buf, size_t size, uint64_t sec);

/* A moment as "YYYY-MM-DDTHH:MM:SS" in local time (scontrol's form), "n/a" for 0. */
char *format_timestamp(char *buf, size_t size, uint64_t t);

/* A moment near now, compactly: "14:05" on the same day, "Tue 14:05" within six days
 * either way, "2024-03-01" otherwise. */
char *format_short_time(char *buf, size_t size, uint64_t t, time_t now);

/* A moment relative to now for the queue: "14:05" today, "Tue 14:05" within a week,
 * "2024-03-01" further out; "now" if already past. */
char *format_start_estimate(char *buf, size_t size, uint64_t t, time_t now);

/* How long a job has run (or ran) by `now`: 0 before it started. */
uint64_t job_elapsed(const JobInfo *info, time_t now) _pure_;

/* Signal names for --signal: "TERM", "SIGTERM", "15". -EINVAL otherwise. */
int signal_from_string(const char *s);
const char *signal_to_string(int sig) _const_;

/* Expands Slurm's output file patterns as corrald does when the job starts: %j job id,
 * %x name, %u user, %A array job id (the job's own id outside arrays), %a task index,
 * %% a percent sign; any other %c stays as written. NULL on OOM. */
char *output_path_expand(const char *pattern, const JobInfo *info);
/* The same for a step's task (srun -o inside a job, task >= 0): also %J (id.0), %s and %n
 * (0), %t the task, %N host. */
char *output_path_expand_step(const char *pattern, const JobInfo *info, int task, const char *host);

/* Shell-quotes argv into one line for display ("echo 'a b'"). NULL on OOM. */
char *argv_to_display(char *const *argv);
