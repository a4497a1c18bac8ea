/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sbatch(1) on corrald: corral submit's table and request (cli/submit.c), with sbatch's
 * own client options and messages. */

#include "log.h"
#include "slurm-common.h"

int main(int argc, char *argv[]) {
        _cleanup_(cli_done) Cli cli;

        /* corrald's refusals read "sbatch: error: Batch job submission failed: ...". */
        slurm_setup("sbatch", &cli, "error: Batch job submission failed");
        return submit_run(&cli, argc, argv, true);
}
