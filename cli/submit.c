/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral submit: sbatch's behaviour with the one option table of submit-options.h. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "directives.h"
#include "errno-util.h"
#include "fd-util.h"
#include "log.h"
#include "strv.h"
#include "run-options.h"
#include "submit-check.h"
#include "submit-options.h"
#include "submit-test.h"

extern char **environ;

/* sbatch's own options (corral-slurm(7)), kept apart from corral submit's, which
 * corral.1 and the completion document. */
static bool is_long(const char *a, const char *name) {
        return a[0] == '-' && a[1] == '-' && streq(a + 2, name);
}

/* How many words of argv[i..] are a client option: 0 when argv[i] is not one. */
static int client_flag(int argc, char **argv, int i, SubmitClientFlags *f) {
        const char *a = argv[i];

        if (streq(a, "-h") || streq(a, "--help"))
                f->help = true;
        else if (streq(a, "--parsable"))
                f->parsable = true;
        else if (!f->sbatch && streq(a, "--json"))
                f->json = true;
        else if (streq(a, "--test-only") || (f->sbatch && is_long(a, "test-only")))
                f->test_only = true;
        else if (f->sbatch && (streq(a, "-Q") || is_long(a, "quiet")))
                f->quiet = true;
        else if (f->sbatch && strneq(a, "--wrap=", 7))
                f->wrap = a + 7;
        else if (f->sbatch && is_long(a, "wrap")) {
                if (i + 1 >= argc) {
                        f->bad = a;
                        return 1;
                }
                f->wrap = argv[i + 1];
                return 2;
        } else
                return 0;
        return 1;
}

int submit_split_client_flags(int argc, char **argv, int *ret_argc, char ***ret_argv, SubmitClientFlags *flags) {
        _cleanup_free_ char **out = NULL;
        int n = 0, i;

        out = new0(char *, argc + 1);
        if (!out)
                return -ENOMEM;
        if (argc > 0)
                out[n++] = argv[0];
        for (i = 1; i < argc; i++) {
                const char *a = argv[i];

                int k;

                if (streq(a, "--") || a[0] != '-' || a[1] == '\0')
                        break;
                k = client_flag(argc, argv, i, flags);
                if (k > 0) {
                        i += k - 1;
                        continue;
                }
                out[n++] = argv[i];
                if (a[1] == '-') {
                        const char *name = a + 2;
                        const SubmitOption *opt = submit_option_find_long(name, strcspn(name, "="));
                        if (opt && opt->arg == SUBMIT_ARG_REQUIRED && !strchr(name, '=') && i + 1 < argc)
                                out[n++] = argv[++i];
                        continue;
                }
                for (const char *p = a + 1; *p; p++) {
                        const SubmitOption *opt = flags->sbatch && *p == 'q' ? submit_option_find_long("qos", 3)
                                                                              : submit_option_find_short(*p);
                        if (!opt)
                                break; /* the parser reports it */
                        if (opt->arg != SUBMIT_ARG_NONE) {
                                if (!p[1] && i + 1 < argc)
                                        out[n++] = argv[++i];
                                break;
                        }
                }
        }
        for (; i < argc; i++)
                out[n++] = argv[i];
        out[n] = NULL;
        *ret_argc = n;
        *ret_argv = TAKE_PTR(out);
        return 0;
}

static void submit_help(void) {
        size_t n;
        const SubmitOption *t = submit_options_table(&n);

        printf("Usage: corral submit [OPTIONS] SCRIPT\n"
               "       corral submit [OPTIONS] [--] COMMAND [ARGS...]\n"
               "       corral submit [OPTIONS] < SCRIPT\n\n"
               "Submit a batch job. A SCRIPT is a file that starts with #! or carries #SBATCH,\n"
               "#PBS or #CORRAL directives; options on the command line win over directives.\n"
               "The job runs in the current directory with your current environment unless\n"
               "told otherwise.\n\n"
               "Options:\n");
        for (size_t i = 0; i < n; i++) {
                char lhs[64];

                if (!t[i].help)
                        continue;
                if (t[i].short_name)
                        snprintf(lhs, sizeof(lhs), "-%c, --%s%s", t[i].short_name, t[i].long_name,
                                 t[i].arg == SUBMIT_ARG_REQUIRED ? " VALUE" : "");
                else
                        snprintf(lhs, sizeof(lhs), "    --%s%s", t[i].long_name,
                                 t[i].arg == SUBMIT_ARG_REQUIRED ? " VALUE" : "");
                printf("  %-28s %s\n", lhs, t[i].help);
        }
        printf("  %-28s %s\n", "    --parsable", "print only the job id");
        printf("  %-28s %s\n", "    --json", "print the reply as JSON");
        printf("  %-28s %s\n", "    --test-only", "check the job and print it, with corrald's answer and estimated start; queue nothing");
        printf("  %-28s %s\n", "-h, --help", "show this help");
        printf("\nSlurm spellings work too: --ntasks, --job-name, --partition (-p), --account,\n"
               "--chdir, --requeue, --dependency. See corral(1) for the directive dialects.\n");
}

/* Reads at most max bytes (+1 to detect more) from fd into a NUL-terminated buffer.
 * -EFBIG past max. */
static int read_all(int fd, size_t max, char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, allocated = 0;

        for (;;) {
                ssize_t k;

                if (!GREEDY_REALLOC(buf, allocated, size + 64 * 1024 + 1))
                        return -ENOMEM;
                k = read(fd, buf + size, MIN(allocated - size - 1, max + 1 - size));
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                size += (size_t) k;
                if (size > max)
                        return -EFBIG;
        }
        if (!buf && !(buf = strdup("")))
                return -ENOMEM;
        buf[size] = 0;
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

typedef enum ScriptProbe {
        PROBE_NOT_A_FILE,
        PROBE_NOT_A_SCRIPT,
        PROBE_SCRIPT,
} ScriptProbe;

/* Whether path names a script file; reads it whole when it does. */
static int probe_script(const char *path, char **ret_text, size_t *ret_size) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *text = NULL;
        struct stat st;
        size_t size;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                if (errno == ENOENT || errno == ENOTDIR)
                        return PROBE_NOT_A_FILE;
                /* A bare name in a current directory we cannot search (a shell left in
                 * /root): no script of ours can be there, so it is a command, and the
                 * working directory check says what is wrong with the directory. */
                if (errno == EACCES && !strchr(path, '/') && access(".", X_OK) < 0)
                        return PROBE_NOT_A_FILE;
                return -errno;
        }
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return PROBE_NOT_A_FILE;

        r = read_all(fd, CORRAL_SCRIPT_SIZE_MAX, &text, &size);
        if (r == -EFBIG) {
                /* Too big to be sent; but is it a script at all, or a big binary? */
                char head[4096];
                ssize_t k = pread(fd, head, sizeof(head), 0);
                if (k > 0 && text_is_script(head, (size_t) k))
                        return -EFBIG;
                return PROBE_NOT_A_SCRIPT;
        }
        if (r < 0)
                return r;
        if (!text_is_script(text, size))
                return PROBE_NOT_A_SCRIPT;
        *ret_text = TAKE_PTR(text);
        *ret_size = size;
        return PROBE_SCRIPT;
}

static const char *path_basename(const char *p) {
        const char *s = strrchr(p, '/');
        return s && s[1] ? s + 1 : p;
}

/* umask(2) only reads by writing: set and put back at once (we have no threads). */
static mode_t current_umask(void) {
        mode_t m = umask(0077);

        (void) umask(m);
        return m;
}

static int submit_wait_all(Cli *cli, const uint64_t *ids, size_t n) {
        int status = CLI_EXIT_SUCCESS;

        int r = cli_wait_jobs(cli, ids, n);

        if (r < 0)
                return cli_exit_status_from_errno(r);
        return MAX(status, r);
}

static void sbatch_help(void) {
        printf("Usage: sbatch [OPTIONS] SCRIPT [ARGS...]\n"
               "       sbatch [OPTIONS] --wrap=COMMAND\n\n"
               "Submit a batch job to corrald, the options of corral submit with Slurm's meaning\n"
               "(-q is --qos). Client options: --parsable, --test-only, -Q/--quiet, --wrap.\n"
               "See corral-slurm(7) for what is supported and what is refused.\n");
}

/* sbatch --wrap's script, as sbatch writes it. */
static char *wrap_script(const char *command) {
        char *s;

        if (asprintf(&s, "#!/bin/sh\n# This script was generated by sbatch --wrap.\n\n%s\n", command) < 0)
                return NULL;
        return s;
}

int verb_submit(Cli *cli, int argc, char **argv) {
        /* qsub -I's habit: the job is interactive (run.c). */
        if (submit_take_interactive_flag(&argc, argv))
                return verb_run(cli, argc, argv);
        return submit_run(cli, argc, argv, false);
}

/* Messages: "submit: ..." for corral, "sbatch: error: ..." as Slurm's tools write them. */
#define SUBMIT_ERROR(fmt, ...) log_error("%s" fmt, sbatch ? "error: " : "submit: ", ##__VA_ARGS__)

/* The warnings of accepted options (--qos, mail) come after the job id line: clients
 * read the first line of sbatch's merged output as "Submitted batch job N" (batchtools),
 * so nothing may come before it. On an error they follow the error. */
typedef struct SubmitWarnings {
        SubmitOptions *o;
        const DirectiveErrors *directives;      /* a script's, all of them warnings */
        const char *directives_prefix;
        bool sbatch, quiet;
} SubmitWarnings;

static void print_directive_errors(const DirectiveErrors *errs, const char *prefix) {
        for (size_t i = 0; i < errs->n; i++) {
                _cleanup_free_ char *m = directive_error_format(&errs->items[i]);
                fprintf(stderr, "%s%s\n", prefix, m ?: "out of memory");
        }
}

static void submit_warnings_flush(SubmitWarnings *w) {
        if (!w->o)
                return;
        if (w->directives)
                print_directive_errors(w->directives, w->directives_prefix);
        if (!w->quiet)
                STRV_FOREACH(s, w->o->warnings)
                        log_warning("%s%s", w->sbatch ? "warning: " : "submit: warning: ", *s);
        w->o = NULL;
}

static int submit_run_one(Cli *cli, int argc, char **argv, bool sbatch, bool *ret_waited) {
        _cleanup_(submit_options_done) SubmitOptions o;
        _cleanup_(directive_errors_done) DirectiveErrors errs = {};
        /* After o and errs: flushed before they are freed. */
        _cleanup_(submit_warnings_flush) SubmitWarnings warnings = { .o = &o, .sbatch = sbatch };
        _cleanup_(reply_done) Reply reply = {};
        _cleanup_json_ json_object *params = NULL;
        _cleanup_free_ char **args = NULL;
        _cleanup_free_ char *error = NULL, *text = NULL, *cwd = NULL;
        _cleanup_free_ uint64_t *ids = NULL;
        SubmitClientFlags flags = { .sbatch = sbatch };
        const char *script_name = NULL;
        size_t size = 0, n_ids = 0;
        json_object *v;
        int n, first, n_pos, r;

        submit_options_init(&o, time(NULL));
        o.slurm_dialect = sbatch;

        r = submit_split_client_flags(argc, argv, &n, &args, &flags);
        if (r < 0)
                return cli_oom();
        if (flags.help) {
                if (sbatch)
                        sbatch_help();
                else
                        submit_help();
                return CLI_EXIT_SUCCESS;
        }
        if (flags.bad) {
                SUBMIT_ERROR("%s: option requires a value", flags.bad);
                return CLI_EXIT_USAGE;
        }
        cli->json = cli->json || flags.json;

        r = submit_options_parse_argv(n, args, &o, &first, &error);
        if (r == -ENOMEM)
                return cli_oom();
        if (r < 0) {
                if (sbatch)
                        SUBMIT_ERROR("%s", strna(error));
                else
                        log_error("submit: %s (see corral submit --help)", strna(error));
                return CLI_EXIT_USAGE;
        }
        warnings.quiet = flags.quiet;
        n_pos = n - first;

        if (flags.wrap) {
                if (n_pos > 0) {
                        SUBMIT_ERROR("script arguments not permitted with --wrap option");
                        return CLI_EXIT_USAGE;
                }
                if (isempty(flags.wrap)) {
                        SUBMIT_ERROR("--wrap: empty command");
                        return CLI_EXIT_USAGE;
                }
                text = wrap_script(flags.wrap);
                if (!text)
                        return cli_oom();
                size = strlen(text);
                if (size > CORRAL_SCRIPT_SIZE_MAX) {
                        SUBMIT_ERROR("--wrap: command larger than %" PRIu64 " KiB", CORRAL_SCRIPT_SIZE_MAX >> 10);
                        return CLI_EXIT_USAGE;
                }
                script_name = "wrap"; /* sbatch names such a job "wrap" */
        } else if (sbatch && n_pos > 1) {
                /* sbatch SCRIPT ARGS: the script runs with its arguments. Sent as a command,
                 * so its directives are read here first. */
                r = probe_script(args[first], &text, &size);
                if (r < 0 || r != PROBE_SCRIPT) {
                        SUBMIT_ERROR("%s: not a batch script (sbatch runs scripts; use --wrap for a command)",
                                     args[first]);
                        return CLI_EXIT_USAGE;
                }
                r = directives_parse(text, args[first], &o, &errs);
                if (r == -ENOMEM)
                        return cli_oom();
                /* Errors now; warnings alone after the job id line. */
                if (r < 0)
                        print_directive_errors(&errs, "sbatch: ");
                else
                        warnings.directives = &errs, warnings.directives_prefix = "sbatch: ";
                if (r < 0) {
                        SUBMIT_ERROR("not submitted: fix the directives above or override them on the command line");
                        return CLI_EXIT_USAGE;
                }
                text = mfree(text);
        } else if (sbatch && n_pos == 0 && isatty(STDIN_FILENO)) {
                SUBMIT_ERROR("no batch script specified");
                return CLI_EXIT_USAGE;
        }

        if (script_name)
                ;
        else if (n_pos == 0) {
                if (isatty(STDIN_FILENO)) {
                        log_error("submit: no script or command given (corral submit SCRIPT, corral submit "
                                  "COMMAND [ARGS...], or a script on stdin)");
                        return CLI_EXIT_USAGE;
                }
                r = read_all(STDIN_FILENO, CORRAL_SCRIPT_SIZE_MAX, &text, &size);
                if (r == -EFBIG) {
                        log_error("submit: the script on stdin is larger than %" PRIu64 " KiB",
                                  CORRAL_SCRIPT_SIZE_MAX >> 10);
                        return CLI_EXIT_USAGE;
                }
                if (r < 0) {
                        log_error_errno(r, "submit: cannot read the script from stdin: %m");
                        return CLI_EXIT_FAILURE;
                }
                script_name = "<stdin>";
        } else if (n_pos == 1) {
                /* A lone argument that is a script file is the job script; anything else
                 * (a program on $PATH, a binary, a script given arguments) is a command. */
                r = probe_script(args[first], &text, &size);
                if (r == -EFBIG) {
                        log_error("submit: %s: script larger than %" PRIu64 " KiB (run it as a command "
                                  "instead: corral submit -- /bin/sh %s)", args[first],
                                  CORRAL_SCRIPT_SIZE_MAX >> 10, args[first]);
                        return CLI_EXIT_USAGE;
                }
                if (r < 0) {
                        log_error_errno(r, "submit: cannot read %s: %m", args[first]);
                        return CLI_EXIT_USAGE;
                }
                if (r == PROBE_SCRIPT)
                        script_name = args[first];
                else if (sbatch) {
                        SUBMIT_ERROR("This does not look like a batch script.  The first line must start "
                                     "with #! followed by the path to an interpreter.");
                        return CLI_EXIT_USAGE;
                }
        }

        if (script_name) {
                if (size == 0 || memchr(text, 0, size)) {
                        SUBMIT_ERROR("%s: empty or not a text file", script_name);
                        return CLI_EXIT_USAGE;
                }
                /* Also refuses a script without #! (as sbatch), unless it is qsub's. */
                r = directives_parse(text, script_name, &o, &errs);
                if (r == -ENOMEM)
                        return cli_oom();
                if (r < 0)
                        print_directive_errors(&errs, "");
                else
                        warnings.directives = &errs, warnings.directives_prefix = "";
                if (r < 0) {
                        SUBMIT_ERROR("not submitted: fix the directives above or override them on the "
                                  "command line");
                        return CLI_EXIT_USAGE;
                }
                if (!o.req.name && strcmp(script_name, "<stdin>") != 0 && job_name_is_valid(path_basename(script_name)))
                        o.req.name = strdup(path_basename(script_name));
                o.req.script = TAKE_PTR(text);
        } else {
                o.req.argv = strv_copy(args + first);
                if (!o.req.argv)
                        return cli_oom();
                if (!o.req.name && job_name_is_valid(path_basename(args[first])))
                        o.req.name = strdup(path_basename(args[first]));
        }

        /* sbatch writes to slurm-%j.out in the job's directory unless told otherwise
         * (corral submit leaves it to corrald: the journal). */
        if (sbatch && !o.req.stdout_path &&
            !(o.req.stdout_path = strdup(o.req.array.set ? "slurm-%A_%a.out" : "slurm-%j.out")))
                return cli_oom();

        cwd = getcwd(NULL, 0); /* NULL is fine if --workdir is absolute; finalize says so otherwise */
        /* The job creates its files as the submitter would from this shell (sbatch does the
         * same), not with the daemon's umask. */
        o.req.umask = current_umask() & CORRAL_UMASK_MAX;
        error = mfree(error);
        r = submit_options_finalize(&o, cwd, environ, &error);
        if (r == -ENOMEM)
                return cli_oom();
        if (r < 0) {
                SUBMIT_ERROR("%s", strna(error));
                return CLI_EXIT_USAGE;
        }
        if (submit_options_resolve_output_dirs(&o, AT_FDCWD) < 0) /* PBS -o DIR */
                return cli_oom();
        /* As the submitting user, now, rather than a LaunchFailed when the job starts. */
        error = mfree(error);
        r = submit_check_paths(&o.req, AT_FDCWD, &error);
        if (r == -ENOMEM)
                return cli_oom();
        if (r < 0) {
                SUBMIT_ERROR("%s (not submitted; --workdir, --output, --error and --input choose others)",
                             strna(error));
                return CLI_EXIT_USAGE;
        }

        if (sbatch && !o.req.name && streq_ptr(script_name, "<stdin>") && !(o.req.name = strdup("sbatch")))
                return cli_oom();
        if (flags.test_only)
                return submit_test_only(cli, &o.req, script_name, sbatch);

        r = submit_request_to_json(&o.req, &params);
        if (r < 0)
                return cli_oom();
        r = cli_call_reply(cli, CORRAL_METHOD_SUBMIT, TAKE_PTR(params), NULL, &reply);
        if (r != 0)
                return r;

        /* One id, or for an array one per task (also when the daemon sends both). */
        if (json_object_object_get_ex(reply.parameters, "job_ids", &v) && json_object_is_type(v, json_type_array)) {
                size_t k = json_object_array_length(v);

                ids = new0(uint64_t, k + 1);
                if (!ids)
                        return cli_oom();
                for (size_t i = 0; i < k; i++) {
                        uint64_t id;
                        if (json_get_u64(json_object_array_get_idx(v, i), 1, CORRAL_JOB_ID_MAX, &id) >= 0)
                                ids[n_ids++] = id;
                }
        }
        if (n_ids == 0 && json_object_object_get_ex(reply.parameters, "job_id", &v)) {
                uint64_t id;
                if (json_get_u64(v, 1, CORRAL_JOB_ID_MAX, &id) >= 0) {
                        free(ids);
                        ids = new(uint64_t, 1);
                        if (!ids)
                                return cli_oom();
                        ids[n_ids++] = id;
                }
        }
        if (n_ids == 0) {
                SUBMIT_ERROR("corrald accepted the job but sent no job id this corral can read "
                          "(corral queue --me shows it)");
                return CLI_EXIT_FAILURE;
        }

        if (cli->json)
                (void) cli_print_json(reply.parameters);
        else if (flags.parsable)
                printf("%" PRIu64 "\n", ids[0]);
        else if (n_ids == 1 || sbatch) /* Slurm's line for an array too */
                printf("Submitted batch job %" PRIu64 "\n", ids[0]);
        else
                printf("Submitted batch job %" PRIu64 " (array of %zu jobs: %" PRIu64 " to %" PRIu64 ")\n",
                       ids[0], n_ids, ids[0], ids[n_ids - 1]);
        fflush(stdout);
        submit_warnings_flush(&warnings);
        /* What corrald changed on the way (a spent grant's bonus queue). */
        if (!cli->json && json_object_object_get_ex(reply.parameters, "notice", &v) &&
            json_object_is_type(v, json_type_string))
                log_notice("%s", json_object_get_string(v));

        if (o.wait) {
                *ret_waited = true;
                return submit_wait_all(cli, ids, n_ids);
        }
        return CLI_EXIT_SUCCESS;
}

int submit_run(Cli *cli, int argc, char **argv, bool sbatch) {
        bool waited = false;
        int r = submit_run_one(cli, argc, argv, sbatch, &waited);

        /* sbatch exits 1 on every error, as Slurm's does (corral's 2 and 3 tell a usage
         * error and an unreachable daemon apart); with --wait, the job's exit status. */
        return sbatch && r != 0 && !waited ? 1 : r;
}
