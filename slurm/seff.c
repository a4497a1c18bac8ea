/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seff(1) on corrald: one job's efficiency as Slurm's contrib seff prints it (CPU time used
 * of the core-walltime, memory peak of the memory requested), from Show as sacct's TotalCPU
 * and MaxRSS are, with the GPU lines Corral adds for a job that held GPUs. */

#include <getopt.h>
#include <stdio.h>

#include "job-efficiency.h"
#include "log.h"
#include "slurm-common.h"

static void help(void) {
        printf("Usage: seff [Options] <Jobid>\n"
               "       Options:\n"
               "       -h    Help menu\n"
               "       -v    Version\n\n"
               "One job's CPU, memory and GPU efficiency, from corrald. See corral-slurm(7).\n");
}

static int run(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'v' },
                {},
        };
        _cleanup_(cli_done) Cli cli;
        _cleanup_(job_efficiency_view_done) JobEfficiencyView v = {};
        int c, r;

        slurm_setup("seff", &cli, "error");
        while ((c = getopt_long(argc, argv, "hv", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case 'v':
                        printf("seff Version 2.1 (Corral %s)\n", PACKAGE_VERSION);
                        return 0;
                default:
                        help();
                        return 1;
                }
        if (argc - optind != 1) {
                help();
                return 1;
        }
        r = job_efficiency_fetch(&cli, argv[optind], true, &v);
        if (r != 0)
                return r;
        /* Slurm's state names: PENDING for a held job, as sacct says. */
        v.eff.state = slurm_state_name(v.entry.info.state);
        r = job_efficiency_print(stdout, &v.eff);
        if (r < 0)
                return log_error_errno(r, "error: cannot write: %m"), 1;
        return 0;
}

SLURM_MAIN(run)
