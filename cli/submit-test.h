/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdio.h>

#include "client.h"
#include "proto/job-request.h"

/* The request in words, one "Key: value" line each, as --test-only shows it. */
void submit_request_print(FILE *f, const SubmitRequest *req, const char *script_name);

/* Prints the request (or, with --json, {"request", "accepted"?, "corrald"?, "refusal"?,
 * "estimate_unavailable"?}) and asks corrald's TestSubmit whether it would accept it and
 * when it would start it. The exit status: 0 when it would be accepted (or corrald could
 * not be asked: the request itself is valid), else the refusal's (2 for a bad
 * parameter, 1 otherwise), 3 when corrald stopped answering half way. */
/* sbatch: one line on stderr as Slurm's sbatch --test-only prints it ("sbatch: Job to
 * start at 2026-11-22T10:00:00 using 2 processors on nodes HOST in partition normal"). */
int submit_test_only(Cli *cli, const SubmitRequest *req, const char *script_name, bool sbatch);
