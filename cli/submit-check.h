/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "proto/job-request.h"

/* After submit_options_finalize(): whether the job could start where it asks to, checked
 * with access(2) by the process that submits, i.e. as the submitting user: the working
 * directory can be entered, the output and error files can be written (an existing file,
 * else its directory), the input file can be read. Paths with a %-pattern are left to the
 * job (corrald expands them per job; the directory is still checked when the pattern is
 * only in the file name). Paths are looked up under root_fd (AT_FDCWD: the real root), so
 * tests use a tmpdir. 0; -errno of the first problem with *ret_error in the supervisor's
 * words ("cannot change to the working directory /root: Permission denied"); -ENOMEM. */
int submit_check_paths(const SubmitRequest *req, int root_fd, char **ret_error);
