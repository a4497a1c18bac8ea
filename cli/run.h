/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

#include "client.h"
#include "submit-options.h"

/* Runs command as an interactive job with o's options (finalized here): queued, then on
 * this process's terminal or stdio (run.c). who follows the program's name in every
 * message ("run: " for corral run, "" for srun and salloc); quiet: no waiting line. The command's exit status, or the CLI's for a failure. */
int run_interactive(Cli *cli, SubmitOptions *o, char *const *command, const char *who, bool quiet);
