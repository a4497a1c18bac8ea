/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "authz.h"

static const char *const authz_action_table[_AUTHZ_ACTION_MAX] = {
        [AUTHZ_SUBMIT] = "submit",
        [AUTHZ_LIST] = "list",
        [AUTHZ_SHOW_DETAILS] = "show-details",
        [AUTHZ_CANCEL] = "cancel",
        [AUTHZ_SIGNAL] = "signal",
        [AUTHZ_HOLD] = "hold",
        [AUTHZ_RELEASE] = "release",
        [AUTHZ_SUSPEND] = "suspend",
        [AUTHZ_RESUME] = "resume",
        [AUTHZ_REQUEUE] = "requeue",
        [AUTHZ_WAIT] = "wait",
        [AUTHZ_LOGS] = "logs",
        [AUTHZ_RELOAD] = "reload",
        [AUTHZ_SET_PRIORITY] = "set-priority",
        [AUTHZ_LOWER_PRIORITY] = "lower-priority",
        [AUTHZ_USE_PROJECT] = "use-project",
        [AUTHZ_USE_QUEUE] = "use-queue",
        [AUTHZ_VIEW_USAGE] = "view-usage",
        [AUTHZ_EXCEED_LIMITS] = "exceed-limits",
};

DEFINE_STRING_TABLE_LOOKUP(authz_action, AuthzAction);

static bool peer_in_group(const AuthzPeer *peer, gid_t g) {
        if (peer->gid == g)
                return true;
        for (size_t i = 0; i < peer->n_groups; i++)
                if (peer->groups[i] == g)
                        return true;
        return false;
}

bool authz_is_admin_action(const AuthzPeer *peer, const AuthzJob *job, const AuthzPolicy *policy) {
        return peer && job && authz_peer_is_admin(peer, policy) && peer->uid != job->owner_uid;
}

bool authz_peer_is_admin(const AuthzPeer *peer, const AuthzPolicy *policy) {
        if (!peer)
                return false;
        if (peer->uid == 0)
                return true;
        if (!policy || !policy->have_operator_gid)
                return false;
        return peer_in_group(peer, policy->operator_gid);
}

int authz_check(const AuthzPeer *peer, AuthzAction action, const AuthzJob *job, const AuthzPolicy *policy) {
        bool admin, owner;

        if (!peer || action < 0 || action >= _AUTHZ_ACTION_MAX)
                return -EINVAL;

        admin = authz_peer_is_admin(peer, policy);

        switch (action) {
        case AUTHZ_SUBMIT:
        case AUTHZ_LIST:
                return 0;
        case AUTHZ_RELOAD:
        case AUTHZ_SET_PRIORITY:
                return admin ? 0 : -EPERM;
        case AUTHZ_EXCEED_LIMITS:
                /* Root, not admins: see authz.h. As in Slurm, whose limits do not bind root. */
                return peer->uid == 0 ? 0 : -EPERM;
        case AUTHZ_VIEW_USAGE:
                /* Not the owner only: a project's members see each other's usage in it,
                 * as sreport shows an account's users to its members. */
                if (!job)
                        return -EINVAL;
                return admin || peer->uid == job->owner_uid || job->project_member ||
                                       (job->have_project_gid && peer_in_group(peer, job->project_gid))
                               ? 0
                               : -EPERM;
        default:
                break;
        }

        /* Everything below acts on one job. */
        if (!job)
                return -EINVAL;
        if (admin)
                return 0;
        owner = peer->uid == job->owner_uid;
        if (!owner)
                return -EPERM;

        switch (action) {
        case AUTHZ_USE_PROJECT:
                return job->project_member || job->project_default ||
                                       (job->have_project_gid && peer_in_group(peer, job->project_gid))
                               ? 0
                               : -EPERM;
        case AUTHZ_USE_QUEUE:
                return job->queue_allowed ? 0 : -EPERM;
        case AUTHZ_RELEASE:
                return job->held_by_admin ? -EPERM : 0;
        case AUTHZ_SUSPEND:
                return policy && policy->users_may_suspend ? 0 : -EPERM;
        case AUTHZ_RESUME:
                return policy && policy->users_may_suspend && !job->suspended_by_admin ? 0 : -EPERM;
        case AUTHZ_SHOW_DETAILS:
        case AUTHZ_CANCEL:
        case AUTHZ_SIGNAL:
        case AUTHZ_HOLD:
        case AUTHZ_REQUEUE:
        case AUTHZ_WAIT:
        case AUTHZ_LOGS:
        case AUTHZ_LOWER_PRIORITY:
                return 0;
        default:
                return -EPERM; /* a new action nobody thought about is denied */
        }
}
