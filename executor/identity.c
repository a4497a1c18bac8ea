/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Who a job runs as. corrald (for every job it starts) and corral-exec-run both resolve it
 * here, so a job gets the same groups whichever of them started it: the supervisor sets
 * the list it is given. */

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include "identity.h"

int job_spec_set_identity(JobSpec *s, const struct passwd *pw, gid_t gid, const gid_t *groups, size_t n_groups) {
        _cleanup_free_ gid_t *copy = NULL;
        _cleanup_free_ char *home = NULL, *shell = NULL;

        if (n_groups > 0) {
                copy = new(gid_t, n_groups);
                if (!copy)
                        return -ENOMEM;
                memcpy(copy, groups, n_groups * sizeof(gid_t));
        }
        if ((pw->pw_dir && !(home = strdup(pw->pw_dir))) || (pw->pw_shell && !(shell = strdup(pw->pw_shell))))
                return -ENOMEM;
        s->uid = pw->pw_uid;
        s->gid = gid;
        free(s->supplementary_gids);
        s->supplementary_gids = TAKE_PTR(copy);
        s->n_supplementary_gids = n_groups;
        free(s->home);
        s->home = TAKE_PTR(home);
        free(s->shell);
        s->shell = TAKE_PTR(shell);
        return 0;
}

int job_spec_resolve_identity(JobSpec *s, uid_t uid, gid_t gid) {
        _cleanup_free_ gid_t *groups = NULL;
        const struct passwd *pw;
        int n = 64;

        pw = getpwuid(uid);
        if (!pw)
                return -ESRCH; /* the user is gone: the job cannot run as them */
        groups = new(gid_t, n);
        if (!groups)
                return -ENOMEM;
        if (getgrouplist(pw->pw_name, gid, groups, &n) < 0) {
                /* n now holds the count needed. */
                gid_t *g = reallocarray(groups, (size_t) n, sizeof(gid_t));
                if (!g)
                        return -ENOMEM;
                groups = g;
                if (getgrouplist(pw->pw_name, gid, groups, &n) < 0)
                        return -EIO;
        }
        return job_spec_set_identity(s, pw, gid, groups, (size_t) n);
}
