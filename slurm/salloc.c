/* SPDX-License-Identifier: GPL-2.0-or-later */
/* salloc(1) on corrald: an allocation with corral submit's options (one table), and
 * COMMAND (by default the user's shell) run in it on this terminal as an interactive job
 * (cli/run.c): in the job's scope, with SLURM_JOB_ID set, so that srun inside runs its
 * steps in the same scope, as in a batch job. The allocation ends with COMMAND: `exit`
 * in the shell ends it. */

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "run-options.h"
#include "run.h"
#include "slurm-common.h"
#include "strv.h"
#include "submit-options.h"

static void salloc_help(void) {
        printf("Usage: salloc [OPTIONS] [--] [COMMAND [ARGS...]]\n\n"
               "Get an allocation with corral submit's options (-n, -c, --mem, -t, -p, -A, ...)\n"
               "and run COMMAND in it on this terminal, by default your shell; srun inside runs\n"
               "steps in the allocation. The allocation ends when COMMAND does. -Q, --quiet: no\n"
               "waiting line. See corral-slurm(7).\n");
}

static int salloc_main(int argc, char *argv[]) {
        _cleanup_(cli_done) Cli cli;
        _cleanup_(submit_options_done) SubmitOptions o;
        _cleanup_free_ char **args = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_strv_free_ char **command = NULL;
        const struct passwd *pw;
        RunFlags flags = {};
        int n, first, r;

        slurm_setup("salloc", &cli, "error");
        submit_options_init(&o, time(NULL));
        o.slurm_dialect = true;

        r = run_split_flags(argc, argv, &n, &args, &flags);
        if (r < 0)
                return cli_oom();
        if (flags.help) {
                salloc_help();
                return 0;
        }
        r = submit_options_parse_argv(n, args, &o, &first, &error);
        if (r == -ENOMEM)
                return cli_oom();
        if (r < 0) {
                slurm_error("%s", strna(error));
                return 1;
        }
        STRV_FOREACH(w, o.warnings)
                log_warning("warning: %s", *w);
        pw = getpwuid(getuid());
        command = salloc_command(args + first, getenv("SHELL"), pw ? pw->pw_shell : NULL);
        if (!command)
                return cli_oom();
        return run_interactive(&cli, &o, command, "", flags.quiet);
}

int main(int argc, char *argv[]) {
        return salloc_main(argc, argv);
}
