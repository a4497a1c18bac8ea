/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The methods Usage (corral usage, like sreport) and Share (corral share, like sshare).
 * Usage reads only the per-day summary (usage_daily), one row per day, project, user and
 * queue, so its cost follows the days and people in the report, never the number of jobs
 * that ran (its GPU-hours used and efficiency read each GPU run's telemetry, job_gpu_usage,
 * under the run's charge); what each row may be shown to is authz.c's decision
 * (AUTHZ_VIEW_USAGE). */

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commit.h"
#include "job-table.h"
#include "json-util.h"
#include "log.h"
#include "manager.h"
#include "message.h"
#include "strv.h"
#include "time-util.h"
#include "usage-report.h"
#include "usage.h"
#include "worker.h"

static const char *const usage_by_names[] = {
        [STORE_USAGE_BY_USER] = "user",
        [STORE_USAGE_BY_PROJECT] = "project",
        [STORE_USAGE_BY_QUEUE] = "queue",
        [STORE_USAGE_BY_DAY] = "day",
};

/* Usage requests queued or being read at once, all users together and per user; more
 * are answered Busy (the CLI says to try again). Each costs a thread's read of the
 * store, never the loop; the bound per user keeps one user's pipelined requests from
 * making everybody else's Busy. */
#define USAGE_PENDING_MAX 64U
#define USAGE_PENDING_PER_USER_MAX 2U

/* The count of uid's reports in flight, changed by delta; NULL when it cannot be kept. */
static unsigned *usage_inflight(Manager *m, uid_t uid, bool create) {
        struct UsageInflight *n;

        for (size_t i = 0; i < m->n_usage_inflight; i++)
                if (m->usage_inflight[i].uid == uid)
                        return &m->usage_inflight[i].n;
        if (!create)
                return NULL;
        n = reallocarray(m->usage_inflight, m->n_usage_inflight + 1, sizeof *n);
        if (!n)
                return NULL;
        m->usage_inflight = n;
        n[m->n_usage_inflight] = (struct UsageInflight) { .uid = uid };
        return &n[m->n_usage_inflight++].n;
}

/* A reply stays below CORRAL_MESSAGE_SIZE_MAX: a row is about 450 bytes, 630 at most (a
 * 64-character key, every figure at full width). */
#define USAGE_ROWS_MAX 1600

/* GPU-seconds used (held × mean utilisation) and held, of the GPUs NVML read. */
typedef struct UsageGpuUse {
        double used_sec;
        uint64_t sampled_sec;
} UsageGpuUse;

typedef struct ProjectSeen {
        char *project;
        bool member, have_gid;
        gid_t gid;
} ProjectSeen;

typedef struct UsageCollect {
        Manager *m;
        AuthzPeer peer;
        const char *peer_user;
        char **groups;          /* the peer's group names */
        ProjectSeen *seen;
        size_t n_seen, allocated_seen;
        json_object *rows;
        char *key;              /* the row being summed */
        UsageTotals cur, total;
        UsageGpuUse cur_gpu, total_gpu;
        size_t n_rows;
        bool truncated;
} UsageCollect;

/* GPU-hours used and the efficiency of the GPU-hours sampled: null when no GPU the rows
 * held was ever read (no telemetry, or no GPU), which is not an idle GPU's 0. */
static void gpu_use_to_json(json_object *o, const UsageGpuUse *g) {
        if (g->sampled_sec == 0) {
                (void) json_object_object_add(o, "gpu_hours_used", NULL);
                (void) json_object_object_add(o, "gpu_hours_sampled", NULL);
                (void) json_object_object_add(o, "gpu_efficiency", NULL);
                return;
        }
        json_add(o, "gpu_hours_used", json_object_new_double(g->used_sec / 3600.0));
        json_add(o, "gpu_hours_sampled", json_object_new_double((double) g->sampled_sec / 3600.0));
        json_add(o, "gpu_efficiency", json_object_new_double(g->used_sec / (double) g->sampled_sec));
}

static json_object *totals_to_json(const char *key, const UsageTotals *t, const UsageGpuUse *g) {
        json_object *o = json_object_new_object(), *st;

        if (!o)
                return NULL;
        if (key)
                json_add_string(o, "key", key);
        json_add_u64(o, "jobs", t->jobs);
        json_add(o, "core_hours", json_object_new_double((double) t->core_usec / ACCT_USEC_PER_HOUR));
        json_add(o, "gpu_hours", json_object_new_double((double) t->gpu_usec / ACCT_USEC_PER_HOUR));
        gpu_use_to_json(o, g);
        json_add(o, "service_units", json_object_new_double(t->service_units));
        json_add(o, "cpu_hours", json_object_new_double((double) t->cpu_usec / ACCT_USEC_PER_HOUR));
        json_add(o, "efficiency", json_object_new_double(acct_efficiency(t->cpu_usec, t->core_usec)));
        json_add_u64(o, "memory_peak", t->memory_peak);
        json_add_u64(o, "io_read_bytes", t->io_read_bytes);
        json_add_u64(o, "io_write_bytes", t->io_write_bytes);
        json_add_u64(o, "io_ops", t->io_ops);
        st = json_object_new_object();
        for (AcctStall s = 0; st && s < _ACCT_STALL_MAX; s++)
                json_add(st, acct_stall_to_string(s), json_object_new_double((double) t->stall_usec[s] / 1e6));
        json_add(o, "stall_sec", st);
        return o;
}


/* Whether the peer is a member of the project: its file's Members=, or without project
 * files its unix group (authz.c compares the gid). Looked up once per project. */
static ProjectSeen *project_seen(UsageCollect *u, const char *project) {
        const Config *c = u->m->config;
        ProjectSeen *s;

        for (size_t i = 0; i < u->n_seen; i++)
                if (streq(u->seen[i].project, project))
                        return &u->seen[i];
        if (!GREEDY_REALLOC(u->seen, u->allocated_seen, u->n_seen + 1))
                return NULL;
        s = &u->seen[u->n_seen];
        *s = (ProjectSeen) { .project = strdup(project) };
        if (!s->project)
                return NULL;
        if (c->n_projects > 0) {
                const ProjectConfig *pc = config_find_project(c, project);
                s->member = pc && u->peer_user && project_has_member(pc, u->peer_user, (const char *const *) u->groups);
        } else {
                struct group *g = getgrnam(project);
                if (g) {
                        s->have_gid = true;
                        s->gid = g->gr_gid;
                }
        }
        u->n_seen++;
        return s;
}

static int flush_row(UsageCollect *u) {
        json_object *o;

        if (!u->key)
                return 0;
        if (u->n_rows >= USAGE_ROWS_MAX)
                u->truncated = true;
        else {
                o = totals_to_json(u->key, &u->cur, &u->cur_gpu);
                if (!o || json_object_array_add(u->rows, o) < 0) {
                        json_object_put(o);
                        return -ENOMEM;
                }
                u->n_rows++;
        }
        usage_totals_add(&u->total, &u->cur);
        u->total_gpu.used_sec += u->cur_gpu.used_sec;
        u->total_gpu.sampled_sec += u->cur_gpu.sampled_sec;
        u->cur = (UsageTotals) {};
        u->cur_gpu = (UsageGpuUse) {};
        u->key = mfree(u->key);
        return 0;
}

static int collect_row(const StoreUsageRow *row, void *userdata) {
        UsageCollect *u = userdata;
        ProjectSeen *s = project_seen(u, strempty(row->project));
        AuthzJob aj;
        int r;

        if (!s)
                return -ENOMEM;
        aj = (AuthzJob) { .owner_uid = row->uid, .project = row->project, .project_member = s->member,
                          .have_project_gid = s->have_gid, .project_gid = s->gid };
        if (authz_check(&u->peer, AUTHZ_VIEW_USAGE, &aj, &u->m->authz) < 0)
                return 0;
        if (u->key && !streq(u->key, strempty(row->key)) && (r = flush_row(u)) < 0)
                return r;
        if (!u->key && !(u->key = strdup(strempty(row->key))))
                return -ENOMEM;
        usage_totals_add(&u->cur, &row->totals);
        u->cur_gpu.used_sec += row->gpu_used_sec;
        u->cur_gpu.sampled_sec += row->gpu_sampled_sec;
        return 0;
}

static int get_day(json_object *params, const char *key, const char **ret) {
        json_object *v;
        uint64_t t;

        *ret = NULL;
        if (!json_object_object_get_ex(params, key, &v))
                return 0;
        if (json_get_string(v, 10, 10, ret) < 0 || acct_day_parse(*ret, &t) < 0)
                return -EINVAL;
        return 0;
}

static int get_name(json_object *params, const char *key, const char **ret) {
        json_object *v;

        *ret = NULL;
        if (!json_object_object_get_ex(params, key, &v))
                return 0;
        return json_get_string(v, 1, CORRAL_IDENT_LENGTH_MAX, ret);
}

/* One Usage request answered off the loop: the store's rows are read by a worker thread on
 * a read-only connection of its own, then filtered and answered on the loop. A year of
 * runs by day is tens of thousands of summary rows, a fifth of a second of SQLite: other
 * users are served meanwhile. Everything run() touches is in here. */
typedef struct UsageCall {
        Call *call;             /* first: call_gone() detaches it (methods.c) */
        Manager *m;
        Peer peer;              /* groups copied */
        StoreUsageBy by;
        char *since, *until, *user, *project, *queue;
        char *statedir;
        StoreUsageRow *rows;    /* strings owned */
        size_t n_rows, allocated_rows;
        uint64_t run_usec;      /* the worker thread's CPU time in run(): the caller's */
} UsageCall;

static UsageCall *usage_call_free(UsageCall *u) {
        if (!u)
                return NULL;
        for (size_t i = 0; i < u->n_rows; i++) {
                free((char *) u->rows[i].key);
                free((char *) u->rows[i].project);
                free((char *) u->rows[i].user);
        }
        free(u->rows);
        free(u->peer.groups);
        free(u->since);
        free(u->until);
        free(u->user);
        free(u->project);
        free(u->queue);
        free(u->statedir);
        free(u);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(UsageCall *, usage_call_free);

static StoreUsageQuery usage_call_query(const UsageCall *u) {
        return (StoreUsageQuery) { .by = u->by, .since = u->since, .until = u->until, .user = u->user,
                                   .project = u->project, .queue = u->queue };
}

static int keep_row(const StoreUsageRow *row, void *userdata) {
        UsageCall *u = userdata;
        StoreUsageRow *c;

        if (!GREEDY_REALLOC(u->rows, u->allocated_rows, u->n_rows + 1))
                return -ENOMEM;
        c = &u->rows[u->n_rows];
        *c = (StoreUsageRow) { .uid = row->uid, .totals = row->totals, .gpu_used_sec = row->gpu_used_sec,
                               .gpu_sampled_sec = row->gpu_sampled_sec };
        if ((row->key && !(c->key = strdup(row->key))) || (row->project && !(c->project = strdup(row->project))) ||
            (row->user && !(c->user = strdup(row->user)))) {
                free((char *) c->key);
                free((char *) c->project);
                return -ENOMEM;
        }
        u->n_rows++;
        return 0;
}

static int usage_call_read(UsageCall *u) {
        _cleanup_(store_closep) Store *s = NULL;
        StoreUsageQuery q = usage_call_query(u);
        int r;

        r = store_open_reader(u->statedir, &s);
        if (r < 0)
                return r;
        return store_usage_rows(s, &q, keep_row, u);
}

/* In a worker thread: its own CPU clock, read around the work (the store's opening and
 * closing included), is what the report cost off the loop. */
static int usage_call_run(void *data) {
        UsageCall *u = data;
        uint64_t start = now_usec(CLOCK_THREAD_CPUTIME_ID);
        int r;

        r = usage_call_read(u);
        u->run_usec = now_usec(CLOCK_THREAD_CPUTIME_ID) - start;
        return r;
}

/* The reply to a report: rows filtered for the peer (authz.c) as they are summed. rows is
 * called to produce them, into collect_row. */
static json_object *usage_reply(Manager *m, const Peer *peer, StoreUsageBy by, const char *since, const char *until,
                                int (*rows)(void *userdata, UsageCollect *u), void *userdata) {
        UsageCollect u = { .m = m };
        struct passwd *pw;
        json_object *p = NULL;
        int r;

        u.peer = (AuthzPeer) { .uid = peer->uid, .gid = peer->gid, .groups = peer->groups, .n_groups = peer->n_groups };
        pw = getpwuid(peer->uid);
        u.peer_user = pw ? pw->pw_name : NULL;
        u.groups = peer_group_names(peer);
        u.rows = json_object_new_array();
        if (!u.groups || !u.rows)
                goto finish;
        r = rows(userdata, &u);
        if (r >= 0)
                r = flush_row(&u);
        if (r < 0) {
                if (r != -ENOMEM)
                        log_error_errno(r, "Cannot read the usage summary: %s", store_error(m->store));
                goto finish;
        }
        p = json_object_new_object();
        if (!p)
                goto finish;
        json_add_string(p, "by", usage_by_names[by]);
        json_add_string(p, "since", since);
        json_add_string(p, "until", until);
        json_add_bool(p, "all", authz_peer_is_admin(&u.peer, &m->authz));
        json_add(p, "rows", TAKE_PTR(u.rows));
        json_add(p, "total", totals_to_json(NULL, &u.total, &u.total_gpu));
        if (u.truncated)
                json_add_bool(p, "truncated", true);
finish:
        json_object_put(u.rows);
        free(u.key);
        for (size_t i = 0; i < u.n_seen; i++)
                free(u.seen[i].project);
        free(u.seen);
        strv_free(u.groups);
        return p ? reply_new(p, false) : reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
}

static int rows_from_store(void *userdata, UsageCollect *u) {
        const StoreUsageQuery *q = userdata;

        return store_usage_rows(u->m->store, q, collect_row, u);
}

static int rows_from_call(void *userdata, UsageCollect *u) {
        UsageCall *c = userdata;
        int r;

        for (size_t i = 0; i < c->n_rows; i++)
                if ((r = collect_row(&c->rows[i], u)) < 0)
                        return r;
        return 0;
}

static void usage_call_answer(UsageCall *u, int r) {
        json_object *reply;

        if (!u->call)
                return; /* its client went away, or corrald is stopping */
        server_call_set_data(u->call, NULL);
        if (r < 0) {
                log_error_errno(r, "Cannot read the usage summary in %s/corral.db: %m", u->statedir);
                reply = reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
        } else
                reply = usage_reply(u->m, &u->peer, u->by, u->since, u->until, rows_from_call, u);
        if (!reply || server_call_reply(u->call, reply, false) < 0)
                log_debug("Cannot queue the reply to a Usage request.");
}

/* On the loop. The report's cost, the worker's CPU time and the loop's in here (filtering
 * and serializing its rows, outside any connection's turn), is billed to its caller, also
 * when the caller has gone meanwhile: the work was done for them. */
static void usage_call_done(void *data, int r) {
        _cleanup_(usage_call_freep) UsageCall *u = data;
        unsigned *inflight = usage_inflight(u->m, u->peer.uid, false);
        uint64_t start = now_usec(CLOCK_THREAD_CPUTIME_ID), end;

        if (inflight && *inflight > 0)
                (*inflight)--;
        usage_call_answer(u, r);
        end = now_usec(CLOCK_THREAD_CPUTIME_ID);
        if (u->m->server) /* NULL while corrald stops: nobody left to bill */
                server_bill(u->m->server, u->peer.uid, u->run_usec + (end > start ? end - start : 0));
}

static int usage_call_new(Manager *m, Call *call, const Peer *peer, const StoreUsageQuery *q, UsageCall **ret) {
        _cleanup_(usage_call_freep) UsageCall *u = new0(UsageCall, 1);

        if (!u)
                return -ENOMEM;
        *u = (UsageCall) { .call = call, .m = m, .peer = *peer, .by = q->by };
        u->peer.groups = NULL;
        if (peer->n_groups > 0) {
                u->peer.groups = new(gid_t, peer->n_groups);
                if (!u->peer.groups)
                        return -ENOMEM;
                memcpy(u->peer.groups, peer->groups, peer->n_groups * sizeof(gid_t));
        }
        if ((q->since && !(u->since = strdup(q->since))) || (q->until && !(u->until = strdup(q->until))) ||
            (q->user && !(u->user = strdup(q->user))) || (q->project && !(u->project = strdup(q->project))) ||
            (q->queue && !(u->queue = strdup(q->queue))) || !(u->statedir = strdup(m->statedir)))
                return -ENOMEM;
        *ret = TAKE_PTR(u);
        return 0;
}

json_object *manager_method_usage(Manager *m, Call *call, const Peer *peer, json_object *params) {
        StoreUsageQuery q = { .by = STORE_USAGE_BY_PROJECT };
        json_object *v;
        const char *by = NULL;

        if (get_day(params, "since", &q.since) < 0)
                return reply_invalid_parameter("since", "a day, YYYY-MM-DD");
        if (get_day(params, "until", &q.until) < 0)
                return reply_invalid_parameter("until", "a day, YYYY-MM-DD");
        if (json_object_object_get_ex(params, "by", &v)) {
                bool ok = false;
                if (json_get_string(v, 1, 16, &by) < 0)
                        return reply_invalid_parameter("by", "user, project, queue or day");
                for (size_t i = 0; i < ELEMENTSOF(usage_by_names); i++)
                        if (streq(by, usage_by_names[i])) {
                                q.by = (StoreUsageBy) i;
                                ok = true;
                        }
                if (!ok)
                        return reply_invalid_parameter("by", "user, project, queue or day");
        }
        if (get_name(params, "user", &q.user) < 0)
                return reply_invalid_parameter("user", "a user name");
        if (get_name(params, "project", &q.project) < 0)
                return reply_invalid_parameter("project", "a project name");
        if (get_name(params, "queue", &q.queue) < 0)
                return reply_invalid_parameter("queue", "a queue name");

        /* Off the loop when there is a loop to come back to (a call to answer later). */
        if (call && m->workers) {
                _cleanup_(usage_call_freep) UsageCall *u = NULL;

                unsigned *inflight = usage_inflight(m, peer->uid, true);

                if (!inflight)
                        return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
                if (worker_pool_pending(m->workers) >= USAGE_PENDING_MAX ||
                    *inflight >= USAGE_PENDING_PER_USER_MAX)
                        return reply_error_new(CORRAL_ERROR_BUSY, NULL);
                if (usage_call_new(m, call, peer, &q, &u) < 0 ||
                    worker_pool_submit(m->workers, usage_call_run, usage_call_done, u) < 0)
                        return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
                (*inflight)++;
                server_call_set_data(call, TAKE_PTR(u));
                return NULL;
        }
        return usage_reply(m, peer, q.by, q.since, q.until, rows_from_store, &q);
}

json_object *manager_method_share(Manager *m, Call *call, const Peer *peer, json_object *params) {
        _cleanup_free_ ProjectUsage *l = NULL;
        uint64_t now = (uint64_t) time(NULL);
        json_object *p, *ps;
        struct passwd *pw;
        size_t n = 0;
        double total = 0;

        if (accounting_project_usage(m->acct, m->jobs, m->n_jobs, now, &l, &n, &total) < 0)
                return reply_error_new(CORRAL_ERROR_INTERNAL_ERROR, NULL);
        p = json_object_new_object();
        ps = json_object_new_array();
        if (!p || !ps) {
                json_object_put(p);
                json_object_put(ps);
                return NULL;
        }
        json_add_u64(p, "half_life_sec", m->config->fairshare_half_life);
        json_add(p, "total_usage", json_object_new_double(total));
        for (size_t i = 0; i < n; i++) {
                json_object *o = json_object_new_object();
                if (!o)
                        break;
                json_add_string(o, "name", l[i].name);
                json_add_u64(o, "share", l[i].share);
                json_add(o, "usage", json_object_new_double(l[i].usage));
                json_add(o, "fairshare", json_object_new_double(l[i].fairshare));
                if (l[i].grant) {
                        json_add_u64(o, "grant", l[i].grant);
                        json_add(o, "grant_used", json_object_new_double(l[i].grant_used));
                        json_add(o, "grant_left",
                                 json_object_new_double(l[i].grant_used < (double) l[i].grant
                                                                ? (double) l[i].grant - l[i].grant_used
                                                                : 0.0));
                        json_add_u64(o, "period_begin", l[i].period_begin);
                        if (l[i].period_end != UINT64_MAX)
                                json_add_u64(o, "period_end", l[i].period_end);
                }
                json_object_array_add(ps, o);
        }
        json_add(p, "projects", ps);
        pw = getpwuid(peer->uid);
        if (pw) {
                json_object *o = json_object_new_object();
                json_add_string(o, "name", pw->pw_name);
                json_add(o, "usage", json_object_new_double(accounting_user_usage(m->acct, pw->pw_name, now)));
                json_add(p, "user", o);
        }
        return reply_new(p, false);
}
