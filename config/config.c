/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fd-util.h"
#include "ini.h"
#include "job-request.h"
#include "parse-util.h"
#include "strv.h"

static void queue_config_done(QueueConfig *q) {
        free(q->name);
        strv_free(q->allow_projects);
        strv_free(q->allow_groups);
        strv_free(q->preempts);
        strv_free(q->overridden);
        *q = (QueueConfig) {};
}

Config *config_free(Config *c) {
        if (!c)
                return NULL;
        free(c->operator_group);
        free(c->default_queue);
        free(c->policy);
        free(c->backfill_order);
        free(c->priority_type);
        strv_free(c->fairshare_exclude_queues);
        free(c->metrics_file);
        free(c->mail_prog);
        for (size_t i = 0; i < c->n_queues; i++)
                queue_config_done(&c->queues[i]);
        free(c->queues);
        strv_free(c->removed_builtins);
        for (size_t i = 0; i < c->n_projects; i++)
                project_config_done(&c->projects[i]);
        free(c->projects);
        free(c);
        return NULL;
}

const ProjectConfig *config_find_project(const Config *c, const char *name) {
        for (size_t i = 0; i < c->n_projects; i++)
                if (streq(c->projects[i].name, name))
                        return &c->projects[i];
        return NULL;
}

/* What no single file can check: project queues exist, a user has one default. */
static int check_projects(Config *c, const char *dir, char **ret_error) {
        for (size_t i = 0; i < c->n_projects; i++) {
                const ProjectConfig *p = &c->projects[i];
                STRV_FOREACH(q, p->queues)
                        if (!config_find_queue(c, *q)) {
                                if (asprintf(ret_error, "%s/%s.conf: Queues= names %s, which is no queue", dir, p->name,
                                             *q) < 0)
                                        *ret_error = NULL;
                                return -EINVAL;
                        }
                STRV_FOREACH(u, p->default_for)
                        for (size_t k = 0; k < i; k++)
                                if (strv_contains(c->projects[k].default_for, *u)) {
                                        if (asprintf(ret_error, "%s/%s.conf: DefaultFor= %s, who already has %s as "
                                                     "default project", dir, p->name, *u, c->projects[k].name) < 0)
                                                *ret_error = NULL;
                                        return -EINVAL;
                                }
        }
        return 0;
}

const QueueConfig *config_find_queue(const Config *c, const char *name) {
        for (size_t i = 0; i < c->n_queues; i++)
                if (streq(c->queues[i].name, name))
                        return &c->queues[i];
        return NULL;
}

static int parse_policy(const char *v, void *data) {
        if (!sched_policy_from_name(v))
                return -EINVAL;
        return ini_parse_string(v, data);
}
static int parse_priority_type(const char *v, void *data) {
        if (!sched_priority_from_name(v))
                return -EINVAL;
        return ini_parse_string(v, data);
}
static int parse_backfill_order(const char *v, void *data) {
        if (!streq(v, "priority") && !streq(v, "sjf"))
                return -EINVAL;
        return ini_parse_string(v, data);
}
static int parse_ident(const char *v, void *data) {
        if (!ident_is_valid(v))
                return -EINVAL;
        return ini_parse_string(v, data);
}

static int parse_idents(const char *v, void *data) {
        return ini_parse_strv_checked(v, data, ident_is_valid);
}

/* A list that, unlike ini_parse_strv(), tells "set to nothing" (an empty list) from "not
 * set" (NULL: the default applies). */
static int parse_queue_list(const char *v, void *data) {
        char ***l = data;

        if (isempty(v)) {
                strv_free(*l);
                *l = new0(char *, 1);
                return *l ? 0 : -ENOMEM;
        }
        return parse_idents(v, data);
}

static int parse_xfactor(const char *v, void *data) {
        double d;
        int r = ini_parse_double(v, &d);

        if (r < 0)
                return r;
        if (!(d >= 1.0))
                return -ERANGE;
        *(double *) data = d;
        return 0;
}

static int parse_absolute_path(const char *v, void *data) {
        if (!isempty(v) && v[0] != '/')
                return -EINVAL;
        return ini_parse_string(v, data);
}

static int parse_percent(const char *v, void *data) {
        _cleanup_free_ char *n = strdup(v);
        size_t l = n ? strlen(n) : 0;
        unsigned u;
        int r;

        if (!n)
                return -ENOMEM;
        if (l > 0 && n[l - 1] == '%')
                n[l - 1] = 0;
        r = safe_atou(n, &u);
        if (r < 0)
                return r;
        if (u > 100)
                return -ERANGE;
        *(uint32_t *) data = u;
        return 0;
}

static int parse_ordering(const char *v, void *data) {
        if (streq(v, "priority"))
                *(bool *) data = false;
        else if (streq(v, "shuffle"))
                *(bool *) data = true;
        else
                return -EINVAL;
        return 0;
}

#define MGR(k, p, f, e) INI_ITEM("Manager", k, p, Config, f, e)
#define QUE(k, p, f, e) INI_ITEM("Queue", k, p, QueueConfig, f, e)
static const IniItem items[] = {
        MGR("OperatorGroup", ini_parse_string, operator_group, "a group name"),
        MGR("UsersMaySuspend", ini_parse_bool, users_may_suspend, "a boolean"),
        MGR("KillWaitSec", ini_parse_sec, kill_wait_sec, "a duration"),
        MGR("DefaultQueue", parse_ident, default_queue, "a queue name"),
        MGR("MaxJobsPerUser", ini_parse_u32, max_jobs_per_user, "a number (0: no limit)"),
        MGR("MaxArraySize", ini_parse_u32, max_array_size, "a number of tasks (0: no limit)"),
        MGR("MaxStoredBytesPerUser", ini_parse_bytes, max_stored_bytes_per_user, "a size such as 256M (0: no limit)"),
        MGR("MaxConnectionsPerUser", ini_parse_u32, max_connections_per_user, "a number"),
        MGR("MaxWaitsPerConnection", ini_parse_u32, max_waits_per_connection, "a number"),
        MGR("MaxConnectionOutput", ini_parse_bytes, max_connection_output, "a size such as 4M"),
        MGR("RequestSharePerUser", parse_percent, request_share_per_user, "a percentage, 0 to 100 (0: no limit)"),
        MGR("RequestBurstPerUser", ini_parse_sec, request_burst_per_user, "a duration such as 5s"),
        MGR("Policy", parse_policy, policy, "fcfs, easy or conservative"),
        MGR("BackfillOrder", parse_backfill_order, backfill_order, "priority or sjf"),
        MGR("PriorityType", parse_priority_type, priority_type, "multifactor or fcfs"),
        MGR("Ordering", parse_ordering, shuffle, "priority or shuffle"),
        MGR("PriorityWeightQueue", ini_parse_double, weights.queue, "a number"),
        MGR("PriorityWeightFairShare", ini_parse_double, weights.fairshare, "a number"),
        MGR("PriorityWeightAge", ini_parse_double, weights.age, "a number (per second waited)"),
        MGR("PriorityWeightXFactor", ini_parse_double, weights.xfactor, "a number"),
        MGR("PriorityWeightSize", ini_parse_double, weights.size, "a number (per CPU)"),
        MGR("PriorityWeightBypass", ini_parse_double, weights.bypass, "a number (per bypass)"),
        MGR("PriorityWeightTarget", ini_parse_double, weights.target, "a number"),
        MGR("FairShareHalfLife", ini_parse_sec, fairshare_half_life, "a duration such as 168h (infinity: no decay)"),
        MGR("FairShareExcludeQueues", parse_queue_list, fairshare_exclude_queues, "queue names"),
        MGR("MetricsFile", parse_absolute_path, metrics_file, "an absolute path"),
        MGR("MailProg", parse_absolute_path, mail_prog, "an absolute path"),
        MGR("MaxXFactor", parse_xfactor, max_xfactor, "a number >= 1, such as 1.25"),
        MGR("SuspendWindowSec", ini_parse_sec, suspend_window_sec, "a duration"),
        MGR("MaxSuspendTime", ini_parse_sec, max_suspend_time, "a duration (infinity: no cap)"),
        MGR("ReclaimSuspended", ini_parse_bool, reclaim_suspended, "a boolean"),
        MGR("InteractiveHangupSec", ini_parse_sec, interactive_hangup_sec, "a duration such as 30s"),
        QUE("Name", parse_ident, name, "a queue name ([A-Za-z0-9_.-], up to 64)"),
        QUE("Priority", ini_parse_i32, priority, "an integer"),
        QUE("Rerunnable", ini_parse_bool, rerunnable, "a boolean"),
        QUE("MaxWalltime", ini_parse_sec, max_walltime, "a duration"),
        QUE("DefaultWalltime", ini_parse_sec, default_walltime, "a duration"),
        QUE("ChargeFactor", ini_parse_double, charge_factor, "a number of service units per core-hour, such as 1.5"),
        QUE("MaxCPUsPerJob", ini_parse_u32, max_cpus_per_job, "a number of CPUs"),
        QUE("AllowProjects", parse_idents, allow_projects, "project names"),
        QUE("AllowGroups", ini_parse_strv, allow_groups, "unix group names"),
        QUE("TargetQueueTime", ini_parse_sec, target_queue_time, "a duration"),
        QUE("Preempts", parse_idents, preempts, "queue names"),
        QUE("ParallelRun", ini_parse_bool, parallel_run, "a boolean"),
        QUE("Preemptable", ini_parse_bool, preemptable, "a boolean"),
        QUE("Disabled", ini_parse_bool, disabled, "a boolean"),
        QUE("AllowInteractive", ini_parse_bool, allow_interactive, "a boolean"),
        QUE("MaxInteractiveWalltime", ini_parse_sec, max_interactive_walltime, "a duration"),
};

/* While loading: a [Queue] section is collected whole, then merged into the queue of the
 * same Name= from an earlier file or section key by key, so a drop-in that sets only
 * Priority= keeps the MaxWalltime= the main file gave (systemd's drop-in semantics). */
typedef struct ConfigLoad {
        Config *config;
        QueueConfig queue;
} ConfigLoad;

static void *section_begin(void *userdata, const char *section) {
        ConfigLoad *l = userdata;

        if (streq(section, "Manager"))
                return l->config;
        if (streq(section, "Queue")) {
                l->queue = (QueueConfig) { .rerunnable = true, .charge_factor = 1.0, .preemptable = true,
                                           .allow_interactive = true };
                return &l->queue;
        }
        return NULL;
}

static int section_end(void *userdata, const char *section, void *target, uint64_t set, const char *path,
                       unsigned line, char **ret_error) {
        ConfigLoad *l = userdata;
        Config *c = l->config;
        QueueConfig *into;

        if (!streq(section, "Queue"))
                return 0;
        if (!l->queue.name)
                return ini_error(ret_error, path, line, "a [Queue] section has no Name=");
        into = (QueueConfig *) config_find_queue(c, l->queue.name);
        if (!into) {
                QueueConfig *q = reallocarray(c->queues, c->n_queues + 1, sizeof *q);
                if (!q) {
                        queue_config_done(&l->queue);
                        return -ENOMEM;
                }
                c->queues = q;
                c->queues[c->n_queues++] = l->queue;
                l->queue = (QueueConfig) {};
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(items); i++) {
                char *to = (char *) into + items[i].offset, *from = (char *) &l->queue + items[i].offset;

                if (!(set & (UINT64_C(1) << i)) || !streq(items[i].section, "Queue") ||
                    items[i].offset == offsetof(QueueConfig, name))
                        continue;
                if (items[i].parse == ini_parse_strv || items[i].parse == parse_idents) {
                        /* Lists move over, replacing the earlier one. */
                        strv_free(*(char ***) to);
                        *(char ***) to = TAKE_PTR(*(char ***) from);
                } else
                        memcpy(to, from, items[i].size);
                /* corral config check names what of a built-in the site changed. */
                if (into->builtin && !strv_contains(into->overridden, items[i].key) &&
                    strv_extend(&into->overridden, items[i].key) < 0) {
                        queue_config_done(&l->queue);
                        return -ENOMEM;
                }
        }
        queue_config_done(&l->queue);
        return 0;
}

static const IniOps config_ops = {
        .section_begin = section_begin,
        .section_end = section_end,
        .known = "[Manager], [Queue]",
};

static int load_file(Config *c, const char *path, char **ret_error) {
        ConfigLoad l = { .config = c };
        int r = ini_load(path, 1024 * 1024, items, ELEMENTSOF(items), &config_ops, &l, ret_error);

        queue_config_done(&l.queue); /* a section cut short by an error */
        return r;
}

/* The seeds' three queues, there before any file is read, so that a [Queue] section
 * changes or adds one queue and never loses the others. NCI's: express work runs at once
 * by suspending normal work, and is charged three times normal's. Express is open to the
 * express group only (and admins): see corrald(8), QUEUES. */
static int add_builtin_queues(Config *c) {
        static const struct {
                const char *name;
                int32_t prio;
                double charge;
                const char *preempts, *group;
        } def[] = {
                { "express", 2, 3.0, "normal", CORRAL_EXPRESS_GROUP },
                { "normal", 1, 1.0, NULL, NULL },
                { "bonus", 0, 0.0, NULL, NULL },
        };

        c->queues = new0(QueueConfig, ELEMENTSOF(def));
        if (!c->queues)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(def); i++) {
                QueueConfig *q = &c->queues[c->n_queues++];

                *q = (QueueConfig) { .name = strdup(def[i].name), .priority = def[i].prio, .rerunnable = true,
                                     .charge_factor = def[i].charge, .preemptable = true, .allow_interactive = true,
                                     .builtin = true };
                if (!q->name || (def[i].preempts && strv_extend(&q->preempts, def[i].preempts) < 0) ||
                    (def[i].group && strv_extend(&q->allow_groups, def[i].group) < 0))
                        return -ENOMEM;
        }
        return 0;
}

/* Disabled=yes takes a queue out once every file is read (a later drop-in may say
 * Disabled=no again). A built-in's own Preempts= forgets a queue so removed: the admin
 * who removes normal did not write express's Preempts=normal. */
static int remove_disabled_queues(Config *c) {
        size_t n = 0;

        /* Allocations first, so that a failure leaves the queues as they were. */
        for (size_t i = 0; i < c->n_queues; i++)
                if (c->queues[i].disabled && c->queues[i].builtin &&
                    strv_extend(&c->removed_builtins, c->queues[i].name) < 0)
                        return -ENOMEM;
        for (size_t i = 0; i < c->n_queues; i++)
                if (c->queues[i].disabled)
                        queue_config_done(&c->queues[i]);
                else
                        c->queues[n++] = c->queues[i];
        c->n_queues = n;
        for (size_t i = 0; i < c->n_queues; i++) {
                QueueConfig *q = &c->queues[i];
                size_t k = 0;

                if (!q->builtin || strv_contains(q->overridden, "Preempts"))
                        continue;
                STRV_FOREACH(p, q->preempts)
                        if (strv_contains(c->removed_builtins, *p))
                                free(*p);
                        else
                                q->preempts[k++] = *p;
                if (q->preempts)
                        q->preempts[k] = NULL;
        }
        return 0;
}

/* "a, b, c", or "(none)" for an empty list. */
static char *join_names(char *const *l) {
        size_t n = 1;
        char *s, *p;

        if (!l || !l[0])
                return strdup("(none)");
        STRV_FOREACH(i, l)
                n += strlen(*i) + 2;
        s = p = malloc(n);
        if (!s)
                return NULL;
        STRV_FOREACH(i, l)
                p = stpcpy(stpcpy(p, i == l ? "" : ", "), *i);
        return s;
}

bool queue_config_allows(const QueueConfig *q, const char *project, char *const *group_names) {
        if (q->allow_projects && !(project && strv_contains(q->allow_projects, project)))
                return false;
        if (!q->allow_groups)
                return true;
        STRV_FOREACH(g, q->allow_groups)
                if (strv_contains(group_names, *g))
                        return true;
        return false;
}

int queue_config_refusal(const QueueConfig *q, const char *project, char **ret) {
        _cleanup_free_ char *groups = NULL, *projects = NULL;
        int r;

        if (q->allow_projects && !(project && strv_contains(q->allow_projects, project))) {
                projects = join_names(q->allow_projects);
                if (!projects)
                        return -ENOMEM;
                r = asprintf(ret,
                             "queue %s takes only jobs of the projects %s (its AllowProjects=), not of %s; an "
                             "administrator changes that in a [Queue] Name=%s section of corral.conf",
                             q->name, projects, project ?: "(none)", q->name);
        } else {
                groups = join_names(q->allow_groups);
                if (!groups)
                        return -ENOMEM;
                r = asprintf(ret,
                             "queue %s is open only to members of the groups %s (its AllowGroups=), root and the "
                             "operator group: an administrator adds you to one (gpasswd -a USER %s), or opens the "
                             "queue to everyone with an empty AllowGroups= in a [Queue] Name=%s section of "
                             "corral.conf (corral.conf(5))",
                             q->name, groups,
                             q->allow_groups && q->allow_groups[0] ? q->allow_groups[0] : "GROUP", q->name);
        }
        return r < 0 ? -ENOMEM : 0;
}

static int filename_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int config_load(const char *confdir, Config **ret, char **ret_error) {
        _cleanup_free_ char *main_path = NULL, *dropdir = NULL, *pdir = NULL;

        *ret_error = NULL;
        if (asprintf(&main_path, "%s/corral.conf", confdir) < 0 ||
            asprintf(&dropdir, "%s/corral.conf.d", confdir) < 0 || asprintf(&pdir, "%s/projects.d", confdir) < 0)
                return -ENOMEM;
        return config_load_paths(main_path, dropdir, pdir, ret, ret_error);
}

int config_load_paths(const char *main_path, const char *dropdir, const char *pdir, Config **ret,
                      char **ret_error) {
        _cleanup_(config_freep) Config *c = new0(Config, 1);
        _cleanup_strv_free_ char **files = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        int r;

        *ret_error = NULL;
        if (!c)
                return -ENOMEM;
        c->kill_wait_sec = 30;
        c->weights = SCHED_WEIGHTS_IT4I;
        c->max_jobs_per_user = 20000;
        c->max_array_size = 10000;
        c->max_stored_bytes_per_user = UINT64_C(256) << 20;
        c->max_connections_per_user = 32;
        c->max_waits_per_connection = 64;
        c->interactive_hangup_sec = CONFIG_INTERACTIVE_HANGUP_SEC_DEFAULT;
        c->max_connection_output = UINT64_C(4) << 20;
        c->request_share_per_user = 25;
        c->request_burst_per_user = 5;
        c->fairshare_half_life = 168 * 3600; /* IT4I: a week */
        c->max_xfactor = 1.25;                /* NCI */
        c->suspend_window_sec = 600;
        r = add_builtin_queues(c);
        if (r < 0)
                return r;
        r = main_path ? load_file(c, main_path, ret_error) : 0;
        if (r < 0)
                return r;
        d = dropdir ? opendir(dropdir) : NULL;
        if (d) {
                struct dirent *de;
                while ((de = readdir(d))) {
                        size_t n = strlen(de->d_name);
                        if (n > 5 && streq(de->d_name + n - 5, ".conf") && de->d_name[0] != '.') {
                                char *f;
                                if (asprintf(&f, "%s/%s", dropdir, de->d_name) < 0)
                                        return -ENOMEM;
                                if (strv_push(&files, f) < 0) {
                                        free(f);
                                        return -ENOMEM;
                                }
                        }
                }
                if (files) /* qsort() wants an array, even of none */
                        qsort(files, strv_length(files), sizeof(char *), filename_cmp);
                STRV_FOREACH(f, files)
                        if ((r = load_file(c, *f, ret_error)) < 0)
                                return r;
        }

        r = remove_disabled_queues(c);
        if (r < 0)
                return r;
        if (c->n_queues == 0) {
                if (asprintf(ret_error, "every queue is Disabled=yes: no job could be submitted") < 0)
                        *ret_error = NULL;
                return -EINVAL;
        }
        for (size_t i = 0; i < c->n_queues; i++) {
                QueueConfig *q = &c->queues[i];
                q->preempts_mask = 0;
                STRV_FOREACH(n, q->preempts) {
                        const QueueConfig *v = config_find_queue(c, *n);
                        size_t k = v ? (size_t) (v - c->queues) : 0;
                        const char *why = !v ? "no queue" : k == i ? "the queue itself (that is ParallelRun=)"
                                                     : k >= 64 ? "beyond the 64th queue" : NULL;
                        if (why) {
                                if (asprintf(ret_error, "[Queue] %s: Preempts= names %s, which is %s", q->name, *n,
                                             why) < 0)
                                        *ret_error = NULL;
                                return -EINVAL;
                        }
                        q->preempts_mask |= UINT64_C(1) << k;
                }
        }
        r = pdir ? projects_load(pdir, &c->projects, &c->n_projects, ret_error) : 0;
        if (r < 0) {
                if (r != -EINVAL && r != -ENOMEM && !*ret_error &&
                    asprintf(ret_error, "%s: cannot read: %s", pdir, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        r = check_projects(c, pdir, ret_error);
        if (r < 0)
                return r;
        if (!c->default_queue && !(c->default_queue = strdup(config_find_queue(c, "normal") ? "normal" : c->queues[0].name)))
                return -ENOMEM;
        if (!config_find_queue(c, c->default_queue)) {
                if (asprintf(ret_error, "DefaultQueue=%s names no configured queue", c->default_queue) < 0)
                        *ret_error = NULL;
                return -EINVAL;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

int config_sched(const Config *c, SchedConfig *ret) {
        SchedConfig s = SCHED_CONFIG_DEFAULT;

        if (c->policy)
                s.policy = sched_policy_from_name(c->policy);
        if (c->priority_type)
                s.priority = sched_priority_from_name(c->priority_type);
        s.weights = c->weights;
        s.ordering = c->shuffle ? SCHED_ORDERING_SHUFFLE : SCHED_ORDERING_PRIORITY;
        if (c->backfill_order && streq(c->backfill_order, "sjf"))
                s.backfill_order = SCHED_BACKFILL_SJF;
        s.preempt = (SchedPreempt) {
                .max_xfactor = c->max_xfactor,
                .suspend_window = c->suspend_window_sec,
                .max_suspend_time = c->max_suspend_time == UINT64_MAX ? 0 : c->max_suspend_time,
                .reclaim = c->reclaim_suspended,
        };
        for (size_t i = 0; i < c->n_queues; i++)
                if (c->queues[i].preempts_mask || c->queues[i].parallel_run)
                        s.preempt.enabled = true;
        *ret = s;
        return 0;
}
