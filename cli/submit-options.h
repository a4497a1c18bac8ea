/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The options of `corral submit`, in ONE table that serves the command line, native
 * "#CORRAL" directives and Slurm "#SBATCH" directives alike (PBS directives in
 * directives.c translate into the same setters). The spirit is sbatch's: -n/--ntasks and
 * -c/--cpus-per-task multiply into the job's CPUs on this one machine, --mem takes
 * megabytes by default, --time takes Slurm durations.
 *
 * Parsing is pure: nothing here reads the environment, the clock or the working
 * directory; submit_options_finalize() gets them as arguments. Output paths keep Slurm's
 * %j/%x/%u/%A/%a patterns verbatim; the daemon substitutes them (see job-request.h).
 *
 * Precedence: options given on the command line win over directives. Each option
 * belongs to a SubmitField; once the command line set a field, directives for it are
 * ignored (for list options like --env and --dependency too: the command line replaces,
 * it does not add). Among directives, and among command line options, the later wins for
 * single values and accumulates for lists. Note that -q is the queue, as in PBS; in
 * #SBATCH directives it is --qos, as sbatch reads it (directives.c). */

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "macro.h"
#include "proto/job-request.h"

typedef enum SubmitField {
        SUBMIT_FIELD_NTASKS,            /* -n/--cpus/--ntasks, PBS ncpus/ppn/select */
        SUBMIT_FIELD_CPUS_PER_TASK,     /* -c/--cpus-per-task */
        SUBMIT_FIELD_MEMORY,            /* --mem and --mem-per-cpu */
        SUBMIT_FIELD_TIME,
        SUBMIT_FIELD_IO_READ_BW,
        SUBMIT_FIELD_IO_WRITE_BW,
        SUBMIT_FIELD_IO_READ_IOPS,
        SUBMIT_FIELD_IO_WRITE_IOPS,
        SUBMIT_FIELD_IO_WEIGHT,
        SUBMIT_FIELD_TASKS_MAX,
        SUBMIT_FIELD_WORKDIR,
        SUBMIT_FIELD_OUTPUT,
        SUBMIT_FIELD_ERROR,
        SUBMIT_FIELD_INPUT,
        SUBMIT_FIELD_ENV,
        SUBMIT_FIELD_EXPORT,
        SUBMIT_FIELD_DEPENDENCY,
        SUBMIT_FIELD_HOLD,
        SUBMIT_FIELD_QUEUE,
        SUBMIT_FIELD_PROJECT,
        SUBMIT_FIELD_EXCLUSIVE,
        SUBMIT_FIELD_RERUNNABLE,
        SUBMIT_FIELD_NAME,
        SUBMIT_FIELD_NICE,
        SUBMIT_FIELD_ARRAY,
        SUBMIT_FIELD_WAIT,
        SUBMIT_FIELD_BEGIN,
        SUBMIT_FIELD_NODES,
        SUBMIT_FIELD_JOIN,              /* PBS -j */
        SUBMIT_FIELD_SIGNAL,            /* --signal */
        SUBMIT_FIELD_MAIL_EVENTS,       /* --mail-type, PBS -m */
        SUBMIT_FIELD_MAIL_USER,         /* --mail-user, PBS -M */
        SUBMIT_FIELD_GPUS,              /* --gpus, --gpus-per-task, --gpus-per-node, --gres, PBS ngpus/gpus */
        SUBMIT_FIELD_CONSTRAINT,        /* -C/--constraint, Torque node properties */
        SUBMIT_FIELD_GRES_FLAGS,        /* --gres-flags */
        SUBMIT_FIELD_COMMENT,           /* --comment */
        SUBMIT_FIELD_OPEN_MODE,         /* --open-mode */
        /* Options Slurm users carry that Corral does not honour as such: refused with the
         * reason ("not supported on a single machine", "not supported yet"), or accepted
         * with a warning (--qos). Completion does not offer them. Their setters see
         * SubmitOptions.source and keep the command line's precedence themselves. */
        SUBMIT_FIELD_UNSUPPORTED,
        _SUBMIT_FIELD_MAX,
} SubmitField;

typedef enum SubmitSource {
        SUBMIT_SOURCE_COMMAND_LINE,
        SUBMIT_SOURCE_DIRECTIVE,
} SubmitSource;

typedef enum SubmitJoin {
        SUBMIT_JOIN_DEFAULT,            /* separate paths if both given, else the daemon's default */
        SUBMIT_JOIN_OUTPUT,             /* PBS -j oe: stderr goes to the stdout path */
        SUBMIT_JOIN_ERROR,              /* PBS -j eo: stdout goes to the stderr path */
        SUBMIT_JOIN_NONE,               /* PBS -j n */
} SubmitJoin;

typedef struct SubmitOptions {
        SubmitRequest req;              /* what goes on the wire, completed by finalize */

        /* Client-side inputs that finalize() folds into req. */
        unsigned ntasks, cpus_per_task; /* 0: not given */
        /* --gpus-per-task: finalize() multiplies it by the tasks into req.gpus, as Slurm
         * counts a job's GPUs; --gpus and --gres set req.gpus directly. 0: not given. */
        unsigned gpus_per_task;
        uint64_t mem_per_cpu;           /* 0: not given; excludes req.memory */
        int export_all;                 /* -1: not given (ALL, as sbatch), else 0/1 */
        char **export_vars;             /* "NAME" (take from the environment) or "NAME=value" */
        SubmitJoin join;
        bool wait;                      /* --wait: the CLI waits for the job to end */
        /* The interpreter of a script: PBS -S ("#!" put in front or replacing its #!
         * line, as qsub runs the script with it); else, for a #PBS script without #!
         * (script_wants_shell, set by directives_parse), $SHELL of the environment, the
         * login shell qsub would use. */
        char *shell;
        bool script_wants_shell;
        char *qos;                      /* no QOS here: the job only sees it as SLURM_JOB_QOS */
        bool qos_by_command_line;
        bool warned_mail;
        /* Whether mail can be sent here: a warning when it is missing (tests point it
         * elsewhere). CORRAL_SENDMAIL_PATH by default. */
        const char *sendmail_path;
        /* PBS -o/-e (bit 0/1): the path may name a directory, which means the default
         * file name in it; submit_options_resolve_output_dirs() looks. */
        unsigned output_may_be_dir;
        /* What was accepted but not honoured, one message each, prefixed with the option
         * as written ("--qos=high: ..."); directives_parse() moves those of a directive to
         * its DirectiveErrors as warnings, the command line's stay here. */
        char **warnings;
        SubmitSource source;            /* of the option being applied, for the setters */
        /* sbatch(1)/srun(1) (slurm/): -q on the command line is --qos, as there, and the
         * job learns where it was submitted from (SLURM_SUBMIT_DIR). */
        bool slurm_dialect;

        time_t now;                     /* the clock --begin counts from; set by init */
        bool set_by_command_line[_SUBMIT_FIELD_MAX];
} SubmitOptions;

void submit_options_init(SubmitOptions *o, time_t now);
void submit_options_done(SubmitOptions *o);

typedef enum SubmitArg {
        SUBMIT_ARG_NONE,
        SUBMIT_ARG_REQUIRED,
        SUBMIT_ARG_OPTIONAL,            /* only as --name=value */
} SubmitArg;

typedef struct SubmitOption {
        const char *long_name;
        char short_name;                /* 0: none */
        SubmitArg arg;
        SubmitField field;
        /* NULL for options recognized only to say they are not supported. *ret_error gets
         * the reason, without the option's name (the caller adds it). */
        int (*set)(SubmitOptions *o, const char *arg, char **ret_error);
        const char *help;               /* NULL: an alias, not listed separately */
} SubmitOption;

/* The table, for --help output. */
const SubmitOption *submit_options_table(size_t *ret_n);
const SubmitOption *submit_option_find_long(const char *name, size_t len);
const SubmitOption *submit_option_find_short(char c);

/* Applies one option by table entry, honouring precedence. 0 (also when a directive is
 * overridden by the command line), -EINVAL with *ret_error (the reason only), -ENOMEM. */
int submit_option_apply(SubmitOptions *o, const SubmitOption *opt, const char *arg, SubmitSource source,
                        char **ret_error);

/* Parses options from args[0..n). On the command line, parsing stops at the first
 * non-option argument or after "--": its index goes to *ret_first_positional (n when
 * there is none). From directives any positional argument is an error. On -EINVAL
 * *ret_error reads "<option as written>: <reason>", e.g. "--cpus=0: must be between 1 and
 * 4096" or "--gres=gpu:1: option not supported"; parsing stops at the first error. */
int submit_options_parse_args(SubmitOptions *o, char *const *args, size_t n, SubmitSource source,
                              size_t *ret_first_positional, char **ret_error);

/* One option of a directive line tried, with r its result: -EINVAL with error (taken) puts
 * error in *errors, sets *failed and returns 0, so the next option is tried; any other r
 * is returned as it is. */
int directive_keep_error(int r, char *error, char ***errors, bool *failed);

/* The words of one directive line: every option is tried, each error goes to *ret_errors
 * (a strv, in the form above), so one line reports all its problems. sbatch: read -q as
 * sbatch does (--qos), not as the queue. 0, -EINVAL when there were errors, -ENOMEM. */
int submit_options_parse_directive(SubmitOptions *o, char *const *args, size_t n, bool sbatch,
                                   char ***ret_errors);
/* argv as main() gets it: argv[0] (the subcommand) is skipped. *ret_first_command_arg is
 * the index of the script or command (argc when none was given: the script comes from
 * stdin, as with sbatch). */
int submit_options_parse_argv(int argc, char **argv, SubmitOptions *o, int *ret_first_command_arg,
                              char **ret_error_message);

/* Completes req once all options and directives are in: cpus = ntasks x cpus-per-task,
 * gpus = ntasks x gpus-per-task,
 * memory from --mem-per-cpu, the -j join, a relative or missing workdir resolved against
 * cwd (sbatch runs jobs where they were submitted), and the environment: the caller's
 * environ (all of it unless --export says otherwise), then --export's NAME=value entries,
 * then --env, later ones replacing earlier ones of the same name. Entries of environ that
 * are not valid assignments are skipped. Finally validates req, so set req.argv or
 * req.script first. -EINVAL with *ret_error on a bad combination. */
int submit_options_finalize(SubmitOptions *o, const char *cwd, char *const *environ_list, char **ret_error);

/* After finalize: a PBS -o/-e path that names an existing directory (relative paths
 * against the working directory) becomes the file qsub would write there, DIR/%x.o%j
 * (DIR/%x.e%j), following a -j join. Paths are looked up under root_fd (AT_FDCWD: the
 * real root), so tests use a tmpdir. 0 or -ENOMEM; what cannot be looked at is left. */
int submit_options_resolve_output_dirs(SubmitOptions *o, int root_fd);

/* Shared parsers, exposed for tests and PBS translation. */
int parse_dependency_list(const char *s, SubmitRequest *req, char **ret_error);
int parse_begin_time(const char *s, time_t now, uint64_t *ret);

/* Whether a Slurm cluster list (-M/--clusters) names this machine alone: each item "all"
 * or its host name, whole or up to the first dot (scontrol show config's ClusterName).
 * Workflow engines pass --clusters=all to every command. */
bool cluster_list_is_here(const char *list);
/* The same for a node list (-w): this machine's host name, or localhost. */
bool node_list_is_here(const char *list);
