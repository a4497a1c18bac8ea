/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral cancel, hold, release, suspend, resume, requeue, signal: one request per job, by
 * id or by filter (cancel). */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "log.h"
#include "strv.h"

static CorralMethod action_method(const char *verb) {
        static const struct {
                const char *verb;
                CorralMethod method;
        } table[] = {
                { "cancel", CORRAL_METHOD_CANCEL },   { "hold", CORRAL_METHOD_HOLD },
                { "release", CORRAL_METHOD_RELEASE }, { "suspend", CORRAL_METHOD_SUSPEND },
                { "resume", CORRAL_METHOD_RESUME },   { "requeue", CORRAL_METHOD_REQUEUE },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (streq(table[i].verb, verb))
                        return table[i].method;
        return _CORRAL_METHOD_INVALID;
}

/* Applies the verb's method to each id, going on after failures as scancel does. */
static int act_on_jobs(Cli *cli, const uint64_t *ids, size_t n, bool hold, int status) {
        CorralMethod m = action_method(cli->verb);

        assert(m >= 0);

        for (size_t i = 0; i < n; i++) {
                _cleanup_(reply_done) Reply reply = {};
                _cleanup_json_ json_object *p = json_job_id(ids[i]);
                char subject[64];
                int r;

                if (!p || (hold && json_add_bool(p, "hold", true) < 0))
                        return cli_oom();
                r = cli_call(cli, m, TAKE_PTR(p), &reply);
                if (r < 0)
                        return cli_exit_status_from_errno(r);
                if (reply.error) {
                        snprintf(subject, sizeof(subject), "job %" PRIu64, ids[i]);
                        r = cli_report_error(cli, subject, &reply); /* MAX() evaluates twice */
                        status = MAX(status, r);
                        continue;
                }
                if (cli->json)
                        (void) cli_print_json(reply.parameters);
                else {
                        /* Done, but not all the person asked for (a resume that lifts only their
                         * hold on a job the scheduler holds suspended too): say so. */
                        json_object *msg;
                        if (json_object_object_get_ex(reply.parameters, CORRAL_FIELD_MESSAGE, &msg) &&
                            json_object_is_type(msg, json_type_string))
                                log_notice("%s: job %" PRIu64 ": %s", cli->verb, ids[i], json_object_get_string(msg));
                }
        }
        return status;
}

static void action_help(const char *verb) {
        bool requeue = streq(verb, "requeue");

        printf("Usage: corral %s [OPTIONS] JOBID...\n\n", strempty(verb));
        if (streq(verb, "hold"))
                printf("Keep pending jobs from starting until they are released.\n");
        else if (streq(verb, "release"))
                printf("Let held jobs be scheduled again.\n");
        else if (streq(verb, "suspend"))
                printf("Freeze running jobs; they keep their CPUs and memory.\n");
        else if (streq(verb, "resume"))
                printf("Thaw suspended jobs.\n");
        else
                printf("Put jobs back in the queue (running ones are stopped first).\n");
        printf("\nJOBID is a number (42) or an array task (42_3).\n\nOptions:\n");
        if (requeue)
                printf("  -H, --hold     requeue held\n");
        printf("      --json     print the replies as JSON\n"
               "  -h, --help     show this help\n");
}

int verb_job_action(Cli *cli, int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "json", no_argument, NULL, 'j' },
                { "hold", no_argument, NULL, 'H' },
                {},
        };
        _cleanup_free_ uint64_t *ids = NULL;
        bool requeue = streq(cli->verb, "requeue"), hold = false;
        size_t n = 0;
        int c, r, status;

        cli_reset_getopt();
        while ((c = getopt_long(argc, argv, requeue ? "hH" : "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        action_help(cli->verb);
                        return CLI_EXIT_SUCCESS;
                case 'j':
                        cli->json = true;
                        break;
                case 'H':
                        if (!requeue) {
                                log_error("%s: unrecognized option '--hold' (see corral %s --help)", cli->verb,
                                          cli->verb);
                                return CLI_EXIT_USAGE;
                        }
                        hold = true;
                        break;
                default:
                        log_error("%s: see corral %s --help", cli->verb, cli->verb);
                        return CLI_EXIT_USAGE;
                }
        r = cli_args_to_jobs(cli, argc, argv, NULL, &ids, &n, &status);
        if (r != 0)
                return r;
        return act_on_jobs(cli, ids, n, hold, status);
}

static void signal_help(void) {
        printf("Usage: corral signal [OPTIONS] SIGNAL JOBID...\n\n"
               "Send the processes of running jobs a signal, which does not end a job unless its\n"
               "processes die of it. SIGNAL is a name (USR1, SIGUSR1, TERM) or a number (1-64).\n\n"
               "Options:\n"
               "  -b, --batch    the job's main process (its script) alone\n"
               "      --json     print the replies as JSON\n"
               "  -h, --help     show this help\n");
}

int verb_signal(Cli *cli, int argc, char **argv) {
        enum { ARG_JSON = 0x100 };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "json", no_argument, NULL, ARG_JSON },
                { "batch", no_argument, NULL, 'b' },
                {},
        };
        _cleanup_free_ uint64_t *ids = NULL;
        bool batch = false;
        size_t n = 0;
        int c, r, sig, status;

        cli_reset_getopt();
        /* "+": a negative signal number is no option (and is refused below). */
        while ((c = getopt_long(argc, argv, "+hb", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        signal_help();
                        return CLI_EXIT_SUCCESS;
                case ARG_JSON:
                        cli->json = true;
                        break;
                case 'b':
                        batch = true;
                        break;
                default:
                        log_error("signal: see corral signal --help");
                        return CLI_EXIT_USAGE;
                }
        if (optind >= argc) {
                log_error("signal: no signal given (corral signal SIGNAL JOBID...)");
                return CLI_EXIT_USAGE;
        }
        if (signal_parse(argv[optind], &sig) < 0) {
                log_error("signal: unknown signal '%s' (a name such as USR1 or TERM, or a number from 1 to 64)",
                          argv[optind]);
                return CLI_EXIT_USAGE;
        }
        optind++;
        r = cli_args_to_jobs(cli, argc, argv, "corral signal SIGNAL JOBID...", &ids, &n, &status);
        if (r != 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                _cleanup_(reply_done) Reply reply = {};
                _cleanup_json_ json_object *p = json_job_id(ids[i]);
                char subject[64];

                if (!p || json_add_i64(p, "signal", sig) < 0 || (batch && json_add_bool(p, "batch", true) < 0))
                        return cli_oom();
                r = cli_call(cli, CORRAL_METHOD_SIGNAL, TAKE_PTR(p), &reply);
                if (r < 0)
                        return cli_exit_status_from_errno(r);
                if (reply.error) {
                        snprintf(subject, sizeof(subject), "job %" PRIu64, ids[i]);
                        r = cli_report_error(cli, subject, &reply);
                        status = MAX(status, r);
                } else if (cli->json)
                        (void) cli_print_json(reply.parameters);
        }
        return status;
}

static void cancel_help(void) {
        printf("Usage: corral cancel [OPTIONS] [JOBID...]\n\n"
               "Cancel jobs: pending ones never start, running ones are signalled (SIGTERM, then\n"
               "SIGKILL after the grace period). With filters and no JOBID, every job matching\n"
               "all filters is cancelled; with both, only the listed jobs that match.\n\n"
               "Options:\n"
               "  -n, --name NAME      only jobs with this name\n"
               "  -u, --user USER      only jobs of this user\n"
               "      --me             only your own jobs\n"
               "  -t, --state STATES   only jobs in these states (e.g. PENDING,HELD or PD)\n"
               "      --json           print the replies as JSON\n"
               "  -h, --help           show this help\n");
}

static char *current_user_name(void) {
        struct passwd *pw = getpwuid(getuid());
        return pw ? strdup(pw->pw_name) : NULL;
}

int verb_cancel(Cli *cli, int argc, char **argv) {
        enum { ARG_ME = 0x100, ARG_JSON };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "json", no_argument, NULL, ARG_JSON },
                { "name", required_argument, NULL, 'n' },
                { "job-name", required_argument, NULL, 'n' },
                { "user", required_argument, NULL, 'u' },
                { "me", no_argument, NULL, ARG_ME },
                { "state", required_argument, NULL, 't' },
                { "states", required_argument, NULL, 't' },
                {},
        };
        _cleanup_strv_free_ char **states = NULL;
        _cleanup_free_ char *user = NULL;
        _cleanup_free_ uint64_t *ids = NULL;
        const char *name = NULL;
        size_t n = 0, failed = 0;
        int c, r;

        cli_reset_getopt();
        while ((c = getopt_long(argc, argv, "hn:u:t:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        cancel_help();
                        return CLI_EXIT_SUCCESS;
                case ARG_JSON:
                        cli->json = true;
                        break;
                case 'n':
                        name = optarg;
                        break;
                case 'u':
                case ARG_ME:
                        free(user);
                        user = c == 'u' ? strdup(optarg) : current_user_name();
                        if (!user)
                                return cli_oom();
                        break;
                case 't': {
                        _cleanup_free_ char *bad = NULL;
                        strv_free(states);
                        states = NULL;
                        r = job_states_parse(optarg, &states, &bad);
                        if (r == -ENOMEM)
                                return cli_oom();
                        if (r < 0) {
                                log_error("cancel: unknown state '%s' (e.g. PENDING, RUNNING, HELD, or PD, R)",
                                          strempty(bad));
                                return CLI_EXIT_USAGE;
                        }
                        break;
                }
                default:
                        log_error("cancel: see corral cancel --help");
                        return CLI_EXIT_USAGE;
                }

        if (optind < argc) {
                r = cli_resolve_jobs(cli, argv + optind, (size_t) (argc - optind), &ids, &n, &failed);
                if (r < 0)
                        return cli_exit_status_from_errno(r);
                if (r > 0)
                        return r;
        } else if (!name && !user && !states) {
                log_error("cancel: no job given (corral cancel JOBID..., or filter with --name, --user, --me "
                          "or --state)");
                return CLI_EXIT_USAGE;
        }

        if (name || user || states) {
                _cleanup_json_ json_object *f = json_object_new_object();
                _cleanup_(job_list_done) JobList l = {};
                _cleanup_free_ uint64_t *match = NULL;
                size_t n_match = 0;
                bool by_id = optind < argc;

                if (!f || json_add_string(f, "user", user) < 0 || json_add_strv(f, "states", states) < 0)
                        return cli_oom();
                r = cli_list_jobs(cli, TAKE_PTR(f), &l);
                if (r < 0)
                        return cli_exit_status_from_errno(r);
                if (r > 0)
                        return r;
                match = new0(uint64_t, l.n);
                if (!match && l.n > 0)
                        return cli_oom();
                for (size_t i = 0; i < l.n; i++) {
                        const JobInfo *j = &l.items[i].info;
                        bool listed = !by_id;

                        /* Filter here too: the daemon may not know every filter. */
                        if (name && !streq_ptr(j->name, name))
                                continue;
                        if (user && !streq_ptr(j->user, user))
                                continue;
                        if (states && !strv_contains(states, j->state))
                                continue;
                        if (!states && job_state_name_is_final(j->state))
                                continue;
                        for (size_t k = 0; k < n && !listed; k++)
                                listed = ids[k] == j->id;
                        if (listed)
                                match[n_match++] = j->id;
                }
                if (n_match == 0)
                        log_info("cancel: no job matches");
                free(ids);
                ids = TAKE_PTR(match);
                n = n_match;
        }

        return act_on_jobs(cli, ids, n, false, failed > 0 ? CLI_EXIT_FAILURE : CLI_EXIT_SUCCESS);
}
