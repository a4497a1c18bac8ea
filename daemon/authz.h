/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Who may do what, decided in one place and nowhere else. Pure: the caller supplies the
 * peer's credentials (SO_PEERCRED plus its supplementary groups), the job's owner and the
 * configured policy, so every rule is testable without sockets or users.
 *
 * Rules:
 *   - "admins" are root and members (primary or supplementary) of the operator group;
 *     they may do everything, but only root exceeds the per-user bounds (below);
 *   - anyone may submit and list (List returns the public queue view);
 *   - a job may be charged to a project (unix group) only by its members, by the users its
 *     DefaultFor= names (the administrator chose it for them), or by admins;
 *   - a queue with AllowGroups=/AllowProjects= takes only the jobs they let in, and admins'
 *     (the built-in express queue has AllowGroups=corral-express: config.c);
 *   - a job's priority may be raised (negative nice) only by admins;
 *   - a job's owner may show its details, cancel, signal, hold, release, requeue, wait
 *     for it, see its logs and lower its priority;
 *   - suspend/resume: admins, and owners only where policy->users_may_suspend (a
 *     suspended job keeps its CPUs and memory, which others may be waiting for);
 *   - a suspension by an admin is resumed only by an admin;
 *   - a hold placed by an admin on someone else's job is an admin hold, released only
 *     by an admin (Slurm's admin hold): authz_hold_is_admin_hold();
 *   - raising priority and reloading the configuration: admins only;
 *   - exceeding the bounds on what one user may make corrald hold (MaxJobsPerUser=,
 *     MaxStoredBytesPerUser=, MaxArraySize=, MaxConnectionsPerUser= and the connections
 *     every user shares): root only, not the operator group. The bounds protect corrald
 *     itself, its memory and its event loop, from a runaway script; an operator's account
 *     runs scripts like anyone's, while root must be able to reach a flooded daemon;
 *   - usage (corral usage): a user's own, and that of the projects they are members of
 *     (job: the usage's user as owner, its project); admins all. The fair-share view
 *     (corral share: each project's decayed usage and grant) is public, as the queue is. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "macro.h"
#include "string-table.h"

typedef struct AuthzPeer {
        uid_t uid;
        gid_t gid;
        const gid_t *groups;    /* supplementary groups */
        size_t n_groups;
} AuthzPeer;

typedef struct AuthzJob {
        uid_t owner_uid;
        /* The job's project (account). No rule looks at it yet; it is here so project
         * coordinators can be added without changing every caller. */
        const char *project;
        bool have_project_gid;  /* AUTHZ_USE_PROJECT: the project's unix group, if it exists */
        gid_t project_gid;
        bool project_member;    /* AUTHZ_USE_PROJECT, AUTHZ_VIEW_USAGE: listed in the project file's Members= */
        bool project_default;   /* AUTHZ_USE_PROJECT: the project file's DefaultFor= names the owner */
        bool queue_allowed;     /* AUTHZ_USE_QUEUE: its AllowGroups=/AllowProjects= let this job in */
        bool held_by_admin;     /* the current hold was placed by an admin */
        bool suspended_by_admin;
} AuthzJob;

typedef struct AuthzPolicy {
        bool have_operator_gid; /* false: only root is an admin */
        gid_t operator_gid;
        bool users_may_suspend;
} AuthzPolicy;

typedef enum AuthzAction {
        AUTHZ_SUBMIT,
        AUTHZ_LIST,             /* the public queue view */
        AUTHZ_SHOW_DETAILS,     /* argv, environment, paths, usage */
        AUTHZ_CANCEL,
        AUTHZ_SIGNAL,           /* send its processes a signal (scancel --signal): as cancel */
        AUTHZ_HOLD,
        AUTHZ_RELEASE,
        AUTHZ_SUSPEND,
        AUTHZ_RESUME,
        AUTHZ_REQUEUE,
        AUTHZ_WAIT,
        AUTHZ_LOGS,
        AUTHZ_RELOAD,
        AUTHZ_SET_PRIORITY,     /* raise a job's priority (lower its nice) */
        AUTHZ_LOWER_PRIORITY,   /* lower it (raise nice): owners may, as in Slurm */
        AUTHZ_USE_PROJECT,      /* charge a job to job->project (job: the job being submitted) */
        AUTHZ_USE_QUEUE,        /* submit to a queue that restricts who may (job: the job being submitted) */
        AUTHZ_VIEW_USAGE,       /* see a user's usage in a project (job: owner = that user, its project) */
        AUTHZ_EXCEED_LIMITS,    /* not be bound by the per-user and connection limits (no job) */
        _AUTHZ_ACTION_MAX,
        _AUTHZ_ACTION_INVALID = -EINVAL,
} AuthzAction;

DECLARE_STRING_TABLE_LOOKUP(authz_action, AuthzAction);

bool authz_peer_is_admin(const AuthzPeer *peer, const AuthzPolicy *policy) _pure_;

/* 0 when allowed, -EPERM when not. -EINVAL for a job-scoped action without a job (a
 * caller bug, not a denial). job may be NULL for submit, list, reload and exceed-limits;
 * policy may be NULL (then only root is an admin). */
int authz_check(const AuthzPeer *peer, AuthzAction action, const AuthzJob *job, const AuthzPolicy *policy);

/* Whether a hold (or a suspension) this peer places on this job binds its owner: an
 * admin acting on somebody else's job. */
bool authz_is_admin_action(const AuthzPeer *peer, const AuthzJob *job, const AuthzPolicy *policy) _pure_;
