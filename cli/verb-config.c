/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral config check [DIR]: the whole configuration (corral.conf, its drop-ins, the
 * project files) checked as corrald would load it, without applying it: an admin runs it
 * before systemctl reload corrald. It reads the files with the caller's rights. */

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "config/config.h"
#include "log.h"

static void config_help(void) {
        printf("Usage: corral config check [DIR]\n\n"
               "Check corrald's configuration in DIR (default " CORRAL_CONFDIR "): corral.conf,\n"
               "corral.conf.d/*.conf and projects.d/*.conf, as a reload would read them, without\n"
               "applying anything. Prints file:line and what is wrong, or what was found.\n");
}

int verb_config(Cli *cli, int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                {},
        };
        _cleanup_(config_freep) Config *c = NULL;
        _cleanup_free_ char *error = NULL;
        const char *dir = CORRAL_CONFDIR;
        int o, r;

        cli_reset_getopt();
        while ((o = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (o) {
                case 'h':
                        config_help();
                        return CLI_EXIT_SUCCESS;
                default:
                        log_error("config: see corral config --help");
                        return CLI_EXIT_USAGE;
                }
        if (optind >= argc || !streq(argv[optind], "check")) {
                log_error("config: expected 'check' (corral config check [DIR])");
                return CLI_EXIT_USAGE;
        }
        if (optind + 1 < argc)
                dir = argv[optind + 1];
        if (optind + 2 < argc) {
                log_error("config: unexpected argument '%s'", argv[optind + 2]);
                return CLI_EXIT_USAGE;
        }

        r = config_load(dir, &c, &error);
        if (r == -ENOMEM)
                return cli_oom();
        if (r < 0) {
                log_error("config: %s", error ?: strerror(-r));
                return CLI_EXIT_FAILURE;
        }
        printf("%s: valid: %zu queue%s (default %s), %zu project%s%s\n", dir, c->n_queues, c->n_queues == 1 ? "" : "s",
               c->default_queue, c->n_projects, c->n_projects == 1 ? "" : "s",
               c->n_projects == 0 ? " (every unix group is a project)" : "");
        return CLI_EXIT_SUCCESS;
}
