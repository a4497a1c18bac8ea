/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fd-util.h"
#include "ini.h"
#include "job-request.h"
#include "projects.h"
#include "strv.h"

void project_config_done(ProjectConfig *p) {
        if (!p)
                return;
        free(p->name);
        strv_free(p->members);
        strv_free(p->default_for);
        strv_free(p->queues);
        for (size_t i = 0; i < p->n_users; i++)
                free(p->users[i].name);
        free(p->users);
        *p = (ProjectConfig) {};
}

/* Names: user names as useradd takes them, "@group" likewise. */
static bool member_is_valid(const char *s) {
        const char *n = s[0] == '@' ? s + 1 : s;

        if (!*n || strlen(n) > 32 || n[0] == '-')
                return false;
        for (const char *c = n; *c; c++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-$", *c))
                        return false;
        return true;
}

static int parse_members(const char *v, void *field) {
        return ini_parse_strv_checked(v, field, member_is_valid);
}

static int parse_queues(const char *v, void *field) {
        return ini_parse_strv_checked(v, field, ident_is_valid);
}

static int parse_on_spent(const char *v, void *field) {
        if (streq(v, "bonus"))
                *(bool *) field = false;
        else if (streq(v, "refuse"))
                *(bool *) field = true;
        else
                return -EINVAL;
        return 0;
}

/* A day, YYYY-MM-DD, as midnight UTC. */
static int parse_date(const char *v, void *field) {
        struct tm tm = {};
        const char *end = strptime(v, "%Y-%m-%d", &tm);
        time_t t;

        if (!end || *end)
                return -EINVAL;
        t = timegm(&tm);
        if (t < 0)
                return -ERANGE;
        *(uint64_t *) field = (uint64_t) t;
        return 0;
}

static int parse_cpus(const char *v, void *field) {
        SliceConfig *s = (SliceConfig *) ((char *) field - offsetof(SliceConfig, allowed_cpus));
        int r = cpu_set_parse(v, &s->allowed_cpus);

        if (r < 0)
                return r;
        if (cpu_set_is_empty(&s->allowed_cpus))
                return -EINVAL;
        s->have_allowed_cpus = true;
        return 0;
}

/* systemd's spelling: a size, or "infinity". */
static int parse_size_or_infinity(const char *v, void *field) {
        if (streq(v, "infinity")) {
                *(uint64_t *) field = UINT64_MAX;
                return 0;
        }
        return ini_parse_bytes(v, field);
}

static int parse_weight(const char *v, void *field) {
        uint64_t w;
        int r = ini_parse_u64(v, &w);

        if (r < 0)
                return r;
        if (w < 1 || w > 10000)
                return -ERANGE;
        *(uint64_t *) field = w;
        return 0;
}

static int parse_tasks(const char *v, void *field) {
        if (streq(v, "infinity")) {
                *(uint64_t *) field = UINT64_MAX;
                return 0;
        }
        return ini_parse_u64(v, field);
}

#define PRJ(k, p, f, e) INI_ITEM("Project", k, p, ProjectConfig, f, e)
#define LIM(k, p, f, e) INI_ITEM("Limits", k, p, ProjectConfig, f, e)
#define USR(k, p, f, e) INI_ITEM("User", k, p, ProjectUser, f, e)
#define SLC(k, p, f, e) INI_ITEM("Slice", k, p, ProjectConfig, slice.f, e)
static const IniItem items[] = {
        PRJ("Members", parse_members, members, "user names and @groups"),
        PRJ("DefaultFor", parse_members, default_for, "user names"),
        PRJ("Share", ini_parse_u32, share, "a number (the fair-share target)"),
        PRJ("Grant", ini_parse_u64, grant, "service units per period"),
        PRJ("GrantPeriod", ini_parse_sec, grant_period, "a duration such as 90d"),
        PRJ("GrantStart", parse_date, grant_start, "a date, YYYY-MM-DD"),
        PRJ("OnGrantSpent", parse_on_spent, grant_refuse, "bonus or refuse"),
        PRJ("Queues", parse_queues, queues, "queue names"),
        LIM("MaxCPUs", ini_parse_u32, total.max_cpus, "a number of CPUs"),
        LIM("MaxMemory", ini_parse_bytes, total.max_memory, "a size such as 64G"),
        LIM("MaxGPUs", ini_parse_u32, total.max_gpus, "a number of GPUs"),
        LIM("MaxRunningJobs", ini_parse_u32, total.max_running_jobs, "a number"),
        LIM("MaxWalltime", ini_parse_sec, total.max_walltime, "a duration"),
        LIM("MaxCPUsPerUser", ini_parse_u32, per_user.max_cpus, "a number of CPUs"),
        LIM("MaxMemoryPerUser", ini_parse_bytes, per_user.max_memory, "a size"),
        LIM("MaxGPUsPerUser", ini_parse_u32, per_user.max_gpus, "a number of GPUs"),
        LIM("MaxRunningJobsPerUser", ini_parse_u32, per_user.max_running_jobs, "a number"),
        LIM("MaxJobsPerUser", ini_parse_u32, per_user.max_jobs, "a number"),
        LIM("MaxIdleJobsPerUser", ini_parse_u32, per_user.max_idle_jobs, "a number"),
        LIM("MaxPSSoft", ini_parse_u64, per_user.max_ps_soft, "processor-seconds"),
        LIM("MaxPSHard", ini_parse_u64, per_user.max_ps_hard, "processor-seconds"),
        USR("Name", ini_parse_string, name, "a user name"),
        USR("MaxCPUs", ini_parse_u32, limits.max_cpus, "a number of CPUs"),
        USR("MaxMemory", ini_parse_bytes, limits.max_memory, "a size"),
        USR("MaxGPUs", ini_parse_u32, limits.max_gpus, "a number of GPUs"),
        USR("MaxRunningJobs", ini_parse_u32, limits.max_running_jobs, "a number"),
        USR("MaxWalltime", ini_parse_sec, limits.max_walltime, "a duration"),
        USR("MaxJobsPerUser", ini_parse_u32, limits.max_jobs, "a number"),
        USR("MaxIdleJobsPerUser", ini_parse_u32, limits.max_idle_jobs, "a number"),
        USR("MaxPSSoft", ini_parse_u64, limits.max_ps_soft, "processor-seconds"),
        USR("MaxPSHard", ini_parse_u64, limits.max_ps_hard, "processor-seconds"),
        SLC("AllowedCPUs", parse_cpus, allowed_cpus, "a CPU list such as 0-3,8"),
        SLC("MemoryMax", parse_size_or_infinity, memory_max, "a size or infinity"),
        SLC("MemoryHigh", parse_size_or_infinity, memory_high, "a size or infinity"),
        SLC("CPUWeight", parse_weight, cpu_weight, "1 to 10000"),
        SLC("IOWeight", parse_weight, io_weight, "1 to 10000"),
        SLC("TasksMax", parse_tasks, tasks_max, "a number or infinity"),
};

/* A user section's limits start from the project's per-user ones; each key it sets
 * replaces one. The order of sections in the file does not matter for that. */
typedef struct ProjectLoad {
        ProjectConfig *project;
        ProjectUser user;
        uint64_t *user_sets; /* per project user: which keys its section set */
} ProjectLoad;

static void *section_begin(void *userdata, const char *section) {
        ProjectLoad *l = userdata;

        if (streq(section, "Project") || streq(section, "Limits") || streq(section, "Slice"))
                return l->project;
        if (streq(section, "User")) {
                l->user = (ProjectUser) {};
                return &l->user;
        }
        return NULL;
}

static int section_end(void *userdata, const char *section, void *target, uint64_t set, const char *path,
                       unsigned line, char **ret_error) {
        ProjectLoad *l = userdata;
        ProjectConfig *p = l->project;
        ProjectUser *u;
        uint64_t *sets;

        if (!streq(section, "User"))
                return 0;
        if (!l->user.name)
                return ini_error(ret_error, path, line, "a [User] section has no Name=");
        if (!member_is_valid(l->user.name) || l->user.name[0] == '@')
                return ini_error(ret_error, path, line, "[User] Name=%s is not a user name", l->user.name);
        for (size_t i = 0; i < p->n_users; i++)
                if (streq(p->users[i].name, l->user.name))
                        return ini_error(ret_error, path, line, "a second [User] section for %s", l->user.name);
        u = reallocarray(p->users, p->n_users + 1, sizeof *u);
        if (!u)
                return -ENOMEM;
        p->users = u;
        sets = reallocarray(l->user_sets, p->n_users + 1, sizeof *sets);
        if (!sets)
                return -ENOMEM;
        l->user_sets = sets;
        p->users[p->n_users] = l->user;
        l->user_sets[p->n_users++] = set;
        l->user = (ProjectUser) {};
        return 0;
}

static const IniOps project_ops = {
        .section_begin = section_begin,
        .section_end = section_end,
        .known = "[Project], [Limits], [User], [Slice]",
};

static int cmp_user(const void *a, const void *b) {
        return strcmp(((const ProjectUser *) a)->name, ((const ProjectUser *) b)->name);
}

static int load_one(const char *path, const char *name, ProjectConfig *ret, char **ret_error) {
        ProjectConfig p = { .name = strdup(name) };
        ProjectLoad l = { .project = &p };
        int r;

        if (!p.name)
                return -ENOMEM;
        r = ini_load(path, 256 * 1024, items, ELEMENTSOF(items), &project_ops, &l, ret_error);
        free(l.user.name);
        if (r < 0)
                goto fail;
        if (p.grant && !p.grant_period) {
                r = ini_error(ret_error, path, 1, "Grant= needs GrantPeriod=");
                goto fail;
        }
        /* Each user's limits: the project's per-user values, with the keys their section set. */
        for (size_t i = 0; i < p.n_users; i++) {
                SchedLimits own = p.users[i].limits;
                p.users[i].limits = p.per_user;
                for (size_t k = 0; k < ELEMENTSOF(items); k++)
                        if (streq(items[k].section, "User") && ini_item_set(items, k, l.user_sets[i]) &&
                            items[k].offset != offsetof(ProjectUser, name))
                                memcpy((char *) &p.users[i] + items[k].offset,
                                       (char *) &own + items[k].offset - offsetof(ProjectUser, limits), items[k].size);
        }
        if (p.n_users > 0) /* qsort() wants an array, even of none */
                qsort(p.users, p.n_users, sizeof(ProjectUser), cmp_user);
        free(l.user_sets);
        *ret = p;
        return 0;
fail:
        free(l.user_sets);
        project_config_done(&p);
        return r;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int projects_load(const char *dir, ProjectConfig **ret, size_t *ret_n, char **ret_error) {
        _cleanup_closedir_ DIR *d = opendir(dir);
        _cleanup_strv_free_ char **names = NULL;
        ProjectConfig *list = NULL;
        size_t n = 0;
        struct dirent *de;
        int r = 0;

        *ret = NULL;
        *ret_n = 0;
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        while ((de = readdir(d))) {
                size_t len = strlen(de->d_name);
                _cleanup_free_ char *name = NULL;

                if (de->d_name[0] == '.' || len <= 5 || !streq(de->d_name + len - 5, ".conf"))
                        continue;
                name = strndup(de->d_name, len - 5);
                if (!name)
                        return -ENOMEM;
                if (!ident_is_valid(name)) {
                        free(*ret_error);
                        if (asprintf(ret_error, "%s/%s: a project's name (the file's name without .conf) must be "
                                     "[A-Za-z0-9_.-], up to 64", dir, de->d_name) < 0)
                                *ret_error = NULL;
                        return -EINVAL;
                }
                /* Its slice, corral-mail.slice, is job mail's (units/). */
                if (streq(name, "mail")) {
                        free(*ret_error);
                        if (asprintf(ret_error, "%s/%s: the project name \"mail\" is reserved (corral-mail.slice "
                                     "holds job mail); rename the file", dir, de->d_name) < 0)
                                *ret_error = NULL;
                        return -EINVAL;
                }
                if (strv_push(&names, name) < 0)
                        return -ENOMEM;
                TAKE_PTR(name);
        }
        if (!names)
                return 0;
        qsort(names, strv_length(names), sizeof(char *), cmp_str);
        list = new0(ProjectConfig, strv_length(names));
        if (!list)
                return -ENOMEM;
        STRV_FOREACH(name, names) {
                _cleanup_free_ char *path = NULL;
                if (asprintf(&path, "%s/%s.conf", dir, *name) < 0) {
                        r = -ENOMEM;
                        break;
                }
                r = load_one(path, *name, &list[n], ret_error);
                if (r < 0)
                        break;
                n++;
        }
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        project_config_done(&list[i]);
                free(list);
                return r;
        }
        *ret = list;
        *ret_n = n;
        return 0;
}

bool project_has_member(const ProjectConfig *p, const char *user, const char *const *group_names) {
        STRV_FOREACH(m, p->members) {
                if ((*m)[0] != '@') {
                        if (streq(*m, user))
                                return true;
                        continue;
                }
                for (const char *const *g = group_names; g && *g; g++)
                        if (streq(*m + 1, *g))
                                return true;
        }
        return false;
}

bool project_allows_queue(const ProjectConfig *p, const char *queue) {
        return !p->queues || strv_contains(p->queues, queue);
}
