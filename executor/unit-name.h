/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>

#include "macro.h"

/* systemd's limit on a unit name, without the terminating NUL. */
#define UNIT_NAME_MAX 255

/* Escapes s as `systemd-escape` does: '/' becomes '-', a leading '.' and every byte outside
 * [A-Za-z0-9:_.] (including '-' and '\') becomes "\xNN" (lowercase hex). -EINVAL for "". */
int unit_name_escape(const char *s, char **ret);

/* "corral-job-<id>.scope". */
int unit_name_job_scope(uint64_t id, char **ret);

/* "corral-<escaped project>.slice", a child of corral.slice. Because a '-' in a slice name
 * means nesting, the project's '-' is escaped (bio-chem -> corral-bio\x2dchem.slice) and,
 * unlike unit_name_escape(), so is '/': mapping it to '-' would put project "a/b" inside
 * project "a"'s slice and its limits. -EINVAL for NULL, "" or a result over UNIT_NAME_MAX. */
int unit_name_project_slice(const char *project, char **ret);

/* The slice that holds a project slice's cgroup controllers enabled between its jobs
 * (slice-hold.c): corral-<escaped project>.slice -> corral-<escaped project>-controllers.slice,
 * its child by the dash rule. A project slice's part has no '-' (it is escaped), so this
 * name is never a project's own slice. -EINVAL for anything but a project slice (corral.slice
 * included) or a result over UNIT_NAME_MAX. */
int unit_name_slice_hold(const char *slice, char **ret);

/* The job id of a name produced by unit_name_job_scope(); strict: decimal digits without
 * sign, spaces or leading zeros. -EINVAL for anything else, -ERANGE past UINT64_MAX. */
int unit_name_job_id(const char *name, uint64_t *ret);
