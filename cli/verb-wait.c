/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral wait: until every job given has ended; the exit status says how. */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include "commands.h"
#include "log.h"

int verb_wait(Cli *cli, int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "json", no_argument, NULL, 'j' },
                {},
        };
        _cleanup_free_ uint64_t *ids = NULL;
        size_t n = 0;
        int c, r, status;

        cli_reset_getopt();
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("Usage: corral wait [--json] JOBID...\n\n"
                               "Wait until the jobs have ended, print how each ended to stderr as it ends,\n"
                               "and exit with the highest of their exit statuses (128+N for a job killed\n"
                               "by signal N, 1 for one that failed without a code or could not be waited\n"
                               "for). --json prints every change of each job.\n");
                        return CLI_EXIT_SUCCESS;
                case 'j':
                        cli->json = true;
                        break;
                default:
                        log_error("wait: see corral wait --help");
                        return CLI_EXIT_USAGE;
                }
        r = cli_args_to_jobs(cli, argc, argv, NULL, &ids, &n, &status);
        if (r != 0)
                return r;
        r = cli_wait_jobs(cli, ids, n);
        if (r < 0)
                return cli_exit_status_from_errno(r);
        return MAX(status, r);
}
