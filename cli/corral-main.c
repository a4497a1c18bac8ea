/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral(1): global options and the verb table. */

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "log.h"

typedef struct Verb {
        const char *name;
        int (*run)(Cli *cli, int argc, char **argv);
        const char *args, *help;        /* help NULL: an alias */
} Verb;

static const Verb verbs[] = {
        { "submit", verb_submit, "SCRIPT | COMMAND...", "submit a batch job" },
        { "run", verb_run, "COMMAND...", "run an interactive job on this terminal, once it is scheduled" },
        { "queue", verb_queue, "", "list jobs (alias: jobs)" },
        { "jobs", verb_queue, NULL, NULL },
        { "show", verb_show, "JOBID...", "show everything about jobs" },
        { "cancel", verb_cancel, "JOBID...", "cancel jobs (or by --name, --user, --state)" },
        { "hold", verb_job_action, "JOBID...", "keep pending jobs from starting" },
        { "release", verb_job_action, "JOBID...", "let held jobs start" },
        { "suspend", verb_job_action, "JOBID...", "freeze running jobs" },
        { "resume", verb_job_action, "JOBID...", "thaw suspended jobs" },
        { "requeue", verb_job_action, "[--hold] JOBID...", "put jobs back in the queue" },
        { "signal", verb_signal, "[-b] SIGNAL JOBID...", "send running jobs' processes a signal" },
        { "wait", verb_wait, "JOBID...", "wait for jobs to end, exit with their status" },
        { "logs", verb_logs, "[-f] JOBID", "print a job's output" },
        { "why", verb_why, "JOBID", "explain why a job waits and what its priority is made of" },
        { "info", verb_info, "", "show corrald's version, CPUs, memory and queues" },
        { "reload", verb_reload, "", "make corrald re-read its configuration" },
        { "config", verb_config, "check [DIR]", "check the configuration without applying it" },
        { "usage", verb_usage, "[--by KEY]", "report usage: core-hours, service units, efficiency" },
        { "share", verb_share, "", "show each project's fair-share and grant" },
};

static void help(void) {
        printf("Usage: corral [--json] COMMAND [OPTIONS] [ARGS...]\n\n"
               "Submit and manage batch jobs on this machine (corrald(8)).\n\n"
               "Commands:\n");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (verbs[i].help)
                        printf("  %-8s %-20s %s\n", verbs[i].name, verbs[i].args, verbs[i].help);
        printf("\nOptions:\n"
               "      --json     print replies as JSON (every command)\n"
               "  -h, --help     show this help; corral COMMAND --help for a command's\n"
               "      --version  show the version\n\n"
               "corrald's socket is %s ($CORRAL_SOCKET overrides it).\n"
               "See corral(1).\n",
               CORRAL_SOCKET_PATH);
}

int corral_run(int argc, char **argv) {
        enum { ARG_VERSION = 0x100, ARG_JSON };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "json", no_argument, NULL, ARG_JSON },
                {},
        };
        _cleanup_(cli_done) Cli cli = { .timeout_ms = CLIENT_TIMEOUT_MS_DEFAULT };
        int c;

        cli_reset_getopt();
        /* "+": stop at the verb, whose options are its own. */
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return CLI_EXIT_SUCCESS;
                case ARG_VERSION:
                        printf("corral %s (protocol %d)\n", PACKAGE_VERSION, CORRAL_PROTOCOL_VERSION);
                        return CLI_EXIT_SUCCESS;
                case ARG_JSON:
                        cli.json = true;
                        break;
                default:
                        log_error("see corral --help");
                        return CLI_EXIT_USAGE;
                }

        if (optind >= argc) {
                log_error("no command given (corral submit, queue, show, cancel, ...; see corral --help)");
                return CLI_EXIT_USAGE;
        }
        if (streq(argv[optind], "help")) {
                help();
                return CLI_EXIT_SUCCESS;
        }
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, argv[optind])) {
                        /* Aliases report under the canonical name. */
                        cli.verb = verbs[i].run == verb_queue ? "queue" : verbs[i].name;
                        return verbs[i].run(&cli, argc - optind, argv + optind);
                }

        log_error("unknown command '%s' (see corral --help)", argv[optind]);
        return CLI_EXIT_USAGE;
}
