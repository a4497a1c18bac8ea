/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Forwarding a Corral job to a Slurm cluster (corrald(8), FORWARDING TO SLURM), the pure
 * half: a SubmitRequest as sbatch's arguments, environment and standard input, or the
 * reason it cannot go; and the readers of what the real Slurm client prints (sbatch
 * --parsable, squeue --format, sacct --parsable2, scontrol --oneliner show job), with the
 * map of Slurm's job states onto Corral's. No I/O, no clock, no logging: the daemon runs
 * the commands and hands their output here. Formats are Slurm 22.05's (Debian 12), which
 * later releases keep; tests/data/slurm/ holds samples. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "job-request.h"
#include "macro.h"

/* The idempotence key, sbatch --comment: "corral:HOST:ID". HOST tells two machines that
 * forward to one cluster apart. */
#define SLURM_KEY_PREFIX "corral:"
#define SLURM_KEY_LENGTH_MAX 128U

typedef struct SlurmSubmitParams {
        uint64_t job_id;        /* Corral's: the key, %j */
        uint64_t array_job_id;  /* Corral's array, %A (0: not an array) */
        const char *host;       /* this machine, [A-Za-z0-9.-] */
        const char *user;       /* %u */
        const char *partition;  /* NULL: the cluster's default */
        const char *account;    /* NULL: the user's default account */
        /* The Slurm id a dependency on Corral job corral_id becomes: 0 with *ret_slurm_id
         * set, -EAGAIN while that job waits here unforwarded, -ENOENT when it is no
         * forwarded job (a local queue's, or unknown). */
        int (*dependency)(uint64_t corral_id, void *userdata, uint64_t *ret_slurm_id);
        void *userdata;
} SlurmSubmitParams;

typedef struct SlurmSubmit {
        char **argv;            /* from "sbatch": the caller puts the client's path first */
        char **env;             /* the environment sbatch is run with (--export=ALL takes it) */
        char *stdin_data;       /* the script; NULL with --wrap */
        mode_t umask;           /* sbatch passes its own on to the job */
} SlurmSubmit;

void slurm_submit_done(SlurmSubmit *s);

/* 0 and *ret filled; -EOPNOTSUPP when the request cannot be mapped one to one, -EAGAIN
 * when a dependency is not forwarded yet (*ret_reason says why, either way); -ENOMEM. */
int slurm_submit_build(const SubmitRequest *req, const SlurmSubmitParams *p, SlurmSubmit *ret, char **ret_reason);

/* The key of Corral job id from host. -EINVAL for a host that could not be in one. */
int slurm_key_format(const char *host, uint64_t id, char *buf, size_t size);
/* Whether comment is host's key, and of which job. */
bool slurm_key_parse(const char *comment, const char *host, uint64_t *ret_id);

/* sbatch --parsable: "JOBID[;CLUSTER]\n". -EBADMSG for anything else. */
int slurm_parse_parsable(const char *out, uint64_t *ret_id, char **ret_cluster);

/* A Slurm state ("PENDING", "CANCELLED by 1000", "COMPLETING") as Corral's display name
 * ("PENDING", "HELD", "RUNNING", ..., daemon/job-state.h), with the reason squeue gives
 * (a pending job held by a user or admin is HELD). NULL: a state this table does not know,
 * the caller keeps what it had. */
const char *slurm_state_to_corral(const char *state, const char *reason) _pure_;

/* One line of squeue --noheader --array --states=all --users=USER
 * --format=SLURM_SQUEUE_FORMAT: ids, Slurm's state word and reason, the elapsed time and
 * the owner, none of them a user's text, so none can hold a newline and a made-up line
 * after it. A job's state and whose it is are read from this alone. */
#define SLURM_SQUEUE_FORMAT "%A|%F|%K|%T|%r|%M|%u"
/* The keys, --format=SLURM_SQUEUE_KEYS_FORMAT, asked for one user at a time and only after
 * a crash: the comment (%k) is its owner's text and may hold a newline and a made-up line
 * after it, so a line of it says only what its user claims, about that user's jobs. The
 * state fields are left unset. */
#define SLURM_SQUEUE_KEYS_FORMAT "%A|%F|%K|%u|%k"
#define SLURM_NO_TASK UINT32_MAX
typedef struct SlurmJobStatus {
        uint64_t job_id;        /* its own, unique per array task */
        uint64_t array_job_id;  /* the array's (== job_id outside arrays) */
        uint32_t array_task_id; /* SLURM_NO_TASK outside arrays */
        char *state;            /* Slurm's word */
        char *reason;           /* "None" for none */
        uint64_t elapsed_sec;
        char *user;             /* its owner's name */
        char *comment;          /* keys only; NULL for none */
} SlurmJobStatus;

void slurm_job_status_free_many(SlurmJobStatus *s, size_t n);
/* Every line that is one; a line that is not (not exactly the format's fields, an id
 * that is no number, a state not in the table of slurm_state_to_corral()) is skipped. The
 * number of lines skipped, or -ENOMEM. The same for sacct and scontrol below. */
int slurm_parse_squeue(const char *out, SlurmJobStatus **ret, size_t *ret_n);
/* The keys' lines: the comment is the rest of the line, '|' and all; a piece of a comment
 * after its newline is skipped unless it reads as a line, which it may. */
int slurm_parse_squeue_keys(const char *out, SlurmJobStatus **ret, size_t *ret_n);

/* The idempotence check after a crash between sbatch and the commit: the Slurm job (the
 * array's id for an array) of user carrying host's key of Corral job id among keys, the
 * first that trusted (NULL: any) accepts, or -ENOENT. Another user's job with that
 * comment is none: anyone can write it. What trusted is asked about is only the user's
 * claim: the caller checks it against what no user writes (SLURM_SQUEUE_FORMAT). */
int slurm_find_key(const SlurmJobStatus *keys, size_t n, const char *host, uint64_t id, const char *user,
                   bool (*trusted)(uint64_t slurm_id, void *userdata), void *userdata, uint64_t *ret_slurm_id);

/* A finished job's record: sacct or scontrol. */
typedef struct SlurmJobRecord {
        uint64_t job_id;
        char *state;
        int exit_code;          /* -1: none */
        int exit_signal;
        uint64_t elapsed_sec;
        uint64_t cpu_usec;      /* sacct only; 0 unknown */
        uint64_t max_rss;       /* bytes, sacct only (its steps'); 0 unknown */
        char *user;             /* its owner's name */
        char *comment;          /* scontrol only */
} SlurmJobRecord;

void slurm_job_record_free_many(SlurmJobRecord *r, size_t n);
#define SLURM_SACCT_FORMAT "JobIDRaw,JobID,State,ExitCode,ElapsedRaw,TotalCPU,MaxRSS,User"
/* sacct --noheader --parsable2 --format=SLURM_SACCT_FORMAT: one record per job (array
 * tasks each their own, with their owner), the steps' MaxRSS folded in. None of these
 * fields is the user's text: a line cannot be made up. */
int slurm_parse_sacct(const char *out, SlurmJobRecord **ret, size_t *ret_n);
/* scontrol --oneliner show job: one record per line, which starts with JobId=. A job's
 * name may hold a newline and what follows it: the first record of an id is its own. */
int slurm_parse_scontrol(const char *out, SlurmJobRecord **ret, size_t *ret_n);

/* Slurm's durations as its tools print them: "[D-]HH:MM:SS", "MM:SS", with ".mmm" for CPU
 * times. In microseconds. */
int slurm_parse_time(const char *s, uint64_t *ret_usec);
/* MaxRSS: "1234K", "12.5M", "0", "" (0). In bytes. */
int slurm_parse_rss(const char *s, uint64_t *ret);
