/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The verbs of corral(1). Each takes its own argv (argv[0] is the verb) and returns the
 * process's exit status (cli-util.h), having reported any problem itself. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "cli-util.h"
#include "client.h"
#include "proto/job-request.h"

/* Runs corral(1) with argv as main() gets it. */
int corral_run(int argc, char **argv);

int verb_submit(Cli *cli, int argc, char **argv);
int verb_run(Cli *cli, int argc, char **argv); /* run.c */
int verb_queue(Cli *cli, int argc, char **argv);
int verb_show(Cli *cli, int argc, char **argv);
int verb_cancel(Cli *cli, int argc, char **argv);
int verb_job_action(Cli *cli, int argc, char **argv); /* hold, release, suspend, resume, requeue */
int verb_signal(Cli *cli, int argc, char **argv);
int verb_wait(Cli *cli, int argc, char **argv);
int verb_logs(Cli *cli, int argc, char **argv);
int verb_info(Cli *cli, int argc, char **argv);
int verb_reload(Cli *cli, int argc, char **argv);
int verb_config(Cli *cli, int argc, char **argv); /* config check */
int verb_why(Cli *cli, int argc, char **argv);
int verb_usage(Cli *cli, int argc, char **argv);
int verb_share(Cli *cli, int argc, char **argv);

/* What a job was charged, or so far while it runs: Show's "charge" object (the owner's
 * and admins' view), parsed by charge_view_from_json() and printed by `corral show`. */
typedef struct ChargeView {
        bool set, live, has_pressure;
        unsigned cpus, gpus;
        uint64_t run_usec, cpu_usec, memory_peak;
        uint64_t io_read_bytes, io_write_bytes, io_read_ops, io_write_ops;
        double core_hours, charge_factor, service_units, efficiency;
        double gpu_hours, charge_per_gpu_hour;
        uint64_t stall_usec[6];  /* cpu, memory, io: some, full */
} ChargeView;

#define _CHARGE_STALL_MAX 6
/* The keys of the charge's (and a usage row's) "stall_usec" object, in stall_usec's order. */
extern const char *const charge_stall_names[_CHARGE_STALL_MAX];
/* A number field of an object; 0 when missing or of another type (and for negatives, unum). */
double json_field_num(json_object *o, const char *key);
uint64_t json_field_unum(json_object *o, const char *key);

/* Tolerates missing and unknown fields; a wrong shape leaves it unset. */
void charge_view_from_json(json_object *o, ChargeView *ret);
/* The lines `corral show` prints for it (CPUTime, MemoryPeak and IO among them). */
void charge_view_print(FILE *f, const ChargeView *c);

/* A job as List and Show describe it, with the scheduler's extras that JobInfo does not
 * carry. */
typedef struct JobEntry {
        JobInfo info;
        bool has_est_start;
        uint64_t est_start;
        bool has_priority;
        double priority;
        ChargeView charge;
} JobEntry;

typedef struct JobList {
        JobEntry *items;
        size_t n, allocated;
} JobList;

void job_entry_done(JobEntry *e);
void job_list_done(JobList *l);
/* Parses one job object of a reply, tolerating fields it does not know. */
int job_entry_from_json(json_object *o, JobEntry *ret);
/* Parses {"jobs": [...]}. -EBADMSG when the shape is wrong. */
int job_list_from_reply(json_object *parameters, JobList *ret);

/* Calls List. filter: the parameters (taken), NULL for all unfinished jobs. Returns 0, a
 * negative errno (already logged), or a positive exit status after an error reply. */
int cli_list_jobs(Cli *cli, json_object *filter, JobList *ret);

/* Turns job arguments ("42", "42_3") into ids. Malformed arguments fail the whole
 * command with CLI_EXIT_USAGE (returned as positive); array tasks that do not exist are
 * reported and counted in *ret_failed. Returns 0, a positive exit status, or a negative
 * errno (already logged). */
int cli_resolve_jobs(Cli *cli, char *const *args, size_t n, uint64_t **ret_ids, size_t *ret_n, size_t *ret_failed);
/* For a verb that takes jobs: the ones argv names after its options (optind on), resolved
 * as above. None: a usage error that says how to call it (usage; NULL: "corral VERB
 * JOBID..."). Returns 0 with *ret_status the verb's status so far (CLI_EXIT_FAILURE when
 * an array task was not found), or the exit status to end with. */
int cli_args_to_jobs(Cli *cli, int argc, char **argv, const char *usage, uint64_t **ret_ids, size_t *ret_n,
                     int *ret_status);

/* Follows job id with Wait until it ends. Returns the job's exit status (job_exit_status)
 * after printing its outcome to stderr; or CLI_EXIT_FAILURE after an error reply; or a
 * negative errno (already logged) when the daemon could not be reached. */
int cli_wait_job(Cli *cli, uint64_t id);
/* The same for n jobs at once, their Wait calls pipelined on one connection: each outcome
 * printed as the job ends, the highest exit status returned (an error reply counts as
 * CLI_EXIT_FAILURE and the others are still waited for). */
int cli_wait_jobs(Cli *cli, const uint64_t *ids, size_t n);

/* Options of `corral submit` that concern the client, not the job: they stay out of the
 * shared option table so that "#SBATCH --parsable" keeps meaning nothing to a job. */
typedef struct SubmitClientFlags {
        bool sbatch;            /* in: sbatch(1)'s client options, not corral's --json */
        bool help;
        bool parsable;
        bool json;
        bool test_only;         /* --test-only: check and print, queue nothing */
        bool quiet;             /* sbatch -Q */
        const char *wrap;       /* sbatch --wrap=CMD: points into argv */
        const char *bad;        /* a client option without its value (--wrap at the end) */
} SubmitClientFlags;

/* Moves the client's own options out of argv (up to the command), keeping the order of
 * the rest; *ret_argv holds argv's pointers (free only the array). Walks the words as
 * submit_options_parse_args() will, so an option's value ("--name --json") is never
 * mistaken for an option. */
int submit_split_client_flags(int argc, char **argv, int *ret_argc, char ***ret_argv, SubmitClientFlags *flags);

/* corral submit, and sbatch(1) when sbatch is set: the same table and the same request,
 * with sbatch's --wrap, --test-only, -Q, -q as --qos and its "sbatch: error:" messages. */
int submit_run(Cli *cli, int argc, char **argv, bool sbatch);

/* Sorts jobs into the queue's sections and, within each, the order shown. */
void queue_sort(JobEntry *jobs, size_t n);
/* Prints the queue view of jobs (sorted in place). show_sections: a mask of
 * (1 << QueueSection) printed even when empty. utf8: cut long names with "…". */
enum {
        QUEUE_PRINT_UTF8 = 1 << 0, /* an ellipsis for cut names */
        QUEUE_PRINT_LONG = 1 << 1, /* the charge columns */
};
int queue_print(FILE *f, JobEntry *jobs, size_t n, time_t now, unsigned show_sections, unsigned flags);
/* Prints one job as `corral show` does. */
int job_show_print(FILE *f, const JobEntry *e, time_t now);
/* The lines `corral show` adds for a job's GPU figures (Show's "gpu_usage" in job). */
void job_gpu_usage_print(FILE *f, json_object *job);
/* The job's state history ("history"), if the reply has one. */
void job_history_print(FILE *f, json_object *job);
/* corral info's GPU table: each device with its model, NUMA node, PCI address, features
 * and the job holding it. */
struct DeviceInfo;
int devices_print(FILE *f, const struct DeviceInfo *devices, size_t n);

/* getopt_long state is global: each verb starts a fresh scan. */
void cli_reset_getopt(void);

/* Helpers for verbs' JSON parameters. NULL on OOM. */
json_object *json_job_id(uint64_t id);
