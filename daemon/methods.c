/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The methods of io.corral.Manager: validate, authorize (authz.c, the one place that
 * decides), change state through the manager, reply. Every reply is queued and goes out
 * only after the post-iteration commit. */

#include <assert.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "commit.h"
#include "constraint.h"
#include "device-info.h"
#include "gpu-jobs.h"
#include "intern.h"
#include "interactive.h"
#include "job-backend.h"
#include "job-logs.h"
#include "job-table.h"
#include "job-transition.h"
#include "job-history.h"
#include "job-why.h"
#include "json-util.h"
#include "log.h"
#include "manager.h"
#include "message.h"
#include "methods.h"
#include "sched-driver.h"
#include "server.h"
#include "strv.h"
#include "time-util.h"
#include "usage-report.h"
#include "usage.h"

static json_object *ok_reply(json_object *p) {
        return reply_new(p ?: json_object_new_object(), false);
}

static json_object *permission_denied(const char *what) {
        json_object *p = json_object_new_object();
        json_add_string(p, CORRAL_FIELD_MESSAGE, what);
        return reply_error_new(CORRAL_ERROR_PERMISSION_DENIED, p);
}

/* Which bound, its value, and what it is in words: a user over a limit learns which one
 * and an admin can grep the name in corrald(8). */
static json_object *quota_exceeded(const char *setting, uint64_t limit, const char *what) {
        json_object *p = json_object_new_object();
        char msg[256];

        snprintf(msg, sizeof msg, "%s (%s=%" PRIu64 ")", what, setting, limit);
        json_add_u64(p, CORRAL_FIELD_LIMIT, limit);
        json_add_string(p, CORRAL_FIELD_MESSAGE, msg);
        return reply_error_new(CORRAL_ERROR_QUOTA_EXCEEDED, p);
}

/* What one user keeps in corrald: jobs not yet final, and the bytes of their stored
 * requests (an array's once). Who is not limited: authz.c (AUTHZ_EXCEED_LIMITS). Counted
 * by uid over the user index's lists that can hold that uid's jobs, not over every job:
 * with 100,000 queued, a walk of them all per submission was most of a submit's time. */
static json_object *check_user_limits(Manager *m, uid_t uid, uint64_t new_jobs, uint64_t new_bytes) {
        const Config *c = m->config;
        const AuthzPeer owner = { .uid = uid };
        uint64_t jobs = 0, bytes = 0;

        if (authz_check(&owner, AUTHZ_EXCEED_LIMITS, NULL, &m->authz) == 0 ||
            (!c->max_jobs_per_user && !c->max_stored_bytes_per_user))
                return NULL;
        for (size_t u = 0; u < m->n_user_jobs; u++) {
                const UserJobs *uj = &m->user_jobs[u];
                uint64_t last_array = 0;

                if (uj->uid != uid && !uj->mixed_uids)
                        continue;
                for (size_t i = 0; i < uj->n; i++) {
                        const Job *j = uj->jobs[i];
                        if (j->uid != uid || job_state_is_final(j->state))
                                continue;
                        jobs++;
                        if (!j->array_job_id)
                                bytes += j->request_bytes;
                        else if (j->array_job_id != last_array) { /* tasks have consecutive ids */
                                bytes += j->request_bytes;
                                last_array = j->array_job_id;
                        }
                }
        }
        if (c->max_jobs_per_user && jobs + new_jobs > c->max_jobs_per_user)
                return quota_exceeded("MaxJobsPerUser", c->max_jobs_per_user,
                                      "you would have more unfinished jobs than allowed");
        if (c->max_stored_bytes_per_user && bytes + new_bytes > c->max_stored_bytes_per_user)
                return quota_exceeded("MaxStoredBytesPerUser", c->max_stored_bytes_per_user,
                                      "your unfinished jobs' scripts, arguments and environments would take "
                                      "more bytes than allowed");
        return NULL;
}

static AuthzPeer authz_peer(const Peer *p) {
        return (AuthzPeer) { .uid = p->uid, .gid = p->gid, .groups = p->groups, .n_groups = p->n_groups };
}

static AuthzJob authz_job(const Job *j) {
        return (AuthzJob) { .owner_uid = j->uid, .project = job_project(j), .held_by_admin = j->held_by_admin,
                            .suspended_by_admin = j->suspended_by_admin };
}

/* Who the peer is to the job, for what a hold or a suspension leaves on it. */
static JobActor job_actor(Manager *m, const Peer *peer, const Job *j) {
        AuthzPeer ap = authz_peer(peer);
        AuthzJob aj = authz_job(j);

        return authz_is_admin_action(&ap, &aj, &m->authz) ? JOB_BY_ADMIN : JOB_BY_PERSON;
}

/* Reads {"job_id": N} and finds the job, or produces the error reply. */
static Job *get_job(Manager *m, json_object *params, json_object **ret_error) {
        json_object *v;
        uint64_t id;

        if (!json_object_object_get_ex(params, CORRAL_FIELD_JOB_ID, &v) ||
            json_get_u64(v, 1, CORRAL_JOB_ID_MAX, &id) < 0) {
                *ret_error = reply_invalid_parameter(CORRAL_FIELD_JOB_ID, "a job id (a positive number) is required");
                return NULL;
        }
        Job *j = manager_find_job(m, id);
        if (!j)
                *ret_error = reply_no_such_job(id);
        return j;
}

static json_object *check(Manager *m, const Peer *peer, AuthzAction a, const Job *j, const char *what) {
        AuthzPeer ap = authz_peer(peer);
        AuthzJob aj = j ? authz_job(j) : (AuthzJob) {};
        if (authz_check(&ap, a, j ? &aj : NULL, &m->authz) < 0)
                return permission_denied(what);
        return NULL;
}


/* With project files: the project named (a member's, or any for an admin), or the
 * user's default: DefaultFor=, else their only project, else the one named as their
 * primary group. Every refusal says what to do. */
static json_object *resolve_project(Manager *m, const Peer *peer, const struct passwd *pw, const SubmitRequest *req,
                                    const QueueConfig *q, char **ret) {
        _cleanup_strv_free_ char **groups = peer_group_names(peer);
        const Config *c = m->config;
        const ProjectConfig *chosen = NULL;
        char mine[512] = "", msg[1024];
        size_t n_mine = 0;

        if (!groups)
                return NULL;
        if (req->project) {
                AuthzPeer ap = authz_peer(peer);
                AuthzJob aj = { .owner_uid = peer->uid, .project = req->project };

                chosen = config_find_project(c, req->project);
                if (!chosen)
                        return reply_invalid_parameter("project", "no such project (corral info lists them)");
                aj.project_member = project_has_member(chosen, pw->pw_name, (const char *const *) groups);
                aj.project_default = strv_contains(chosen->default_for, pw->pw_name);
                if (authz_check(&ap, AUTHZ_USE_PROJECT, &aj, &m->authz) < 0)
                        return permission_denied("you are not a member of that project (its Members=)");
        } else {
                for (size_t i = 0; i < c->n_projects && !chosen; i++)
                        if (strv_contains(c->projects[i].default_for, pw->pw_name))
                                chosen = &c->projects[i];
                for (size_t i = 0; i < c->n_projects && !chosen; i++) {
                        const ProjectConfig *p = &c->projects[i];
                        if (!project_has_member(p, pw->pw_name, (const char *const *) groups))
                                continue;
                        n_mine++;
                        if (strlen(mine) + strlen(p->name) + 3 < sizeof mine)
                                snprintf(mine + strlen(mine), sizeof mine - strlen(mine), "%s%s",
                                         n_mine > 1 ? ", " : "", p->name);
                }
                if (!chosen && n_mine == 1)
                        for (size_t i = 0; i < c->n_projects && !chosen; i++)
                                if (project_has_member(&c->projects[i], pw->pw_name, (const char *const *) groups))
                                        chosen = &c->projects[i];
                if (!chosen && n_mine > 1) {
                        const ProjectConfig *p = groups[0] ? config_find_project(c, groups[0]) : NULL;
                        if (p && project_has_member(p, pw->pw_name, (const char *const *) groups))
                                chosen = p;
                }
                if (!chosen && n_mine == 0) {
                        json_object *e = json_object_new_object();
                        snprintf(msg, sizeof msg,
                                 "%s belongs to no project: an administrator adds them to Members= in "
                                 "/etc/corral/projects.d/PROJECT.conf and runs systemctl reload corrald",
                                 pw->pw_name);
                        json_add_string(e, CORRAL_FIELD_MESSAGE, msg);
                        return reply_error_new(CORRAL_ERROR_NO_PROJECT, e);
                }
                if (!chosen) {
                        snprintf(msg, sizeof msg,
                                 "you belong to several projects (%s): name one with --project "
                                 "(#SBATCH --account, #PBS -A), or ask for DefaultFor= in one of them", mine);
                        return reply_invalid_parameter("project", msg);
                }
                /* The default too is a use of the project that authz.c decides: DefaultFor=
                 * lets its users in without Members=. */
                AuthzPeer ap = authz_peer(peer);
                AuthzJob aj = { .owner_uid = peer->uid, .project = chosen->name,
                                .project_member = project_has_member(chosen, pw->pw_name,
                                                                     (const char *const *) groups),
                                .project_default = strv_contains(chosen->default_for, pw->pw_name) };
                if (authz_check(&ap, AUTHZ_USE_PROJECT, &aj, &m->authz) < 0)
                        return permission_denied("you are not a member of your default project (its Members=)");
        }
        if (!project_allows_queue(chosen, q->name)) {
                snprintf(msg, sizeof msg, "project %s may not use queue %s (its Queues=)", chosen->name, q->name);
                return permission_denied(msg);
        }
        *ret = strdup(chosen->name);
        return *ret ? NULL : reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
}

/* A queue's AllowProjects= and AllowGroups= (the caller's groups), for a job of owner's in
 * project; what says how the refusal begins ("does not take this job"). */
/* The queue's AllowProjects=/AllowGroups= (the built-in express queue has one), through
 * authz.c. context: NULL at submission; otherwise what the refusal is about, put before
 * the queue's own words (config.c's queue_config_refusal()). */
static json_object *check_queue_access(Manager *m, const Peer *peer, const QueueConfig *q,
                                       const char *project, uid_t owner, const char *context) {
        _cleanup_strv_free_ char **groups = NULL;
        _cleanup_free_ char *refusal = NULL, *msg = NULL;
        AuthzJob aj = { .owner_uid = owner, .project = project };
        AuthzPeer ap = authz_peer(peer);

        if (!q->allow_projects && !q->allow_groups)
                return NULL;
        if (q->allow_groups) {
                groups = peer_group_names(peer);
                if (!groups)
                        return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
        }
        aj.queue_allowed = queue_config_allows(q, project, groups);
        if (authz_check(&ap, AUTHZ_USE_QUEUE, &aj, &m->authz) == 0)
                return NULL;
        if (queue_config_refusal(q, project, &refusal) < 0 ||
            (context && asprintf(&msg, "%s: %s", context, refusal) < 0))
                return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
        return permission_denied(msg ?: refusal);
}

/* Release and Requeue put a job back among those that may start: what Submit checked of
 * its project and queue is checked again as the configuration and groups are now (a user
 * removed from the project, a queue's access changed since), each refusal naming what
 * changed. The grant is the pass's to enforce (sched-driver.c): a job whose project has
 * spent it waits blocked, or goes to the bonus queue, as a new one would. */
static json_object *check_access_again(Manager *m, const Peer *peer, const Job *j) {
        const QueueConfig *q = config_find_queue(m->config, job_queue(j));
        AuthzJob aj = { .owner_uid = j->uid, .project = job_project(j) };
        AuthzPeer ap = authz_peer(peer);
        char msg[512];

        if (!q) {
                snprintf(msg, sizeof msg, "queue %s no longer exists (corral info lists the queues)",
                         job_queue(j));
                return permission_denied(msg);
        }
        if (m->config->n_projects > 0) {
                const ProjectConfig *pc = job_project(j) ? config_find_project(m->config, job_project(j)) : NULL;
                _cleanup_strv_free_ char **groups = peer_group_names(peer);

                if (!groups)
                        return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
                if (!pc) {
                        snprintf(msg, sizeof msg,
                                 "project %s no longer exists (corral info lists the projects)",
                                 strna(job_project(j)));
                        return permission_denied(msg);
                }
                aj.project_member = project_has_member(pc, job_user(j), (const char *const *) groups);
                if (authz_check(&ap, AUTHZ_USE_PROJECT, &aj, &m->authz) < 0) {
                        snprintf(msg, sizeof msg, "%s is no longer a member of project %s (its Members=)",
                                 strna(job_user(j)), pc->name);
                        return permission_denied(msg);
                }
                if (!project_allows_queue(pc, q->name)) {
                        snprintf(msg, sizeof msg, "project %s may no longer use queue %s (its Queues=)",
                                 pc->name, q->name);
                        return permission_denied(msg);
                }
        } else if (j->project) {
                /* Without project files the project is a unix group, checked at submission
                 * when it was named: still a member? (The "default" of a user without a
                 * group entry names no group.) */
                const struct group *gr = nss_cache_getgrnam(m->nss, job_project(j), manager_now(m));
                if (gr) {
                        aj.have_project_gid = true, aj.project_gid = gr->gr_gid;
                        if (authz_check(&ap, AUTHZ_USE_PROJECT, &aj, &m->authz) < 0) {
                                snprintf(msg, sizeof msg, "%s is no longer in group %s, the job's project",
                                         strna(job_user(j)), job_project(j));
                                return permission_denied(msg);
                        }
                }
        }
        return check_queue_access(m, peer, q, job_project(j), j->uid, "the job may no longer go back to its queue");
}

/* The longest expansion a pattern can have, checked at submission so that a path too long
 * for the kernel is the submitter's error now, not a failed launch later. */
static bool output_paths_fit(const SubmitRequest *req, const char *user) {
        _cleanup_(job_freep) Job *probe = job_new();
        const char *paths[] = { req->stdin_path, req->stdout_path, req->stderr_path };
        SubmitRequest named = SUBMIT_REQUEST_INIT; /* the name only, borrowed: not freed here */

        named.name = req->name;
        if (!probe || job_set_request(probe, &named) < 0)
                return false;
        probe->id = probe->array_job_id = CORRAL_JOB_ID_MAX;
        probe->array_task_id = UINT32_MAX;
        probe->user = intern_id(user);
        if (!probe->user)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                _cleanup_free_ char *x = NULL;
                if (paths[i] && job_expand_path(probe, paths[i], &x) < 0)
                        return false;
        }
        return true;
}

static Job *submit_new_job(Manager *m, uint64_t id, const Peer *peer, const struct passwd *pw, const char *project,
                           const QueueConfig *q, const SubmitRequest *req, uint64_t now) {
        Job *j = job_new();

        if (!j)
                return NULL;
        j->id = id;
        j->uid = peer->uid;
        j->gid = pw->pw_gid;
        j->user = intern_id(pw->pw_name);
        j->project = intern_id(project);
        j->queue = intern_id(q->name);
        /* An interactive job's terminal is gone once it has run: it cannot run again. */
        j->rerunnable = !req->interactive && (req->rerunnable < 0 ? q->rerunnable : req->rerunnable);
        j->submit_time = j->eligible_time = now;
        if (!j->user || !j->project || !j->queue)
                return job_free(j);
        return j;
}

/* What Submit decided before making anything of a request. */
typedef struct SubmitChecked {
        SubmitRequest req;
        const struct passwd *pw;
        char *project, *grant_notice;
        const QueueConfig *q;
        uint32_t n_tasks;
} SubmitChecked;

#define SUBMIT_CHECKED_INIT { .req = SUBMIT_REQUEST_INIT, .n_tasks = 1 }

static void submit_checked_done(SubmitChecked *c) {
        submit_request_done(&c->req);
        c->project = mfree(c->project);
        c->grant_notice = mfree(c->grant_notice);
}

/* The field, and for text a terminal could take for a command, what and where. */
static json_object *reply_submit_refused(const SubmitRequestError *e, int r) {
        char msg[160];

        if (e->problem == TEXT_OK)
                return reply_invalid_parameter(e->field ?: "parameters", strerror(-r));
        snprintf(msg, sizeof msg, "%s at byte %zu (names and paths are UTF-8 without control characters)",
                 text_problem_to_string(e->problem), e->offset);
        return reply_invalid_parameter(e->field, msg);
}

/* What the machine has, for a refusal: "gpu0 NVIDIA A100 (a100, nvlink); gpu1 ...". */
static void describe_devices(const DeviceSet *ds, char *buf, size_t size) {
        size_t k = 0;

        buf[0] = '\0';
        for (size_t i = 0, n = 0; ds && i < ds->n_devices && k < size; i++) {
                const Device *d = &ds->devices[i];
                if (!device_is_schedulable(d))
                        continue;
                int w = snprintf(buf + k, size - k, "%s%s %s", n++ > 0 ? "; " : "", d->name, d->model ?: "(model unknown)");
                k += w > 0 ? (size_t) w : 0;
                STRV_FOREACH(f, d->features)
                        if (k < size) {
                                w = snprintf(buf + k, size - k, "%s%s", f == d->features ? " (" : ", ", *f);
                                k += w > 0 ? (size_t) w : 0;
                        }
                if (d->features && d->features[0] && k < size) {
                        w = snprintf(buf + k, size - k, ")");
                        k += w > 0 ? (size_t) w : 0;
                }
        }
        if (k >= size && size > 4)
                memcpy(buf + size - 4, "...", 4);
}

/* Shards (--gres=shard:K) this machine can never give: K of one GPU (of the type and
 * constraint asked for) with Shards= at least K, never with whole GPUs or --exclusive. */
static json_object *check_shards(Manager *m, const SubmitRequest *req) {
        const DeviceSet *ds = m->devices;
        unsigned most = 0;
        size_t matching = 0;
        _cleanup_free_ char *msg = NULL;
        char what[CORRAL_GPU_TYPE_LENGTH_MAX + CORRAL_CONSTRAINT_LENGTH_MAX + 64];
        int r;

        if (req->gpus > 0)
                return reply_invalid_parameter("shards", "--gres=shard and whole GPUs (--gpus, --gres=gpu) together: a "
                                                         "job takes whole GPUs or shards of one GPU");
        if (req->exclusive)
                return reply_invalid_parameter("shards", "--gres=shard with --exclusive: an exclusive job holds "
                                                         "whole GPUs");
        for (size_t g = 0; g < (ds ? ds->n_devices : 0) && g < m->machine.n_gpus; g++)
                if (device_is_schedulable(&ds->devices[g]) &&
                    device_matches(&ds->devices[g], req->gpu_type, req->constraint)) {
                        matching++;
                        most = MAX(most, (unsigned) m->machine.gpus[g].shards);
                }
        if (req->shards <= most)
                return NULL;
        snprintf(what, sizeof what, "%s%s%s%s", req->gpu_type ? " of type " : "", strempty(req->gpu_type),
                 req->constraint ? " with --constraint=" : "", strempty(req->constraint));
        if (matching == 0)
                r = asprintf(&msg, "--gres=shard:%u: this machine has no GPU%s", req->shards, what);
        else if (most == 0)
                r = asprintf(&msg, "--gres=shard:%u: no GPU%s here is shared (Shards= is not set)", req->shards,
                             what);
        else
                r = asprintf(&msg, "--gres=shard:%u: a GPU%s here has at most %u shard%s", req->shards, what, most,
                             most == 1 ? "" : "s");
        if (r < 0)
                return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
        return reply_invalid_parameter("shards", msg);
}

/* A GPU request this machine can never satisfy, whatever runs, refused with the numbers;
 * a constraint alone (-C gpu, no GPU asked for) must name features the machine has, as
 * Slurm refuses a constraint no node satisfies. m->devices NULL: no devices. */
static json_object *check_gpus(Manager *m, const SubmitRequest *req) {
        const DeviceSet *ds = m->devices;
        size_t n = 0, matching = 0, unread = 0; /* schedulable GPUs: a gone one is no GPU of the machine's */
        char have[512], what[CORRAL_GPU_TYPE_LENGTH_MAX + CORRAL_CONSTRAINT_LENGTH_MAX + 64];
        _cleanup_free_ char *msg = NULL;
        int r;

        if (req->gpus == 0 && !req->gpu_type && !req->constraint)
                return NULL;
        for (size_t i = 0; i < (ds ? ds->n_devices : 0); i++)
                if (device_is_schedulable(&ds->devices[i])) {
                        n++;
                        bool match = device_matches(&ds->devices[i], req->gpu_type, req->constraint);

                        matching += match;
                        /* A MIG device whose profile NVML has not read yet (just after a
                         * start or reload) may be of the type asked for: not refused. */
                        unread += !match && ds->devices[i].mig && !ds->devices[i].mig_profile;
                }
        if (req->gpus == 0 ? matching > 0 : req->gpus <= matching + unread)
                return NULL;

        describe_devices(ds, have, sizeof have);
        if (req->gpus == 0)
                r = asprintf(&msg, "--constraint=%s: no device on this machine has these features (%s%s)",
                             req->constraint, n == 0 ? "it has none" : "it has: ", have);
        else if (!req->gpu_type && !req->constraint)
                r = n == 0 ? asprintf(&msg, "--gpus=%u: this machine has no GPUs", req->gpus)
                           : asprintf(&msg, "--gpus=%u: this machine has %zu GPU%s", req->gpus, n, n == 1 ? "" : "s");
        else {
                snprintf(what, sizeof what, "%s%s%s%s", req->gpu_type ? " of type " : "", strempty(req->gpu_type),
                         req->constraint ? " with --constraint=" : "", strempty(req->constraint));
                r = asprintf(&msg, "--gpus=%u%s: this machine has %zu such GPU%s (%s%s)", req->gpus, what, matching,
                             matching == 1 ? "" : "s", n == 0 ? "it has no GPUs at all" : "it has: ", have);
        }
        if (r < 0)
                return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
        return reply_invalid_parameter(req->gpus == 0 ? "constraint" : "gpus", msg);
}

/* A backend's refusal (r < 0): the reply, naming the request's field and why where it
 * said (r == -EINVAL). */
static json_object *backend_refusal(int r, const char *field, const char *refusal) {
        if (r == -EINVAL && field && refusal)
                return reply_invalid_parameter(field, refusal);
        return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
}

/* A queue's rules for interactive jobs (AllowInteractive=, MaxInteractiveWalltime=): the
 * refusal names the queue and the key. A job that does not say how long it runs gets the
 * cap as its walltime. */
static json_object *check_interactive(const QueueConfig *q, SubmitRequest *req) {
        char msg[256];

        if (!q->allow_interactive) {
                snprintf(msg, sizeof msg, "queue %s takes no interactive jobs (its AllowInteractive=no)", q->name);
                return reply_invalid_parameter("interactive", msg);
        }
        if (req->array.set)
                return reply_invalid_parameter("array", "an interactive job cannot be an array");
        if (!q->max_interactive_walltime)
                return NULL;
        if (req->walltime_sec == 0 || req->walltime_sec == CORRAL_WALLTIME_INFINITY)
                req->walltime_sec = q->max_interactive_walltime;
        else if (req->walltime_sec > q->max_interactive_walltime) {
                snprintf(msg, sizeof msg,
                         "longer than queue %s allows an interactive job (its MaxInteractiveWalltime=%" PRIu64 "s)",
                         q->name, q->max_interactive_walltime);
                return reply_invalid_parameter("walltime_sec", msg);
        }
        return NULL;
}

/* Everything Submit checks before it makes a job (parse, validate, authorize, bound),
 * shared with TestSubmit so that --test-only answers what Submit would. NULL: the job
 * would be accepted. Reads only. */
static json_object *submit_check(Manager *m, const Peer *peer, json_object *params, SubmitChecked *c) {
        SubmitRequest *req = &c->req;
        SubmitRequestError bad = {};
        _cleanup_free_ char *refusal = NULL;
        const JobBackendOps *b;
        const char *field = NULL;
        const struct group *gr;
        json_object *err;
        uint32_t max_tasks;
        size_t bytes = 0;
        bool unlimited;
        int r;

        if ((err = check(m, peer, AUTHZ_SUBMIT, NULL, "you may not submit jobs")))
                return err;
        r = submit_request_decode(params, 0, req, &bad);
        if (r < 0)
                return reply_submit_refused(&bad, r);

        c->pw = nss_cache_getpwuid(m->nss, peer->uid, manager_now(m));
        if (!c->pw)
                return reply_invalid_parameter("user", "your user id has no passwd entry on the scheduler's machine");
        if (!req->workdir || req->workdir[0] != '/')
                return reply_invalid_parameter("workdir", "the working directory must be an absolute path");
        c->q = config_find_queue(m->config, req->queue ?: m->config->default_queue);
        if (!c->q)
                return reply_invalid_parameter("queue", "no such queue (corral info lists them)");
        if (c->q->max_walltime && req->walltime_sec != 0 && req->walltime_sec > c->q->max_walltime)
                return reply_invalid_parameter("walltime_sec", "longer than the queue's maximum walltime");
        b = manager_queue_backend(m, c->q);
        if (b->check_request && (r = b->check_request(m, req, c->q, &field, &refusal)) < 0)
                return backend_refusal(r, field, refusal);
        if (req->interactive && (err = check_interactive(c->q, req)))
                return err;
        if (c->q->max_cpus_per_job && (req->cpus ?: 1) > c->q->max_cpus_per_job)
                return reply_invalid_parameter("cpus", "more CPUs than the queue allows a job (its MaxCPUsPerJob=)");
        if (req->shards > 0 ? (err = check_shards(m, req)) != NULL : (err = check_gpus(m, req)) != NULL)
                return err;

        for (size_t i = 0; i < req->n_dependencies; i++)
                if (!manager_find_job(m, req->dependencies[i].job_id))
                        return reply_invalid_parameter("dependencies", "a job it depends on does not exist");
        if (!output_paths_fit(req, c->pw->pw_name))
                return reply_invalid_parameter("stdout_path", "an output path with its patterns expanded "
                                                              "would be longer than PATH_MAX");
        if (req->nice < 0 && (err = check(m, peer, AUTHZ_SET_PRIORITY, NULL,
                                          "only administrators may raise a job's priority (a negative nice)")))
                return err;

        if (m->config->n_projects > 0) {
                err = resolve_project(m, peer, c->pw, req, c->q, &c->project);
                if (err)
                        return err;
        } else if (req->project) {
                /* Without project files every unix group is a project, and the project
                 * defaults to the user's primary group, as an account defaults in Slurm;
                 * naming another one requires membership (or admin rights). */
                AuthzJob aj = { .owner_uid = peer->uid, .project = req->project };
                AuthzPeer ap = authz_peer(peer);
                gr = nss_cache_getgrnam(m->nss, req->project, manager_now(m));
                if (gr)
                        aj.have_project_gid = true, aj.project_gid = gr->gr_gid;
                if (authz_check(&ap, AUTHZ_USE_PROJECT, &aj, &m->authz) < 0)
                        return permission_denied("you are not a member of that project (group)");
                c->project = strdup(req->project);
        } else {
                gr = nss_cache_getgrgid(m->nss, c->pw->pw_gid, manager_now(m));
                c->project = strdup(gr ? gr->gr_name : "default");
        }
        if (!c->project)
                return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
        /* A project that has spent its grant: to the bonus queue, or refused (usage.c). */
        if ((err = accounting_grant_check(m->acct, c->project, req, &c->q, &c->grant_notice)))
                return err;
        if ((err = check_queue_access(m, peer, c->q, c->project, peer->uid, NULL)))
                return err;
        /* The grant's queue may be another, of another backend. */
        b = manager_queue_backend(m, c->q);
        if (b->check_submit && (r = b->check_submit(m, req, c->q, c->pw->pw_name, c->project, &field, &refusal)) < 0)
                return backend_refusal(r, field, refusal);

        max_tasks = m->config->max_array_size ?: CORRAL_ARRAY_TASKS_MAX;
        {
                AuthzPeer ap = authz_peer(peer);
                unlimited = authz_check(&ap, AUTHZ_EXCEED_LIMITS, NULL, &m->authz) == 0;
        }
        if (req->array.set) {
                c->n_tasks = array_spec_count(&req->array);
                if (!unlimited && c->n_tasks > max_tasks)
                        return quota_exceeded("MaxArraySize", max_tasks, "the array has more tasks than allowed");
        }
        if (m->config->max_stored_bytes_per_user && !unlimited) {
                /* The size as stored: one serialization more, only when it is limited. */
                json_object *o = NULL;
                if (submit_request_to_json(req, &o) < 0)
                        return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
                bytes = strlen(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
                json_object_put(o);
        }
        return check_user_limits(m, peer->uid, c->n_tasks, bytes);
}

static json_object *submit(Manager *m, const Peer *peer, json_object *params, bool run) {
        _cleanup_(submit_checked_done) SubmitChecked c = SUBMIT_CHECKED_INIT;
        SubmitRequest *req = &c.req;
        json_object *err, *p;
        uint64_t now = (uint64_t) time(NULL), first_id = m->next_id;
        size_t n_jobs_before = m->n_jobs;
        bool req_hold;
        ArraySpec array;

        if ((err = submit_check(m, peer, params, &c)))
                return err;
        if (req->interactive != run)
                return reply_invalid_parameter("interactive", run ? "Run is for interactive jobs: set \"interactive\""
                                                                  : "an interactive job comes with its terminal: "
                                                                    "submit it with Run (corral run)");

        /* All tasks or none: a failure half way (out of memory, a full disk) rolls the
         * store back to here and forgets the jobs already made. */
        if (store_savepoint(m->store) < 0) {
                log_error("Cannot record a submission: %s", store_error(m->store));
                return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
        }
        req_hold = req->hold;
        array = req->array;
        for (uint32_t t = 0; t < c.n_tasks; t++) {
                Job *j = submit_new_job(m, m->next_id++, peer, c.pw, c.project, c.q, req, now);
                Job *first = t > 0 ? manager_find_job(m, first_id) : NULL;

                if (!j)
                        goto fail;
                if (array.set) {
                        j->array_job_id = first_id;
                        j->array_task_id = array_spec_index(&array, t);
                }
                if (t > 0) {
                        /* The rest refer to the first's stored request. */
                        assert(j->array_job_id == first_id); /* only an array has tasks */
                        j->request_of_array = true;
                        j->request_bytes = first->request_bytes;
                }
                /* Memory keeps part of the request; the store, which the transition
                 * writes, all of it. */
                if (job_set_submitted(j, req) < 0 || job_set_request(j, req) < 0 ||
                    manager_job_transition(m, j, JOB_EVENT_SUBMIT, req_hold ? JOB_HELD : JOB_QUEUED,
                                           req_hold ? "JobHeldUser" : NULL) < 0) {
                        job_free(j);
                        goto fail;
                }
                (void) job_set_submitted(j, NULL);
        }
        /* No id is written apart: the rows are the record of the ids handed out
         * (store_next_job_id()). A meta row per submission was a fifth of its commit's
         * pages. */
        if (store_release(m->store) < 0)
                goto fail;
        log_debug("Job %" PRIu64 " submitted by uid %u (%u tasks).", first_id, (unsigned) peer->uid, c.n_tasks);
        p = json_object_new_object();
        json_add_u64(p, "job_id", first_id);
        json_add_string(p, "notice", c.grant_notice);
        if (c.n_tasks > 1) {
                json_object *ids = json_object_new_array_ext((int) c.n_tasks);
                for (uint32_t t = 0; ids && t < c.n_tasks; t++)
                        json_object_array_add(ids, json_object_new_uint64(first_id + t));
                json_add(p, "job_ids", ids);
        }
        return ok_reply(p);

fail:
        (void) store_rollback(m->store);
        manager_truncate_jobs(m, n_jobs_before);
        m->next_id = first_id;
        return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
}

/* sbatch --test-only: Submit's checks, then when the job would start if it came now,
 * from a what-if pass over the queue with it added (its first task, for an array).
 * Nothing is queued or stored. */
static json_object *method_test_submit(Manager *m, Call *call, const Peer *peer, json_object *params) {
        _cleanup_(submit_checked_done) SubmitChecked c = SUBMIT_CHECKED_INIT;
        _cleanup_(job_freep) Job *probe = NULL;
        const char *reason = NULL;
        uint64_t est = SCHED_TIME_INFINITY;
        json_object *err, *p;
        int r;

        if ((err = submit_check(m, peer, params, &c)))
                return err;
        p = json_object_new_object();
        if (!p)
                return NULL;
        json_add_bool(p, "accepted", true);
        json_add_string(p, "queue", c.q->name);
        json_add_string(p, "project", c.project);
        json_add_u64(p, "tasks", c.n_tasks);
        json_add_string(p, "notice", c.grant_notice);
        if (c.req.hold) {
                json_add_string(p, "reason", "JobHeldUser");
                return ok_reply(p);
        }
        probe = submit_new_job(m, m->next_id, peer, c.pw, c.project, c.q, &c.req, (uint64_t) time(NULL));
        if (!probe) {
                json_object_put(p);
                return NULL;
        }
        /* The probe is never in the table nor stored, so it takes no transition: it is
         * born queued (job_new()), which is what a what-if pass needs. */
        assert(probe->state == JOB_QUEUED);
        if (job_set_request(probe, &c.req) < 0) {
                json_object_put(p);
                return NULL;
        }
        if (c.req.array.set) {
                probe->array_job_id = probe->id;
                probe->array_task_id = array_spec_index(&c.req.array, 0);
        }
        r = manager_estimate_start(m, probe, &est, &reason);
        if (r == -EBUSY)
                json_add_string(p, "estimate_unavailable", "the scheduler is busy: try again in a moment");
        else if (r < 0) {
                json_object_put(p);
                return NULL;
        } else {
                json_add_string(p, "reason", reason);
                if (est != SCHED_TIME_INFINITY && est <= CORRAL_TIME_MAX)
                        json_add_u64(p, "est_start", est);
        }
        return ok_reply(p);
}

static bool state_matches(const Job *j, char *const *states) {
        if (!states)
                return !job_state_is_final(j->state);
        STRV_FOREACH(s, states)
                if (strcasecmp(*s, job_state_to_string(j->state)) == 0 ||
                    strcasecmp(*s, job_state_to_short_string(j->state)) == 0 || strcasecmp(*s, "all") == 0)
                        return true;
        return false;
}

/* The reply's budget: below CORRAL_MESSAGE_SIZE_MAX with room for the envelope. */
#define LIST_PAGE_BYTES (768U << 10)
/* And its time: a page of a 100,000-job queue built in one go held the loop for most of a
 * second in the emulated test guest, every other user waiting. A page ends once it took
 * this long (checked every LIST_CLOCK_EVERY jobs looked at, matching or not), and the
 * client asks for the next one; other connections are served in between. */
#define LIST_PAGE_USEC (5 * UINT64_C(1000))
#define LIST_CLOCK_EVERY 64U

static size_t first_job_after(Job *const *jobs, size_t n, uint64_t after) {
        return after == UINT64_MAX ? n : job_array_index(jobs, n, after + 1);
}

/* List's "history": jobs read back from the store, beyond the finished ones the daemon
 * keeps in memory for a day (sacct). The job in memory stands in for its row where there
 * is one: it may be newer than the open transaction's row. */
#define LIST_HISTORY_SCAN 4096U

typedef struct History {
        Manager *m;
        Job *jobs[LIST_HISTORY_SCAN];
        bool owned[LIST_HISTORY_SCAN];
        size_t n;
        uint64_t last; /* the last id read */
} History;

static int history_take(Job *j, void *userdata) {
        History *h = userdata;
        Job *live = manager_find_job(h->m, j->id);

        assert(h->n < LIST_HISTORY_SCAN);
        h->last = j->id;
        h->owned[h->n] = !live;
        h->jobs[h->n++] = live ?: j;
        if (live)
                job_free(j);
        return 0;
}

static History *history_free(History *h) {
        if (!h)
                return NULL;
        for (size_t i = 0; i < h->n; i++)
                if (h->owned[i])
                        job_free(h->jobs[i]);
        free(h);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(History *, history_free);

static json_object *method_list(Manager *m, Call *call, const Peer *peer, json_object *params) {
        _cleanup_strv_free_ char **states = NULL;
        _cleanup_(history_freep) History *h = NULL;
        const char *user = NULL, *queue = NULL, *project = NULL;
        json_object *v, *jobs, *p;
        uint64_t after = 0, limit = CORRAL_LIST_JOBS_MAX, last = 0, ended_since = 0;
        size_t n = 0, bytes = 0, first, end;
        uint64_t t0;
        Job **src;
        bool more = false, charges = false, history = false;
        AuthzPeer ap = authz_peer(peer);

        if (json_object_object_get_ex(params, "user", &v) && json_get_string(v, 1, CORRAL_IDENT_LENGTH_MAX, &user) < 0)
                return reply_invalid_parameter("user", "a user name");
        if (json_object_object_get_ex(params, "queue", &v) && json_get_string(v, 1, CORRAL_IDENT_LENGTH_MAX, &queue) < 0)
                return reply_invalid_parameter("queue", "a queue name");
        if (json_object_object_get_ex(params, "project", &v) &&
            json_get_string(v, 1, CORRAL_IDENT_LENGTH_MAX, &project) < 0)
                return reply_invalid_parameter("project", "a project name");
        if (json_object_object_get_ex(params, "states", &v) && json_get_strv(v, 32, 32, &states) < 0)
                return reply_invalid_parameter("states", "a list of state names");
        STRV_FOREACH(s, states)
                if (job_state_from_string(*s) < 0 && strcasecmp(*s, "all") != 0) {
                        bool ok = false;
                        for (JobState st = 0; st < _JOB_STATE_MAX; st++)
                                if (strcasecmp(*s, job_state_to_string(st)) == 0 ||
                                    strcasecmp(*s, job_state_to_short_string(st)) == 0)
                                        ok = true;
                        if (!ok)
                                return reply_invalid_parameter("states", "unknown state name");
                }

        if (json_object_object_get_ex(params, "after_id", &v) && json_get_u64(v, 0, CORRAL_JOB_ID_MAX, &after) < 0)
                return reply_invalid_parameter("after_id", "a job id: list the jobs after it");
        if (json_object_object_get_ex(params, "limit", &v) && json_get_u64(v, 1, CORRAL_LIST_JOBS_MAX, &limit) < 0)
                return reply_invalid_parameter("limit", "a number of jobs, 1 to 100000");
        if (json_object_object_get_ex(params, "charges", &v)) {
                if (!json_object_is_type(v, json_type_boolean))
                        return reply_invalid_parameter("charges", "true or false");
                charges = json_object_get_boolean(v);
        }
        if (json_object_object_get_ex(params, "history", &v) && json_get_bool(v, &history) < 0)
                return reply_invalid_parameter("history", "true or false");
        if (json_object_object_get_ex(params, "ended_since", &v) &&
            json_get_u64(v, 0, CORRAL_TIME_MAX, &ended_since) < 0)
                return reply_invalid_parameter("ended_since", "seconds since the epoch");
        if (history) {
                int r;

                h = new0(History, 1);
                if (!h)
                        return NULL;
                h->m = m;
                r = store_load_jobs_after(m->store, after, ended_since, LIST_HISTORY_SCAN, history_take, h);
                if (r == -ENOMEM)
                        return NULL;
                if (r < 0) {
                        log_error_errno(r, "Cannot read the job history: %s", store_error(m->store));
                        return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
                }
        }

        /* A page ends at the job count or at LIST_PAGE_BYTES of JSON, whichever comes first,
         * so a reply always fits in a message however long the queue; next_after_id says
         * where the next page starts. */
        jobs = json_object_new_array();
        if (!jobs)
                return NULL;
        /* Where the page's jobs come from: the history read; one user's jobs (corral queue
         * --me: a user with a few jobs among 100,000 is answered at once); or the table. */
        if (h) {
                src = h->jobs;
                end = h->n;
        } else if (user) {
                const UserJobs *u = manager_user_jobs(m, user);
                src = u ? u->jobs : NULL;
                end = u ? u->n : 0;
        } else {
                src = m->jobs;
                end = m->n_jobs;
        }
        first = h ? 0 : first_job_after(src, end, after);
        t0 = now_usec(CLOCK_MONOTONIC);
        for (size_t i = first; i < end; i++) {
                Job *j = src[i];
                json_object *o;
                size_t len;
                if (i > first && (i - first) % LIST_CLOCK_EVERY == 0 &&
                    now_usec(CLOCK_MONOTONIC) - t0 >= LIST_PAGE_USEC) {
                        /* Every job up to the one before was looked at: on from there. */
                        more = true;
                        last = src[i - 1]->id;
                        break;
                }
                if ((user && !streq(user, strempty(job_user(j)))) || (queue && !streq(queue, job_queue(j))) ||
                    (project && !streq(project, strempty(job_project(j)))) || !state_matches(j, states) ||
                    (job_state_is_final(j->state) && j->end_time < ended_since))
                        continue;
                if (n >= limit || bytes >= LIST_PAGE_BYTES) {
                        more = true;
                        break;
                }
                o = manager_job_json(m, j, false);
                if (!o) {
                        json_object_put(jobs);
                        return NULL;
                }
                /* corral queue's IDLE-GPU: gpu-jobs.c's own table, not the job's. */
                uint64_t idle = manager_gpu_jobs_idle_sec(m, j, NULL);
                if (idle > 0)
                        json_add_u64(o, "gpu_idle_sec", idle);
                int util = manager_gpu_jobs_util_now(m, j);
                if (util >= 0)
                        json_add_u64(o, "gpu_util", (uint64_t) util);
                /* corral queue --long: the charge, only where Show would give it. */
                if (charges) {
                        AuthzJob aj = authz_job(j);
                        if (authz_check(&ap, AUTHZ_SHOW_DETAILS, &aj, &m->authz) >= 0)
                                json_add(o, "charge", accounting_job_charge_json(m->acct, j));
                }
                if (!json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len))
                        len = 512;
                json_object_array_add(jobs, o);
                bytes += len + 1;
                last = j->id;
                n++;
        }
        /* The history read ended before the store did: the next page goes on from there. */
        if (h && !more && h->n == LIST_HISTORY_SCAN) {
                more = true;
                last = h->last;
        }
        p = json_object_new_object();
        json_add(p, "jobs", jobs);
        if (more)
                json_add_u64(p, "next_after_id", last);
        return ok_reply(p);
}

/* A finished job the daemon no longer keeps in memory, read back from the store. */
static int take_one(Job *j, void *userdata) {
        Job **ret = userdata;

        job_free(*ret);
        *ret = j;
        return 0;
}

static json_object *method_show(Manager *m, Call *call, const Peer *peer, json_object *params) {
        _cleanup_(job_freep) Job *stored = NULL;
        json_object *err = NULL, *p, *v, *o;
        AuthzPeer ap = authz_peer(peer);
        Job *j = get_job(m, params, &err);
        bool details;
        AuthzJob aj;
        uint64_t id;

        /* sacct's details and corral show reach the whole history, as List's "history". */
        if (!j && json_object_object_get_ex(params, CORRAL_FIELD_JOB_ID, &v) &&
            json_get_u64(v, 1, CORRAL_JOB_ID_MAX, &id) >= 0 &&
            store_load_jobs_after(m->store, id - 1, 0, 1, take_one, &stored) >= 0 && stored && stored->id == id) {
                json_object_put(err);
                j = stored;
        }
        if (!j)
                return err;
        aj = authz_job(j);
        p = json_object_new_object();
        details = authz_check(&ap, AUTHZ_SHOW_DETAILS, &aj, &m->authz) >= 0;
        o = manager_job_json(m, j, details);
        /* What it did with its GPUs, beside its charge: for those who see its details. */
        if (o && details) {
                (void) json_add(o, "gpu_usage", manager_gpu_jobs_usage_json(m, j->id));
                /* Its state changes, for those who see its reasons and requests. */
                (void) json_add(o, "history", manager_job_history_json(m, j));
        }
        if (o) {
                _cleanup_free_ char *idle = manager_gpu_jobs_idle_text(m, j);
                uint64_t sec = manager_gpu_jobs_idle_sec(m, j, NULL);

                _cleanup_free_ char *share = manager_gpu_jobs_share_text(m, j);

                if (idle)
                        (void) json_add_string(o, "gpu_idle", idle);
                if (sec > 0)
                        json_add_u64(o, "gpu_idle_sec", sec);
                if (share)
                        (void) json_add_string(o, "gpu_share_exceeded", share);
        }
        json_add(p, "job", o);
        return ok_reply(p);
}

static json_object *invalid_state(const Job *j) {
        return reply_invalid_state(job_state_to_string(j->state));
}

static json_object *method_cancel(Manager *m, Call *call, const Peer *peer, json_object *params) {
        json_object *err = NULL;
        Job *j = get_job(m, params, &err);

        if (!j)
                return err;
        if (json_object_object_get_ex(params, "signal", NULL))
                /* Refused rather than ignored: a caller asking for a signal must not get a
                 * cancellation instead. */
                return reply_invalid_parameter("signal", "a signal that does not cancel is the Signal method");
        if ((err = check(m, peer, AUTHZ_CANCEL, j, "you can only cancel your own jobs")))
                return err;
        if (job_state_is_final(j->state))
                return invalid_state(j);
        if (manager_job_backend(m, j)->cancel(m, j, job_actor(m, peer, j)) < 0)
                return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
        return ok_reply(NULL);
}

/* scancel --signal: the signal goes to a running job's processes, which decide what to do
 * with it; the job's state is not touched here (an exit it causes is the outcome's). */
static json_object *method_signal(Manager *m, Call *call, const Peer *peer, json_object *params) {
        _cleanup_free_ char *refusal = NULL;
        json_object *err = NULL, *v;
        Job *j = get_job(m, params, &err);
        const JobBackendOps *b;
        bool batch = false;
        uint64_t sig;
        int r;

        if (!j)
                return err;
        if (!json_object_object_get_ex(params, "signal", &v) || json_get_u64(v, 1, _NSIG - 1, &sig) < 0)
                return reply_invalid_parameter("signal", "a signal number, 1 to 64");
        if (json_object_object_get_ex(params, "batch", &v) && json_get_bool(v, &batch) < 0)
                return reply_invalid_parameter("batch", "a boolean");
        if ((err = check(m, peer, AUTHZ_SIGNAL, j, "you can only signal your own jobs")))
                return err;
        /* As Slurm: neither a pending job nor a suspended one (its processes are frozen). */
        if (j->state != JOB_RUNNING || j->launching || j->cancel_requested)
                return invalid_state(j);
        b = manager_job_backend(m, j);
        if (!b->signal)
                return reply_invalid_parameter("job_id", "its queue's backend does not signal jobs");
        r = b->signal(m, j, (int) sig, batch, &refusal);
        if (r == -ESRCH)
                return invalid_state(j); /* its processes are gone: it is ending */
        if (r == -EOPNOTSUPP)
                return reply_invalid_parameter("job_id", refusal ?: "its queue's backend does not signal jobs");
        if (r < 0) {
                log_warning_errno(r, "Cannot signal job %" PRIu64 ": %m", j->id);
                return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
        }
        log_info("Job %" PRIu64 ": signal %d sent to %s by uid %u.", j->id, (int) sig,
                 batch ? "its main process" : "its processes", (unsigned) peer->uid);
        return ok_reply(NULL);
}

static json_object *hold_or_release(Manager *m, const Peer *peer, json_object *params, bool hold) {
        json_object *err = NULL;
        Job *j = get_job(m, params, &err);
        const JobBackendOps *b;
        int r;

        if (!j)
                return err;
        if ((err = check(m, peer, hold ? AUTHZ_HOLD : AUTHZ_RELEASE, j,
                         hold ? "you can only hold your own jobs"
                              : "only an administrator can release a job an administrator held")))
                return err;
        if (hold) {
                JobActor by = job_actor(m, peer, j);

                r = manager_job_transition_by(m, j, JOB_EVENT_HOLD, JOB_HELD,
                                              by == JOB_BY_ADMIN ? "JobHeldAdmin" : "JobHeldUser", by);
        } else {
                if (j->state == JOB_HELD && (err = check_access_again(m, peer, j)))
                        return err;
                r = manager_job_transition_by(m, j, JOB_EVENT_RELEASE, JOB_QUEUED, NULL, job_actor(m, peer, j));
        }
        if (r == -EBUSY || r == -EALREADY)
                return invalid_state(j);
        if (r < 0)
                return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
        b = manager_job_backend(m, j);
        if (b->held)
                b->held(m, j, hold);
        return ok_reply(NULL);
}

typedef struct FreezeCall {
        Call *call; /* first: call_gone() detaches it */
        Manager *m;
        bool freeze;
        JobActor by; /* an admin suspending somebody else's job: only an admin resumes it */
} FreezeCall;

static void on_freeze_done(Executor *e, uint64_t id, int error, const char *message, void *userdata) {
        FreezeCall *fc = userdata;
        Manager *m = fc->m;
        Job *j = manager_find_job(m, id);
        json_object *reply;

        if (error < 0) {
                json_object *p = json_object_new_object();
                json_add_string(p, CORRAL_FIELD_MESSAGE, message);
                reply = reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, p);
                log_warning_errno(error, "Cannot %s job %" PRIu64 ": %s", fc->freeze ? "suspend" : "resume", id,
                                  strna(message));
        } else {
                if (j && fc->freeze && j->state == JOB_RUNNING)
                        (void) manager_job_transition_by(m, j, JOB_EVENT_SUSPEND, JOB_SUSPENDED, "Suspended",
                                                         fc->by);
                else if (j && fc->freeze && j->state == JOB_SUSPENDED && j->suspended_by_sched)
                        /* A pass suspended it while this freeze was under way: theirs stands too. */
                        (void) manager_job_mark(m, j, JOB_MARK_SUSPEND, fc->by);
                else if (j && !fc->freeze && j->state == JOB_SUSPENDED)
                        (void) manager_job_transition_by(m, j, JOB_EVENT_RESUME, JOB_RUNNING, NULL, fc->by);
                reply = ok_reply(NULL);
        }
        if (fc->call) {
                server_call_set_data(fc->call, NULL);
                (void) server_call_reply(fc->call, reply, false);
        } else
                json_object_put(reply);
        m->sched_needed = true;
        free(fc);
}

static json_object *suspend_or_resume(Manager *m, Call *call, const Peer *peer, json_object *params, bool freeze) {
        json_object *err = NULL;
        Job *j = get_job(m, params, &err);
        FreezeCall *fc;
        int r;

        if (!j)
                return err;
        if ((err = check(m, peer, freeze ? AUTHZ_SUSPEND : AUTHZ_RESUME, j,
                         "suspend and resume are for administrators (or owners, where UsersMaySuspend=yes)")))
                return err;
        if (j->state == JOB_SUSPENDED && j->suspended_by_sched && !j->launching && !j->cancel_requested) {
                json_object *p;

                /* Its CPUs are another job's now: only a pass, which knows where it can go,
                 * resumes it. A person's suspend holds it suspended beyond that (a pass
                 * does not resume it until they do), their resume lifts only their own
                 * hold. */
                if (freeze) {
                        if (j->suspended_by_person)
                                return invalid_state(j);
                        if (manager_job_mark(m, j, JOB_MARK_SUSPEND, job_actor(m, peer, j)) < 0)
                                return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
                        return ok_reply(NULL);
                }
                if (!j->suspended_by_person)
                        return permission_denied("the scheduler suspended this job to let a higher priority job "
                                                 "run; it resumes by itself as soon as CPUs allow");
                if (manager_job_mark(m, j, JOB_MARK_RESUME, job_actor(m, peer, j)) < 0)
                        return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
                p = json_object_new_object();
                json_add_string(p, CORRAL_FIELD_MESSAGE, "your hold is lifted; the scheduler still holds it "
                                "suspended (preemption) and resumes it as soon as CPUs allow");
                return ok_reply(p);
        }
        if (j->state != (freeze ? JOB_RUNNING : JOB_SUSPENDED) || j->launching || j->cancel_requested)
                return invalid_state(j);
        fc = new0(FreezeCall, 1);
        if (!fc)
                return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
        *fc = (FreezeCall) { .m = m, .call = call, .freeze = freeze, .by = job_actor(m, peer, j) };
        r = manager_job_backend(m, j)->freeze(m, j, freeze, on_freeze_done, fc);
        if (r < 0) {
                free(fc);
                if (r == -EOPNOTSUPP)
                        return reply_invalid_parameter("job_id", freeze ? "its queue's backend does not suspend jobs"
                                                                        : "its queue's backend does not resume jobs");
                return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
        }
        server_call_set_data(call, fc); /* so a disconnect detaches it */
        return NULL; /* answered when the freezer confirms */
}

static json_object *method_requeue(Manager *m, Call *call, const Peer *peer, json_object *params) {
        json_object *err = NULL, *v;
        Job *j = get_job(m, params, &err);
        _cleanup_free_ char *refusal = NULL;
        bool hold = false;
        int r;

        if (!j)
                return err;
        if (json_object_object_get_ex(params, "hold", &v) && json_get_bool(v, &hold) < 0)
                return reply_invalid_parameter("hold", "a boolean");
        if ((err = check(m, peer, AUTHZ_REQUEUE, j, "you can only requeue your own jobs")))
                return err;
        if (job_state_is_pending(j->state) || j->cancel_requested)
                return invalid_state(j);
        if ((err = check_access_again(m, peer, j)))
                return err;
        r = manager_job_backend(m, j)->requeue(m, j, hold, job_actor(m, peer, j), &refusal);
        if (r < 0)
                return backend_refusal(r, "job_id", refusal);
        if (r == 0)
                return ok_reply(NULL);
        /* Back among the unfinished jobs: it counts against its owner's limits again, as a
         * new submission would. */
        if ((err = check_user_limits(m, j->uid, 1, j->request_bytes)))
                return err;
        if (manager_job_transition_by(m, j, JOB_EVENT_REQUEUE, hold ? JOB_HELD : JOB_QUEUED, "Requeued",
                                      job_actor(m, peer, j)) < 0)
                return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
        return ok_reply(NULL);
}

/* Submit with the job's stdin, stdout and stderr passed along (interactive.c). */
static json_object *method_run(Manager *m, Call *call, const Peer *peer, json_object *params) {
        Interactive *it = NULL;
        json_object *err;

        if ((err = manager_interactive_take(m, call, peer, &it)))
                return err;
        return manager_interactive_attach(m, call, it, submit(m, peer, params, true));
}

/* An error of Wait names its job: `corral wait` has many calls in flight on one
 * connection, answered as their jobs end, and must know which one was refused. */
static json_object *wait_error(json_object *err, uint64_t id) {
        json_object *p;

        if (err && json_object_object_get_ex(err, "parameters", &p))
                (void) json_add_u64(p, CORRAL_FIELD_JOB_ID, id);
        return err;
}

static json_object *method_wait(Manager *m, Call *call, const Peer *peer, json_object *params) {
        json_object *err = NULL, *p;
        Job *j = get_job(m, params, &err);
        bool more;

        if (!j)
                return err; /* NoSuchJob names it already */
        if ((err = check(m, peer, AUTHZ_WAIT, j, "you can only wait for your own jobs")))
                return wait_error(err, j->id);
        more = server_call_more(call);
        /* Every pending Wait is answered on every change of its job: bounded per
         * connection, as connections are per user. */
        if (!job_state_is_final(j->state) && m->config->max_waits_per_connection &&
            server_call_n_deferred(call) >= m->config->max_waits_per_connection)
                return wait_error(quota_exceeded("MaxWaitsPerConnection", m->config->max_waits_per_connection,
                                                 "too many Wait calls pending on this connection"),
                                  j->id);
        if (job_state_is_final(j->state)) {
                p = json_object_new_object();
                json_add(p, "job", manager_job_json(m, j, true));
                return ok_reply(p);
        }
        server_call_set_job_id(call, j->id);
        if (more) {
                /* The current state first, then every change. */
                p = json_object_new_object();
                json_add(p, "job", manager_job_json(m, j, true));
                (void) server_call_reply(call, reply_new(p, true), true);
        }
        return NULL;
}

static json_object *method_logs(Manager *m, Call *call, const Peer *peer, json_object *params) {
        json_object *err = NULL, *p, *v, *lines;
        Job *j = get_job(m, params, &err);
        _cleanup_free_ char *default_path = NULL;
        uint64_t max_lines = 0;
        bool truncated, in_journal;
        char unit[64];

        if (!j)
                return err;
        if ((err = check(m, peer, AUTHZ_LOGS, j, "you can only read your own jobs' output")))
                return err;
        if (json_object_object_get_ex(params, "lines", &v) && json_get_u64(v, 1, 1000000, &max_lines) < 0)
                return reply_invalid_parameter("lines", "a number of lines, 1 to 1000000");
        p = json_object_new_object();
        snprintf(unit, sizeof unit, "corral-job-%" PRIu64 ".scope", j->id);
        json_add_string(p, "unit", unit);
        json_add_string(p, "workdir", job_str(j, JOB_WORKDIR));
        /* Whose rights the files were opened with: root's corral logs opens them as that. */
        json_add_u64(p, "uid", j->uid);
        json_add_u64(p, "gid", j->gid);
        /* The journal's lines for this id from before then are an earlier job's. */
        json_add_u64(p, "since", j->submit_time);
        /* Without a file of its own: its backend's default file, or the journal. */
        if (manager_job_backend(m, j)->output(m, j, &default_path, &in_journal) == -ENOMEM) {
                json_object_put(p);
                return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
        }
        /* Where the files really are: patterns expanded, relative to the working directory. */
        for (int k = 0; k < 2; k++) {
                const char *raw = k == 0 ? job_str(j, JOB_STDOUT_PATH) ?: default_path
                                         : (job_str(j, JOB_STDERR_PATH) ?: job_str(j, JOB_STDOUT_PATH) ?: default_path);
                _cleanup_free_ char *x = NULL, *abs = NULL;
                if (job_expand_path(j, raw, &x) < 0 || !x)
                        continue;
                if (x[0] != '/' && job_str(j, JOB_WORKDIR) && asprintf(&abs, "%s/%s", job_str(j, JOB_WORKDIR), x) < 0)
                        abs = NULL;
                json_add_string(p, k == 0 ? "stdout_path" : "stderr_path", abs ?: x);
        }
        if (in_journal && (!job_str(j, JOB_STDOUT_PATH) || !job_str(j, JOB_STDERR_PATH))) {
                lines = job_logs_read(j->id, j->submit_time, max_lines, &truncated);
                if (lines) {
                        json_add(p, "lines", lines);
                        json_add_bool(p, "truncated", truncated);
                }
        }
        return ok_reply(p);
}

static json_object *method_why(Manager *m, Call *call, const Peer *peer, json_object *params) {
        json_object *err = NULL, *w;
        Job *j = get_job(m, params, &err);

        if (!j)
                return err;
        if ((err = check(m, peer, AUTHZ_SHOW_DETAILS, j, "you can only ask about your own jobs")))
                return err;
        w = manager_job_why(m, j);
        return w ? ok_reply(w) : NULL;
}

static const char *const vendor_names[_DEVICE_VENDOR_MAX] = {
        [DEVICE_VENDOR_NVIDIA] = "nvidia",
        [DEVICE_VENDOR_AMD] = "amd",
        [DEVICE_VENDOR_OTHER] = "other",
};

/* The name of the GPU MIG device d is part of; NULL: not there. */
static const char *mig_parent_name(const DeviceSet *ds, const Device *d) {
        for (size_t i = 0; i < ds->n_devices; i++) {
                const Device *p = &ds->devices[i];
                if (!p->mig && d->mig_parent &&
                    ((p->uuid && streq(p->uuid, d->mig_parent)) || (p->pci_address && streq(p->pci_address, d->mig_parent))))
                        return p->name;
        }
        return NULL;
}

/* Each device with the job holding it (a running or suspended job keeps its GPUs: a
 * frozen process keeps its GPU memory). One pass over the jobs for all devices. */
static json_object *devices_to_json(Manager *m) {
        const Job *holder[SCHED_GPUS_MAX] = {};
        const DeviceSet *ds = m->devices;
        json_object *a = json_object_new_array();
        _cleanup_free_ const Job **sharing = NULL;
        size_t n_sharing = 0, n_sharing_alloc = 0;

        if (!a)
                return NULL;
        for (size_t k = 0; k < m->n_jobs; k++) {
                const Job *j = m->jobs[k];
                /* An ended job keeps its allocation in memory, not its GPUs. */
                if (!job_state_is_active(j->state))
                        continue;
                /* Shard jobs share their GPU: listed with it, none its one holder. */
                if (job_alloc(j) && job_alloc(j)->shards > 0 && job_alloc(j)->gpu_mask) {
                        if (GREEDY_REALLOC(sharing, n_sharing_alloc, n_sharing + 1))
                                sharing[n_sharing++] = j;
                        continue;
                }
                for (uint64_t mask = job_alloc(j) ? job_alloc(j)->gpu_mask : 0; mask; mask &= mask - 1)
                        holder[__builtin_ctzll(mask)] = j;
        }
        for (size_t i = 0; i < ds->n_devices && i < SCHED_GPUS_MAX; i++) {
                const Device *d = &ds->devices[i];
                DeviceInfo info = {
                        .index = (uint32_t) i,
                        .name = d->name,
                        .vendor = (char *) (d->vendor >= 0 && d->vendor < _DEVICE_VENDOR_MAX ? vendor_names[d->vendor] : NULL),
                        .model = d->model,
                        .pci_address = d->pci_address,
                        .uuid = d->uuid,
                        .offline = d->gone       ? (char *) "gone or hidden: its index stays its own, nobody is given it"
                                   : d->mig_mode ? (char *) "in MIG mode: its MIG devices are given instead"
                                                 : NULL,
                        .mig_mode = d->mig_mode,
                        .mig_of = d->mig ? (char *) mig_parent_name(ds, d) : NULL,
                        .mig_gi = d->mig ? d->mig_gi : 0,
                        .mig_ci = d->mig ? d->mig_ci : 0,
                        .mig_profile = d->mig_profile,
                        .mig_uuid = d->mig_uuid,
                        .memory = d->memory,
                        .numa_node = d->numa_node,
                        .features = d->features,
                        .job_id = holder[i] ? holder[i]->id : 0,
                        .user = holder[i] ? (char *) job_user(holder[i]) : NULL,
                        .shards = i < m->machine.n_gpus ? m->machine.gpus[i].shards : 0,
                };
                DeviceShardHolder holders[64];
                json_object *o = NULL;

                /* Its shard holders, the first 64 named (a GPU of more is rare), all counted. */
                info.shard_holders = holders;
                for (size_t k = 0; k < n_sharing; k++)
                        if (job_alloc(sharing[k])->gpu_mask & (UINT64_C(1) << i)) {
                                info.shards_used += job_alloc(sharing[k])->shards;
                                if (info.n_shard_holders < ELEMENTSOF(holders))
                                        holders[info.n_shard_holders++] = (DeviceShardHolder) {
                                                .job_id = sharing[k]->id,
                                                .user = (char *) job_user(sharing[k]),
                                                .shards = job_alloc(sharing[k])->shards,
                                        };
                        }

                /* Borrowed strings: encoded, never freed here. */
                if (device_info_to_json(&info, &o) < 0) {
                        log_debug("Device %s not reported: a field out of the protocol's range.", strna(d->name));
                        continue;
                }
                json_object_array_add(a, o);
        }
        return a;
}

typedef struct BilledList {
        json_object *users;
        uid_t only;     /* whose figure a user who is not an administrator sees */
        bool all;
} BilledList;

static void add_billed(uid_t uid, uint64_t usec, void *userdata) {
        BilledList *l = userdata;
        json_object *o;

        if (!l->all && uid != l->only)
                return;
        o = json_object_new_object();
        json_add_u64(o, "uid", uid);
        json_add_u64(o, "usec", usec);
        json_object_array_add(l->users, o);
}

/* corrald's CPU time billed to users' budgets (corrald(8), LIMITS): the total, and each
 * uid's while corrald keeps its budget; a user who is not an administrator sees only
 * their own. What a benchmark compares with corrald's own CPU time. */
static json_object *request_cpu_to_json(Manager *m, const Peer *peer) {
        AuthzPeer ap = authz_peer(peer);
        BilledList l = { .users = json_object_new_array(), .only = peer->uid,
                         .all = authz_peer_is_admin(&ap, &m->authz) };
        json_object *o = json_object_new_object();

        json_add_u64(o, "total_usec", server_billed_total_usec(m->server));
        server_foreach_billed(m->server, add_billed, &l);
        json_add(o, "users", l.users);
        return o;
}

static json_object *method_get_info(Manager *m, Call *call, const Peer *peer, json_object *params) {
        json_object *p = json_object_new_object(), *qs = json_object_new_array();

        json_add_string(p, "version", PACKAGE_VERSION);
        json_add_u64(p, "protocol_version", CORRAL_PROTOCOL_VERSION);
        json_add_string(p, "hostname", m->hostname);
        json_add_u64(p, "cpus", sched_machine_cpus(&m->machine));
        json_add_u64(p, "memory", sched_machine_memory(&m->machine));
        json_add_u64(p, "numa_nodes", m->machine.n_nodes);
        json_add_string(p, "policy", m->sched_config.policy->name);
        json_add_u64(p, "last_pass_usec", m->last_pass_usec);
        json_add_u64(p, "last_pass_jobs", m->last_pass_jobs);
        {
                /* The queue at a glance (corral info, the Cockpit page's health): a walk
                 * of memory, a fraction of a millisecond at 100,000 jobs. */
                uint64_t running = 0, waiting = 0, held = 0;

                for (size_t i = 0; i < m->n_jobs; i++)
                        switch (m->jobs[i]->state) {
                        case JOB_RUNNING:
                        case JOB_SUSPENDED:
                                running++;
                                break;
                        case JOB_QUEUED:
                        case JOB_BLOCKED:
                                waiting++;
                                break;
                        case JOB_HELD:
                                held++;
                                break;
                        default:
                                break;
                        }
                json_add_u64(p, "jobs_running", running);
                json_add_u64(p, "jobs_waiting", waiting);
                json_add_u64(p, "jobs_held", held);
        }
        json_add_u64(p, "store_commits", store_n_commits(m->store));
        json_add_u64(p, "store_syncs", store_n_syncs(m->store));
        for (size_t i = 0; i < m->config->n_queues; i++) {
                json_object *q = json_object_new_object();
                json_add_string(q, "name", m->config->queues[i].name);
                json_add_i64(q, "priority", m->config->queues[i].priority);
                json_add_bool(q, "default", streq(m->config->queues[i].name, m->config->default_queue));
                if (m->config->queues[i].max_walltime > 0) /* sinfo's TIMELIMIT */
                        json_add_u64(q, "max_walltime", m->config->queues[i].max_walltime);
                json_object_array_add(qs, q);
        }
        json_add(p, "queues", qs);
        if (m->devices && m->devices->n_devices > 0) {
                size_t n = 0;
                for (size_t g = 0; g < m->devices->n_devices; g++)
                        n += device_is_schedulable(&m->devices->devices[g]);
                json_add_u64(p, "gpus", n);
                json_add(p, "devices", devices_to_json(m));
        }
        if (m->gpu_jobs)
                json_add(p, "gpu_telemetry", manager_gpu_jobs_info_json(m));
        if (m->devices && m->devices->unscheduled) {
                json_object *u = json_object_new_array();
                STRV_FOREACH(x, m->devices->unscheduled)
                        json_object_array_add(u, json_object_new_string(*x));
                json_add(p, "unscheduled_gpus", u);
        }
        if (m->config->n_projects > 0) {
                json_object *ps = json_object_new_array();
                for (size_t i = 0; i < m->config->n_projects; i++)
                        json_object_array_add(ps, json_object_new_string(m->config->projects[i].name));
                json_add(p, "projects", ps);
        }
        if (m->server)
                json_add(p, "request_cpu", request_cpu_to_json(m, peer));
        if (m->config_error)
                json_add_string(p, "config_error", m->config_error);
        {
                _cleanup_free_ char *in_force = NULL;
                if (manager_config_in_force(m, &in_force) >= 0)
                        json_add_string(p, "config_in_force", in_force);
                json_add_bool(p, "config_last_good", m->config_lastgood);
        }
        return ok_reply(p);
}

static json_object *method_reload(Manager *m, Call *call, const Peer *peer, json_object *params) {
        _cleanup_free_ char *error = NULL;
        json_object *err;

        if ((err = check(m, peer, AUTHZ_RELOAD, NULL, "only administrators can reload the configuration")))
                return err;
        if (manager_reload(m, &error) < 0) {
                json_object *p = json_object_new_object();
                log_error("Configuration not reloaded (corral reload), keeping the one in force: %s", strna(error));
                json_add_string(p, CORRAL_FIELD_MESSAGE, error);
                return reply_error_new(CORRAL_ERROR_INVALID_PARAMETER, p);
        }
        return ok_reply(NULL);
}

/* Every method with one signature, so the dispatch is a table. */
typedef json_object *(*MethodHandler)(Manager *m, Call *call, const Peer *peer, json_object *params);

static json_object *method_submit(Manager *m, Call *call, const Peer *peer, json_object *params) {
        return submit(m, peer, params, false);
}

static json_object *method_hold(Manager *m, Call *call, const Peer *peer, json_object *params) {
        return hold_or_release(m, peer, params, true);
}

static json_object *method_release(Manager *m, Call *call, const Peer *peer, json_object *params) {
        return hold_or_release(m, peer, params, false);
}

static json_object *method_suspend(Manager *m, Call *call, const Peer *peer, json_object *params) {
        return suspend_or_resume(m, call, peer, params, true);
}

static json_object *method_resume(Manager *m, Call *call, const Peer *peer, json_object *params) {
        return suspend_or_resume(m, call, peer, params, false);
}

static const struct {
        MethodHandler handler;
        bool deferrable; /* NULL from the handler: answered later, not out of memory */
        bool reply_only; /* changes nothing: "oneway" is refused (the server checks it) */
} methods[_CORRAL_METHOD_MAX] = {
        [CORRAL_METHOD_SUBMIT] = { method_submit },
        [CORRAL_METHOD_LIST] = { method_list, .reply_only = true },
        [CORRAL_METHOD_SHOW] = { method_show, .reply_only = true },
        [CORRAL_METHOD_CANCEL] = { method_cancel },
        [CORRAL_METHOD_SIGNAL] = { method_signal },
        [CORRAL_METHOD_HOLD] = { method_hold },
        [CORRAL_METHOD_RELEASE] = { method_release },
        [CORRAL_METHOD_SUSPEND] = { method_suspend, true },
        [CORRAL_METHOD_RESUME] = { method_resume, true },
        [CORRAL_METHOD_REQUEUE] = { method_requeue },
        [CORRAL_METHOD_WAIT] = { method_wait, true, .reply_only = true },
        [CORRAL_METHOD_LOGS] = { method_logs, .reply_only = true },
        [CORRAL_METHOD_GET_INFO] = { method_get_info, .reply_only = true },
        [CORRAL_METHOD_RELOAD] = { method_reload },
        [CORRAL_METHOD_USAGE] = { manager_method_usage, true, .reply_only = true },
        [CORRAL_METHOD_SHARE] = { manager_method_share, .reply_only = true },
        [CORRAL_METHOD_WHY] = { method_why, .reply_only = true },
        [CORRAL_METHOD_TEST_SUBMIT] = { method_test_submit, .reply_only = true },
        [CORRAL_METHOD_RUN] = { method_run, true },
};

static bool takes_fds(CorralMethod method) {
        return method == CORRAL_METHOD_RUN;
}

static bool reply_only(CorralMethod method) {
        return method >= 0 && method < _CORRAL_METHOD_MAX && methods[method].reply_only;
}

static int dispatch(void *userdata, Call *call, const Peer *peer, CorralMethod method, json_object *params,
                    json_object **ret_reply) {
        Manager *m = userdata;
        json_object *r;

        if (method < 0 || method >= _CORRAL_METHOD_MAX || !methods[method].handler) {
                *ret_reply = reply_method_not_found(strempty(corral_method_to_string(method)));
                return *ret_reply ? 0 : -ENOMEM;
        }
        r = methods[method].handler(m, call, peer, params);
        if (!r && !methods[method].deferrable)
                return -ENOMEM;
        *ret_reply = r;
        return 0;
}

static void call_gone(void *userdata, Call *call) {
        /* A kept call's data (FreezeCall, UsageCall) begins with its Call pointer: the work
         * in flight answers nobody now. A freeze's state change still lands. */
        Call **data = server_call_get_data(call);

        if (data)
                *data = NULL;
        manager_interactive_call_gone(userdata, call);
}

const ServerOps manager_server_ops = {
        .dispatch = dispatch,
        .call_gone = call_gone,
        .reply_only = reply_only,
        .takes_fds = takes_fds,
};
