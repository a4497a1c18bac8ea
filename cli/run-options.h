/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The pure parts of interactive jobs' front ends (corral run, corral submit -I, srun
 * --pty, salloc): which options apply, and what command salloc runs. cli/run.c does the
 * rest. */

#include <stdbool.h>

#include "submit-options.h"

/* corral run's and salloc's own options, not the job's. */
typedef struct RunFlags {
        bool help;
        bool quiet;             /* no waiting line on stderr */
} RunFlags;

/* Moves run's own flags (-h/--help, -Q/--quiet) out of argv up to the command, as
 * submit_split_client_flags() does for submit's; *ret_argv holds argv's pointers (free
 * only the array). 0 or -ENOMEM. */
int run_split_flags(int argc, char **argv, int *ret_argc, char ***ret_argv, RunFlags *flags);

/* `corral submit -I` / `--interactive` (qsub -I's habit): removes the flag from argv
 * (before the command; an option's value is never taken for it) and says whether it was
 * there. */
bool submit_take_interactive_flag(int *argc, char **argv);

/* What an interactive job cannot have: an array, output, error or input files (its
 * terminal is all three), --wait (it is waited for anyway). 0, or -EINVAL with
 * *ret_error (the reason, naming the option). */
int run_options_check(const SubmitOptions *o, char **ret_error);

/* salloc's command: args when given, else the user's shell ($SHELL, else the login
 * shell, else /bin/sh), as an argv. NULL: out of memory. */
char **salloc_command(char *const *args, const char *shell_env, const char *login_shell);
