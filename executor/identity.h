/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <pwd.h>
#include <sys/types.h>

#include "job-spec.h"

/* Fills the spec's uid, gid and supplementary groups: the groups the group database gives
 * the user now (a user added to a group since submitting gets it, as a fresh login would),
 * gid among them. Replaces any groups the spec had. -ESRCH: no user of that uid. */
int job_spec_resolve_identity(JobSpec *s, uid_t uid, gid_t gid);
/* The same from answers the caller looked up (corrald's NSS cache): pw's uid, home and
 * shell, gid, and the groups getgrouplist(3) gave (copied). */
int job_spec_set_identity(JobSpec *s, const struct passwd *pw, gid_t gid, const gid_t *groups, size_t n_groups);
