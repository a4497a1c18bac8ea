/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Who a job runs as. corrald (for every job it starts) and corral-exec-run both resolve it
 * here, so a job gets the same groups whichever of them started it: the supervisor sets
 * the list it is given. */

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>

#include "identity.h"

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
        s->uid = uid;
        s->gid = gid;
        free(s->supplementary_gids);
        s->supplementary_gids = TAKE_PTR(groups);
        s->n_supplementary_gids = (size_t) n;
        return 0;
}
