/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fd-util.h"
#include "job-request.h"
#include "parse-util.h"
#include "strv.h"

Config *config_free(Config *c) {
        if (!c)
                return NULL;
        free(c->operator_group);
        free(c->default_queue);
        free(c->policy);
        free(c->backfill_order);
        free(c->priority_type);
        for (size_t i = 0; i < c->n_queues; i++)
                free(c->queues[i].name);
        free(c->queues);
        free(c);
        return NULL;
}

const QueueConfig *config_find_queue(const Config *c, const char *name) {
        for (size_t i = 0; i < c->n_queues; i++)
                if (streq(c->queues[i].name, name))
                        return &c->queues[i];
        return NULL;
}

typedef int (*ConfigParser)(const char *value, void *data);

static int parse_string(const char *v, void *data) {
        char **s = data, *d = strdup(v);
        if (!d)
                return -ENOMEM;
        free(*s);
        *s = isempty(d) ? mfree(d) : d;
        return 0;
}
static int parse_bool(const char *v, void *data) {
        int b = parse_boolean(v);
        if (b < 0)
                return b;
        *(bool *) data = b;
        return 0;
}
static int parse_sec(const char *v, void *data) {
        uint64_t s;
        int r = parse_duration(v, DURATION_PBS, &s);
        if (r < 0)
                return r;
        *(uint64_t *) data = s == DURATION_INFINITY ? 0 : s;
        return 0;
}
static int parse_u32(const char *v, void *data) {
        unsigned u;
        int r = safe_atou(v, &u);
        if (r < 0)
                return r;
        *(uint32_t *) data = u;
        return 0;
}
static int parse_i32(const char *v, void *data) {
        int i, r = safe_atoi(v, &i);
        if (r < 0)
                return r;
        if (i < -1000000 || i > 1000000)
                return -ERANGE;
        *(int32_t *) data = i;
        return 0;
}
static int parse_policy(const char *v, void *data) {
        if (!sched_policy_from_name(v))
                return -EINVAL;
        return parse_string(v, data);
}
static int parse_priority_type(const char *v, void *data) {
        if (!sched_priority_from_name(v))
                return -EINVAL;
        return parse_string(v, data);
}
static int parse_backfill_order(const char *v, void *data) {
        if (!streq(v, "priority") && !streq(v, "sjf"))
                return -EINVAL;
        return parse_string(v, data);
}
static int parse_ident(const char *v, void *data) {
        if (!ident_is_valid(v))
                return -EINVAL;
        return parse_string(v, data);
}

static int parse_bytes(const char *v, void *data) {
        uint64_t b;
        int r = parse_size(v, 1, &b);
        if (r < 0)
                return r;
        *(uint64_t *) data = b;
        return 0;
}

typedef struct ConfigItem {
        const char *section, *key;
        ConfigParser parse;
        size_t offset, size;
        const char *expect; /* for the error message */
} ConfigItem;

#define MGR(k, p, f, e) { "Manager", k, p, offsetof(Config, f), sizeof(((Config *) 0)->f), e }
#define QUE(k, p, f, e) { "Queue", k, p, offsetof(QueueConfig, f), sizeof(((QueueConfig *) 0)->f), e }
static const ConfigItem items[] = {
        MGR("OperatorGroup", parse_string, operator_group, "a group name"),
        MGR("UsersMaySuspend", parse_bool, users_may_suspend, "a boolean"),
        MGR("KillWaitSec", parse_sec, kill_wait_sec, "a duration"),
        MGR("DefaultQueue", parse_ident, default_queue, "a queue name"),
        MGR("MaxJobsPerUser", parse_u32, max_jobs_per_user, "a number (0: no limit)"),
        MGR("MaxArraySize", parse_u32, max_array_size, "a number of tasks (0: no limit)"),
        MGR("MaxStoredBytesPerUser", parse_bytes, max_stored_bytes_per_user, "a size such as 256M (0: no limit)"),
        MGR("MaxConnectionsPerUser", parse_u32, max_connections_per_user, "a number"),
        MGR("MaxWaitsPerConnection", parse_u32, max_waits_per_connection, "a number"),
        MGR("MaxConnectionOutput", parse_bytes, max_connection_output, "a size such as 4M"),
        MGR("Policy", parse_policy, policy, "fcfs, easy or conservative"),
        MGR("BackfillOrder", parse_backfill_order, backfill_order, "priority or sjf"),
        MGR("PriorityType", parse_priority_type, priority_type, "multifactor or fcfs"),
        QUE("Name", parse_ident, name, "a queue name ([A-Za-z0-9_.-], up to 64)"),
        QUE("Priority", parse_i32, priority, "an integer"),
        QUE("Rerunnable", parse_bool, rerunnable, "a boolean"),
        QUE("MaxWalltime", parse_sec, max_walltime, "a duration"),
        QUE("DefaultWalltime", parse_sec, default_walltime, "a duration"),
};

static char *strip(char *s) {
        char *e;
        while (isspace((unsigned char) *s))
                s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char) e[-1]))
                *--e = 0;
        return s;
}

_printf_(4, 0) static int error_at(char **ret_error, const char *file, unsigned line, const char *fmt,
                                   const char *a, const char *b) {
        char msg[512];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        snprintf(msg, sizeof msg, fmt, a, b);
#pragma GCC diagnostic pop
        free(*ret_error);
        if (asprintf(ret_error, "%s:%u: %s", file, line, msg) < 0)
                *ret_error = NULL;
        return -EINVAL;
}

/* A [Queue] section is collected whole, then merged into the queue of the same Name=
 * from an earlier file or section key by key, so a drop-in that sets only Priority=
 * keeps the MaxWalltime= the main file gave (systemd's drop-in semantics). */
typedef struct QueueSection {
        bool open;
        QueueConfig q;
        uint64_t set; /* bit i: items[i] was given */
        unsigned line;
} QueueSection;

static int queue_section_close(Config *c, QueueSection *sec, const char *path, char **ret_error) {
        QueueConfig *into;

        if (!sec->open)
                return 0;
        sec->open = false;
        if (!sec->q.name)
                return error_at(ret_error, path, sec->line, "a [Queue] section has no Name=%s%s", "", "");
        into = (QueueConfig *) config_find_queue(c, sec->q.name);
        if (!into) {
                QueueConfig *q = reallocarray(c->queues, c->n_queues + 1, sizeof *q);
                if (!q) {
                        free(sec->q.name);
                        return -ENOMEM;
                }
                c->queues = q;
                c->queues[c->n_queues++] = sec->q;
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(items); i++)
                if ((sec->set & (UINT64_C(1) << i)) && streq(items[i].section, "Queue") &&
                    items[i].offset != offsetof(QueueConfig, name))
                        memcpy((char *) into + items[i].offset, (char *) &sec->q + items[i].offset, items[i].size);
        free(sec->q.name);
        return 0;
}

static int load_file(Config *c, const char *path, char **ret_error) {
        _cleanup_free_ char *text = NULL;
        QueueSection sec = {};
        const char *section = NULL;
        unsigned line = 0;
        char *p, *next;
        int r;

        r = read_file_at(AT_FDCWD, path, 1024 * 1024, &text, NULL);
        if (r == -ENOENT)
                return 0;
        if (r < 0) {
                if (asprintf(ret_error, "%s: cannot read: %s", path, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        for (p = text; p; p = next) {
                char *l, *eq, *key, *value;

                next = strchr(p, '\n');
                if (next)
                        *next++ = 0;
                line++;
                l = strip(p);
                if (*l == 0 || *l == '#' || *l == ';')
                        continue;
                if (*l == '[') {
                        size_t n = strlen(l);
                        if (l[n - 1] != ']')
                                r = error_at(ret_error, path, line, "section header without ']': %s%s", l, "");
                        else if ((r = queue_section_close(c, &sec, path, ret_error)) >= 0) {
                                l[n - 1] = 0;
                                if (streq(l + 1, "Manager"))
                                        section = "Manager";
                                else if (streq(l + 1, "Queue")) {
                                        sec = (QueueSection) { .open = true, .q.rerunnable = true, .line = line };
                                        section = "Queue";
                                } else
                                        r = error_at(ret_error, path, line,
                                                     "unknown section [%s] (known: [Manager], [Queue])%s", l + 1, "");
                        }
                        if (r < 0)
                                goto fail;
                        continue;
                }
                eq = strchr(l, '=');
                if (!eq) {
                        r = error_at(ret_error, path, line, "expected KEY=VALUE, got '%s'%s", l, "");
                        goto fail;
                }
                *eq = 0;
                key = strip(l);
                value = strip(eq + 1);
                if (!section) {
                        r = error_at(ret_error, path, line, "%s= outside of a section%s", key, "");
                        goto fail;
                }
                size_t i;
                for (i = 0; i < ELEMENTSOF(items); i++)
                        if (streq(items[i].section, section) && streq(items[i].key, key))
                                break;
                if (i >= ELEMENTSOF(items)) {
                        r = error_at(ret_error, path, line, "unknown key %s= in this section%s", key, "");
                        goto fail;
                }
                r = items[i].parse(value, (char *) (streq(section, "Queue") ? (void *) &sec.q : (void *) c) +
                                                  items[i].offset);
                if (r == -ENOMEM)
                        goto fail;
                if (r < 0) {
                        r = error_at(ret_error, path, line, "invalid value for %s=, expected %s", key,
                                     items[i].expect);
                        goto fail;
                }
                if (streq(section, "Queue"))
                        sec.set |= UINT64_C(1) << i;
        }
        return queue_section_close(c, &sec, path, ret_error);
fail:
        free(sec.q.name);
        return r;
}

static int filename_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int config_load(const char *confdir, Config **ret, char **ret_error) {
        _cleanup_(config_freep) Config *c = new0(Config, 1);
        _cleanup_free_ char *main_path = NULL, *dropdir = NULL;
        _cleanup_strv_free_ char **files = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        int r;

        *ret_error = NULL;
        if (!c)
                return -ENOMEM;
        c->kill_wait_sec = 30;
        c->max_jobs_per_user = 20000;
        c->max_array_size = 10000;
        c->max_stored_bytes_per_user = UINT64_C(256) << 20;
        c->max_connections_per_user = 32;
        c->max_waits_per_connection = 64;
        c->max_connection_output = UINT64_C(4) << 20;
        if (asprintf(&main_path, "%s/corral.conf", confdir) < 0 || asprintf(&dropdir, "%s/corral.conf.d", confdir) < 0)
                return -ENOMEM;
        r = load_file(c, main_path, ret_error);
        if (r < 0)
                return r;
        d = opendir(dropdir);
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

        if (c->n_queues == 0) {
                /* The seeds' three queues. */
                static const struct { const char *name; int32_t prio; } def[] = {
                        { "express", 2 }, { "normal", 1 }, { "bonus", 0 } };
                c->queues = new0(QueueConfig, ELEMENTSOF(def));
                if (!c->queues)
                        return -ENOMEM;
                for (size_t i = 0; i < ELEMENTSOF(def); i++) {
                        c->queues[i] = (QueueConfig) { .name = strdup(def[i].name), .priority = def[i].prio,
                                                       .rerunnable = true };
                        if (!c->queues[i].name)
                                return -ENOMEM;
                        c->n_queues++;
                }
        }
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
        if (c->backfill_order && streq(c->backfill_order, "sjf"))
                s.backfill_order = SCHED_BACKFILL_SJF;
        *ret = s;
        return 0;
}
