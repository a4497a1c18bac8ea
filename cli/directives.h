/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Job script directives, as sbatch and qsub read them: comment lines at the top of the
 * script, before the first line that is neither blank nor a comment. Three prefixes:
 *
 *   #CORRAL <options>   the options of `corral submit` (submit-options.h)
 *   #SBATCH <options>   the same table: corral's options are sbatch's where they overlap,
 *                       and -q is --qos, as sbatch reads it
 *   #PBS <options>      PBS/Torque qsub options, translated (-N, -l, -o, -e, -q, -A, -P,
 *                       -W depend=/block=/group_list=, -J, -t, -h, -v, -V, -d, -w, -r, -j,
 *                       -n, -k, -S, -m, -M)
 *
 * A script must start with #! (as sbatch wants), unless it carries #PBS directives: qsub
 * runs such a script with -S's shell or the login shell (SubmitOptions.shell).
 *
 * A directive line is split like a shell word list (single and double quotes group, an
 * unquoted '#' starts a comment). Nothing is dropped silently: an unknown or unsupported
 * option, a bad value, and a directive after the first command (which sbatch would
 * ignore) are each reported with the line they are on, every one of them, also several
 * on one line; what is accepted but not honoured (--qos, mail) is a warning. Parsing
 * continues after an error so the user sees every problem at once; the caller decides
 * whether to submit anyway. Options already given on the command line win (see
 * submit-options.h). */

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"
#include "submit-options.h"

typedef struct DirectiveError {
        char *file;
        unsigned line;          /* 1-based */
        char *message;          /* e.g. "#SBATCH --gres=gpu:1: option not supported" */
        bool warning;           /* reported, but the directive's meaning is unambiguous */
} DirectiveError;

typedef struct DirectiveErrors {
        DirectiveError *items;
        size_t n;
} DirectiveErrors;

void directive_errors_done(DirectiveErrors *errs);
/* "script.sh:7: #SBATCH --gres=gpu:1: option not supported" (malloc'ed). */
char *directive_error_format(const DirectiveError *e);

/* Applies the directives of script_text to o as SUBMIT_SOURCE_DIRECTIVE. script_name
 * labels errors. Returns 0 when there was nothing but warnings, -EINVAL when errs holds
 * at least one error, -ENOMEM. errs accumulates (it may already hold entries). */
int directives_parse(const char *script_text, const char *script_name, SubmitOptions *o, DirectiveErrors *errs);
