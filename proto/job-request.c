/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "job-request.h"
#include "json-util.h"
#include "parse-util.h"
#include "protocol.h"
#include "strv.h"

static const char *const dependency_type_table[_DEPENDENCY_TYPE_MAX] = {
        [DEPENDENCY_AFTER] = "after",
        [DEPENDENCY_AFTERANY] = "afterany",
        [DEPENDENCY_AFTEROK] = "afterok",
        [DEPENDENCY_AFTERNOTOK] = "afternotok",
};

DEFINE_STRING_TABLE_LOOKUP(dependency_type, DependencyType);

static bool strv_isempty(char *const *l) {
        return !l || !l[0];
}

/* ---- Array specs ---- */

static int eat_u32(const char **p, uint32_t max, uint32_t *ret) {
        uint64_t v = 0;

        if (!isdigit((unsigned char) **p))
                return -EINVAL;
        for (; isdigit((unsigned char) **p); (*p)++) {
                v = v * 10 + (uint64_t) (**p - '0');
                if (v > max)
                        return -ERANGE;
        }
        *ret = (uint32_t) v;
        return 0;
}

int array_spec_parse(const char *s, ArraySpec *ret) {
        ArraySpec a = { .set = true, .step = 1 };
        const char *p = s;
        int r;

        if (isempty(s))
                return -EINVAL;
        r = eat_u32(&p, CORRAL_ARRAY_INDEX_MAX, &a.start);
        if (r < 0)
                return r;
        a.end = a.start;
        if (*p == '-') {
                p++;
                r = eat_u32(&p, CORRAL_ARRAY_INDEX_MAX, &a.end);
                if (r < 0)
                        return r;
                if (*p == ':') {
                        p++;
                        r = eat_u32(&p, CORRAL_ARRAY_INDEX_MAX, &a.step);
                        if (r < 0)
                                return r;
                        if (a.step == 0)
                                return -EINVAL;
                }
        }
        if (*p == '%') {
                p++;
                r = eat_u32(&p, CORRAL_ARRAY_TASKS_MAX, &a.max_concurrent);
                if (r < 0)
                        return r;
                if (a.max_concurrent == 0)
                        return -EINVAL;
        }
        if (*p != '\0' || a.start > a.end)
                return -EINVAL;
        if (array_spec_count(&a) > CORRAL_ARRAY_TASKS_MAX)
                return -ERANGE;
        *ret = a;
        return 0;
}

uint32_t array_spec_count(const ArraySpec *a) {
        if (!a->set || a->step == 0 || a->start > a->end)
                return 0;
        return (a->end - a->start) / a->step + 1;
}

char *array_spec_format(const ArraySpec *a, char *buf, size_t size) {
        int n;

        if (a->start == a->end)
                n = snprintf(buf, size, "%" PRIu32, a->start);
        else if (a->step == 1)
                n = snprintf(buf, size, "%" PRIu32 "-%" PRIu32, a->start, a->end);
        else
                n = snprintf(buf, size, "%" PRIu32 "-%" PRIu32 ":%" PRIu32, a->start, a->end, a->step);
        if (a->max_concurrent > 0 && n >= 0 && (size_t) n < size)
                snprintf(buf + n, size - (size_t) n, "%%%" PRIu32, a->max_concurrent);
        return buf;
}

/* ---- Validators ---- */

bool env_name_is_valid(const char *s, size_t n) {
        /* Shell-ish names, but any printable character after the first so bash's exported
         * functions ("BASH_FUNC_f%%") survive --export=ALL. */
        if (n == 0 || !(isalpha((unsigned char) s[0]) || s[0] == '_'))
                return false;
        for (size_t i = 1; i < n; i++)
                if (s[i] <= ' ' || s[i] >= 0x7f || s[i] == '=')
                        return false;
        return true;
}

bool env_assignment_is_valid(const char *s) {
        const char *eq;

        if (!s)
                return false;
        eq = strchr(s, '=');
        if (!eq)
                return false;
        return env_name_is_valid(s, (size_t) (eq - s)) && strlen(s) <= CORRAL_ARG_LENGTH_MAX;
}

bool ident_is_valid(const char *s) {
        size_t n;

        if (isempty(s))
                return false;
        n = strlen(s);
        if (n > CORRAL_IDENT_LENGTH_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) s[i]) && !strchr("_.-", s[i]))
                        return false;
        return true;
}

bool job_name_is_valid(const char *s) {
        size_t n;

        if (isempty(s))
                return false;
        n = strlen(s);
        if (n > CORRAL_NAME_LENGTH_MAX)
                return false;
        /* Control characters would garble the queue listing. */
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) s[i] < ' ' || s[i] == 0x7f)
                        return false;
        return true;
}

static bool path_is_valid(const char *s, bool absolute) {
        size_t n;

        if (isempty(s))
                return false;
        n = strlen(s);
        if (n > CORRAL_PATH_LENGTH_MAX)
                return false;
        if (absolute && s[0] != '/')
                return false;
        for (size_t i = 0; i < n; i++)
                if (s[i] == '\n')
                        return false;
        return true;
}

/* ---- SubmitRequest ---- */

void io_device_limits_done(IoDeviceLimits *l) {
        if (!l)
                return;
        for (size_t i = 0; i < l->n; i++)
                free(l->items[i].device);
        l->items = mfree(l->items);
        l->n = 0;
}

int io_device_limits_add(IoDeviceLimits *l, const char *device, uint64_t limit) {
        IoDeviceLimit *n;
        char *d;

        /* A later entry for the same device replaces the earlier one, as repeated
         * options do. */
        for (size_t i = 0; i < l->n; i++)
                if (streq(l->items[i].device, device)) {
                        l->items[i].limit = limit;
                        return 0;
                }
        d = strdup(device);
        if (!d)
                return -ENOMEM;
        n = reallocarray(l->items, l->n + 1, sizeof(IoDeviceLimit));
        if (!n) {
                free(d);
                return -ENOMEM;
        }
        l->items = n;
        l->items[l->n++] = (IoDeviceLimit) { .device = d, .limit = limit };
        return 0;
}

int submit_request_add_dependency(SubmitRequest *req, DependencyType type, uint64_t job_id) {
        JobDependency *n;

        n = reallocarray(req->dependencies, req->n_dependencies + 1, sizeof(JobDependency));
        if (!n)
                return -ENOMEM;
        req->dependencies = n;
        req->dependencies[req->n_dependencies++] = (JobDependency) { .type = type, .job_id = job_id };
        return 0;
}

void submit_request_done(SubmitRequest *req) {
        if (!req)
                return;
        free(req->name);
        strv_free(req->argv);
        free(req->script);
        strv_free(req->env);
        free(req->workdir);
        free(req->stdin_path);
        free(req->stdout_path);
        free(req->stderr_path);
        io_device_limits_done(&req->io_read_bw);
        io_device_limits_done(&req->io_write_bw);
        io_device_limits_done(&req->io_read_iops);
        io_device_limits_done(&req->io_write_iops);
        free(req->queue);
        free(req->project);
        free(req->dependencies);
        *req = (SubmitRequest) SUBMIT_REQUEST_INIT;
}

static int io_limits_validate(const IoDeviceLimits *l) {
        if (l->n > CORRAL_IO_DEVICES_MAX)
                return -EINVAL;
        for (size_t i = 0; i < l->n; i++)
                if (!path_is_valid(l->items[i].device, true) || l->items[i].limit == 0 ||
                    l->items[i].limit > CORRAL_SIZE_MAX)
                        return -EINVAL;
        return 0;
}

static bool strv_entries_valid(char *const *l, size_t max_entries, bool env) {
        if (strv_length(l) > max_entries)
                return false;
        STRV_FOREACH(s, l)
                if (env ? !env_assignment_is_valid(*s) : strlen(*s) > CORRAL_ARG_LENGTH_MAX)
                        return false;
        return true;
}

int submit_request_validate(const SubmitRequest *req, const char **ret_bad_field) {
        const char *bad = NULL;

        assert(req);

#define CHECK(cond, field)                                                                 \
        if (!bad && !(cond))                                                               \
                bad = (field)

        CHECK(!req->name || job_name_is_valid(req->name), "name");
        CHECK(!(req->argv && req->script), "script");
        CHECK(req->argv || req->script, "argv");
        CHECK(!req->argv || (!strv_isempty(req->argv) && !isempty(req->argv[0]) &&
                             strv_entries_valid(req->argv, CORRAL_ARGV_MAX, false)), "argv");
        CHECK(!req->script || (req->script[0] && strlen(req->script) <= CORRAL_SCRIPT_SIZE_MAX), "script");
        CHECK(strv_entries_valid(req->env, CORRAL_ENV_MAX, true), "env");
        CHECK(!req->workdir || path_is_valid(req->workdir, true), "workdir");
        CHECK(!req->stdin_path || path_is_valid(req->stdin_path, false), "stdin_path");
        CHECK(!req->stdout_path || path_is_valid(req->stdout_path, false), "stdout_path");
        CHECK(!req->stderr_path || path_is_valid(req->stderr_path, false), "stderr_path");
        CHECK(req->cpus <= CORRAL_CPUS_MAX, "cpus");
        CHECK(req->memory <= CORRAL_SIZE_MAX, "memory");
        CHECK(req->walltime_sec <= CORRAL_WALLTIME_MAX || req->walltime_sec == CORRAL_WALLTIME_INFINITY,
              "walltime_sec");
        CHECK(io_limits_validate(&req->io_read_bw) >= 0, "io_read_bw");
        CHECK(io_limits_validate(&req->io_write_bw) >= 0, "io_write_bw");
        CHECK(io_limits_validate(&req->io_read_iops) >= 0, "io_read_iops");
        CHECK(io_limits_validate(&req->io_write_iops) >= 0, "io_write_iops");
        CHECK(req->io_weight == 0 || (req->io_weight >= CORRAL_IO_WEIGHT_MIN && req->io_weight <= CORRAL_IO_WEIGHT_MAX),
              "io_weight");
        CHECK(req->tasks_max <= CORRAL_TASKS_MAX_MAX, "tasks_max");
        CHECK(req->umask <= CORRAL_UMASK_MAX, "umask");
        CHECK(!req->queue || ident_is_valid(req->queue), "queue");
        CHECK(!req->project || ident_is_valid(req->project), "project");
        CHECK(req->rerunnable >= -1 && req->rerunnable <= 1, "rerunnable");
        CHECK(req->nice >= CORRAL_NICE_MIN && req->nice <= CORRAL_NICE_MAX, "nice");
        CHECK(req->n_dependencies <= CORRAL_DEPENDENCIES_MAX, "dependencies");
        for (size_t i = 0; i < req->n_dependencies; i++) {
                CHECK(dependency_type_to_string(req->dependencies[i].type), "dependencies");
                CHECK(req->dependencies[i].job_id >= 1 && req->dependencies[i].job_id <= CORRAL_JOB_ID_MAX,
                      "dependencies");
        }
        CHECK(!req->array.set || (req->array.step >= 1 && req->array.start <= req->array.end &&
                                  req->array.end <= CORRAL_ARRAY_INDEX_MAX &&
                                  array_spec_count(&req->array) <= CORRAL_ARRAY_TASKS_MAX &&
                                  req->array.max_concurrent <= CORRAL_ARRAY_TASKS_MAX), "array");
        CHECK(req->begin_time <= CORRAL_TIME_MAX, "begin_time");
#undef CHECK

        if (bad) {
                if (ret_bad_field)
                        *ret_bad_field = bad;
                return -EINVAL;
        }
        return 0;
}

static int io_limits_to_json(json_object *o, const char *key, const IoDeviceLimits *l) {
        _cleanup_json_ json_object *a = NULL;

        if (l->n == 0)
                return 0;
        a = json_object_new_array();
        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < l->n; i++) {
                _cleanup_json_ json_object *e = json_object_new_object();
                if (!e || json_add_string(e, "device", l->items[i].device) < 0 ||
                    json_add_u64(e, "limit", l->items[i].limit) < 0 || json_object_array_add(a, e) < 0)
                        return -ENOMEM;
                TAKE_PTR(e);
        }
        return json_add(o, key, TAKE_PTR(a));
}

int submit_request_to_json(const SubmitRequest *req, json_object **ret) {
        _cleanup_json_ json_object *o = NULL;
        int r = 0;

        assert(req);
        assert(ret);

        o = json_object_new_object();
        if (!o)
                return -ENOMEM;

#define ADD(call)                                                                          \
        do {                                                                               \
                if (r >= 0)                                                                \
                        r = (call);                                                        \
        } while (0)

        ADD(json_add_string(o, "name", req->name));
        ADD(json_add_strv(o, "argv", req->argv));
        ADD(json_add_string(o, "script", req->script));
        ADD(json_add_strv(o, "env", req->env));
        ADD(json_add_string(o, "workdir", req->workdir));
        ADD(json_add_string(o, "stdin_path", req->stdin_path));
        ADD(json_add_string(o, "stdout_path", req->stdout_path));
        ADD(json_add_string(o, "stderr_path", req->stderr_path));
        if (req->cpus > 0)
                ADD(json_add_u64(o, "cpus", req->cpus));
        if (req->memory > 0)
                ADD(json_add_u64(o, "memory", req->memory));
        if (req->walltime_sec == CORRAL_WALLTIME_INFINITY)
                ADD(json_add_string(o, "walltime_sec", "infinity"));
        else if (req->walltime_sec > 0)
                ADD(json_add_u64(o, "walltime_sec", req->walltime_sec));
        ADD(io_limits_to_json(o, "io_read_bw", &req->io_read_bw));
        ADD(io_limits_to_json(o, "io_write_bw", &req->io_write_bw));
        ADD(io_limits_to_json(o, "io_read_iops", &req->io_read_iops));
        ADD(io_limits_to_json(o, "io_write_iops", &req->io_write_iops));
        if (req->io_weight > 0)
                ADD(json_add_u64(o, "io_weight", req->io_weight));
        if (req->tasks_max > 0)
                ADD(json_add_u64(o, "tasks_max", req->tasks_max));
        if (req->umask != CORRAL_UMASK_DEFAULT)
                ADD(json_add_u64(o, "umask", req->umask));
        ADD(json_add_string(o, "queue", req->queue));
        ADD(json_add_string(o, "project", req->project));
        if (req->exclusive)
                ADD(json_add_bool(o, "exclusive", true));
        if (req->rerunnable >= 0)
                ADD(json_add_bool(o, "rerunnable", req->rerunnable));
        if (req->hold)
                ADD(json_add_bool(o, "hold", true));
        if (req->nice != 0)
                ADD(json_add_i64(o, "nice", req->nice));
        if (req->n_dependencies > 0) {
                _cleanup_json_ json_object *a = json_object_new_array();
                if (!a)
                        return -ENOMEM;
                for (size_t i = 0; r >= 0 && i < req->n_dependencies; i++) {
                        _cleanup_json_ json_object *e = json_object_new_object();
                        if (!e || json_add_string(e, "type", dependency_type_to_string(req->dependencies[i].type)) < 0 ||
                            json_add_u64(e, "job_id", req->dependencies[i].job_id) < 0 ||
                            json_object_array_add(a, e) < 0)
                                return -ENOMEM;
                        TAKE_PTR(e);
                }
                ADD(json_add(o, "dependencies", TAKE_PTR(a)));
        }
        if (req->array.set) {
                char buf[64];
                ADD(json_add_string(o, "array", array_spec_format(&req->array, buf, sizeof(buf))));
        }
        if (req->begin_time > 0)
                ADD(json_add_u64(o, "begin_time", req->begin_time));
#undef ADD
        if (r < 0)
                return r;

        *ret = TAKE_PTR(o);
        return 0;
}

static int io_limits_from_json(json_object *a, IoDeviceLimits *l) {
        size_t n;
        int r;

        if (!json_object_is_type(a, json_type_array))
                return -EINVAL;
        n = json_object_array_length(a);
        if (n > CORRAL_IO_DEVICES_MAX)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(a, i), *dev, *lim;
                const char *device;
                uint64_t limit;

                if (!json_object_is_type(e, json_type_object) || json_object_object_length(e) != 2 ||
                    !json_object_object_get_ex(e, "device", &dev) || !json_object_object_get_ex(e, "limit", &lim))
                        return -EINVAL;
                if (json_get_string(dev, 1, CORRAL_PATH_LENGTH_MAX, &device) < 0 || device[0] != '/' ||
                    json_get_u64(lim, 1, CORRAL_SIZE_MAX, &limit) < 0)
                        return -EINVAL;
                r = io_device_limits_add(l, device, limit);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int dependencies_from_json(json_object *a, SubmitRequest *req) {
        size_t n;
        int r;

        if (!json_object_is_type(a, json_type_array))
                return -EINVAL;
        n = json_object_array_length(a);
        if (n > CORRAL_DEPENDENCIES_MAX)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(a, i), *t, *id;
                const char *type;
                DependencyType dt;
                uint64_t job_id;

                if (!json_object_is_type(e, json_type_object) || json_object_object_length(e) != 2 ||
                    !json_object_object_get_ex(e, "type", &t) || !json_object_object_get_ex(e, "job_id", &id))
                        return -EINVAL;
                if (json_get_string(t, 1, 32, &type) < 0 || (dt = dependency_type_from_string(type)) < 0 ||
                    json_get_u64(id, 1, CORRAL_JOB_ID_MAX, &job_id) < 0)
                        return -EINVAL;
                r = submit_request_add_dependency(req, dt, job_id);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int submit_request_field_from_json(const char *key, json_object *v, SubmitRequest *req) {
        uint64_t u = 0;
        int64_t i = 0;
        bool b = false;
        int r;

        /* The locals are assigned to req even when parsing failed: harmless, the whole
         * request is thrown away then, but they must hold defined values. */
        if (streq(key, "name")) {
                r = json_dup_string(v, 1, CORRAL_NAME_LENGTH_MAX, &req->name);
                if (r >= 0 && !job_name_is_valid(req->name))
                        r = -EINVAL;
        } else if (streq(key, "argv")) {
                r = json_get_strv(v, CORRAL_ARGV_MAX, CORRAL_ARG_LENGTH_MAX, &req->argv);
                if (r >= 0 && (strv_isempty(req->argv) || isempty(req->argv[0])))
                        r = -EINVAL;
        } else if (streq(key, "script"))
                r = json_dup_string(v, 1, CORRAL_SCRIPT_SIZE_MAX, &req->script);
        else if (streq(key, "env")) {
                r = json_get_strv(v, CORRAL_ENV_MAX, CORRAL_ARG_LENGTH_MAX, &req->env);
                if (r >= 0 && !strv_entries_valid(req->env, CORRAL_ENV_MAX, true))
                        r = -EINVAL;
        } else if (streq(key, "workdir")) {
                r = json_dup_string(v, 1, CORRAL_PATH_LENGTH_MAX, &req->workdir);
                if (r >= 0 && !path_is_valid(req->workdir, true))
                        r = -EINVAL;
        } else if (streq(key, "stdin_path") || streq(key, "stdout_path") || streq(key, "stderr_path")) {
                char **p = key[3] == 'i' ? &req->stdin_path : key[3] == 'o' ? &req->stdout_path : &req->stderr_path;
                r = json_dup_string(v, 1, CORRAL_PATH_LENGTH_MAX, p);
                if (r >= 0 && !path_is_valid(*p, false))
                        r = -EINVAL;
        } else if (streq(key, "cpus")) {
                r = json_get_u64(v, 1, CORRAL_CPUS_MAX, &u);
                req->cpus = (unsigned) u;
        } else if (streq(key, "memory"))
                r = json_get_u64(v, 1, CORRAL_SIZE_MAX, &req->memory);
        else if (streq(key, "walltime_sec")) {
                if (json_object_is_type(v, json_type_string)) {
                        r = streq(json_object_get_string(v), "infinity") ? 0 : -EINVAL;
                        req->walltime_sec = CORRAL_WALLTIME_INFINITY;
                } else
                        r = json_get_u64(v, 1, CORRAL_WALLTIME_MAX, &req->walltime_sec);
        } else if (streq(key, "io_read_bw"))
                r = io_limits_from_json(v, &req->io_read_bw);
        else if (streq(key, "io_write_bw"))
                r = io_limits_from_json(v, &req->io_write_bw);
        else if (streq(key, "io_read_iops"))
                r = io_limits_from_json(v, &req->io_read_iops);
        else if (streq(key, "io_write_iops"))
                r = io_limits_from_json(v, &req->io_write_iops);
        else if (streq(key, "io_weight")) {
                r = json_get_u64(v, CORRAL_IO_WEIGHT_MIN, CORRAL_IO_WEIGHT_MAX, &u);
                req->io_weight = (unsigned) u;
        } else if (streq(key, "tasks_max"))
                r = json_get_u64(v, 1, CORRAL_TASKS_MAX_MAX, &req->tasks_max);
        else if (streq(key, "umask")) {
                /* A number, as umask(2) has it; 0 is a valid umask. */
                r = json_get_u64(v, 0, CORRAL_UMASK_MAX, &u);
                req->umask = (mode_t) u;
        } else if (streq(key, "queue") || streq(key, "project")) {
                char **p = key[0] == 'q' ? &req->queue : &req->project;
                r = json_dup_string(v, 1, CORRAL_IDENT_LENGTH_MAX, p);
                if (r >= 0 && !ident_is_valid(*p))
                        r = -EINVAL;
        } else if (streq(key, "exclusive"))
                r = json_get_bool(v, &req->exclusive);
        else if (streq(key, "rerunnable")) {
                r = json_get_bool(v, &b);
                req->rerunnable = b;
        } else if (streq(key, "hold"))
                r = json_get_bool(v, &req->hold);
        else if (streq(key, "nice")) {
                r = json_get_i64(v, CORRAL_NICE_MIN, CORRAL_NICE_MAX, &i);
                req->nice = (int) i;
        } else if (streq(key, "dependencies"))
                r = dependencies_from_json(v, req);
        else if (streq(key, "array")) {
                const char *s;
                r = json_get_string(v, 1, 64, &s);
                if (r >= 0)
                        r = array_spec_parse(s, &req->array) < 0 ? -EINVAL : 0;
        } else if (streq(key, "begin_time"))
                r = json_get_u64(v, 1, CORRAL_TIME_MAX, &req->begin_time);
        else
                r = -EINVAL; /* unknown keys: a typo must not silently drop a limit */
        return r;
}

int submit_request_from_json(json_object *o, SubmitRequest *ret, const char **ret_bad_field) {
        _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
        int r;

        assert(ret);

        *ret = (SubmitRequest) SUBMIT_REQUEST_INIT;

        if (!json_object_is_type(o, json_type_object)) {
                if (ret_bad_field)
                        *ret_bad_field = "parameters";
                return -EINVAL;
        }

        json_object_object_foreach(o, key, v) {
                r = submit_request_field_from_json(key, v, &req);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        /* Unknown keys are named as sent; point into o, which the caller
                         * holds for as long as it needs the answer. */
                        if (ret_bad_field)
                                *ret_bad_field = key;
                        return -EINVAL;
                }
        }

        r = submit_request_validate(&req, ret_bad_field);
        if (r < 0)
                return r;

        *ret = req;
        req = (SubmitRequest) SUBMIT_REQUEST_INIT;
        return 0;
}

/* ---- JobInfo ---- */

void job_info_done(JobInfo *info) {
        if (!info)
                return;
        free(info->name);
        free(info->user);
        free(info->project);
        free(info->queue);
        free(info->state);
        free(info->reason);
        free(info->node);
        free(info->cpus_allocated);
        strv_free(info->argv);
        strv_free(info->env);
        free(info->workdir);
        free(info->stdin_path);
        free(info->stdout_path);
        free(info->stderr_path);
        *info = (JobInfo) JOB_INFO_INIT;
}

int job_info_to_json(const JobInfo *info, bool details, json_object **ret) {
        _cleanup_json_ json_object *o = NULL;
        int r = 0;

        assert(info);
        assert(ret);

        o = json_object_new_object();
        if (!o)
                return -ENOMEM;

#define ADD(call)                                                                          \
        do {                                                                               \
                if (r >= 0)                                                                \
                        r = (call);                                                        \
        } while (0)

        ADD(json_add_u64(o, "id", info->id));
        ADD(json_add_string(o, "name", info->name));
        ADD(json_add_string(o, "user", info->user));
        ADD(json_add_u64(o, "uid", info->uid));
        ADD(json_add_string(o, "project", info->project));
        ADD(json_add_string(o, "queue", info->queue));
        ADD(json_add_string(o, "state", info->state));
        ADD(json_add_string(o, "reason", info->reason));
        ADD(json_add_u64(o, "cpus", info->cpus));
        ADD(json_add_u64(o, "memory", info->memory));
        if (info->walltime_sec == CORRAL_WALLTIME_INFINITY)
                ADD(json_add_string(o, "walltime_sec", "infinity"));
        else
                ADD(json_add_u64(o, "walltime_sec", info->walltime_sec));
        ADD(json_add_i64(o, "nice", info->nice));
        if (info->submit_time > 0)
                ADD(json_add_u64(o, "submit_time", info->submit_time));
        if (info->start_time > 0)
                ADD(json_add_u64(o, "start_time", info->start_time));
        if (info->end_time > 0)
                ADD(json_add_u64(o, "end_time", info->end_time));
        if (info->exit_code >= 0)
                ADD(json_add_i64(o, "exit_code", info->exit_code));
        if (info->exit_signal > 0)
                ADD(json_add_i64(o, "exit_signal", info->exit_signal));
        ADD(json_add_string(o, "node", info->node));
        ADD(json_add_string(o, "cpus_allocated", info->cpus_allocated));
        if (info->array_job_id > 0) {
                ADD(json_add_u64(o, "array_job_id", info->array_job_id));
                ADD(json_add_u64(o, "array_task_id", info->array_task_id));
        }

        if (details && info->has_details) {
                _cleanup_json_ json_object *u = json_object_new_object();

                if (!u)
                        return -ENOMEM;
                ADD(json_add_strv(o, "argv", info->argv));
                ADD(json_add_bool(o, "has_script", info->has_script));
                ADD(json_add_strv(o, "env", info->env));
                ADD(json_add_string(o, "workdir", info->workdir));
                ADD(json_add_string(o, "stdin_path", info->stdin_path));
                ADD(json_add_string(o, "stdout_path", info->stdout_path));
                ADD(json_add_string(o, "stderr_path", info->stderr_path));
                ADD(json_add_u64(u, "cpu_usec", info->usage.cpu_usec));
                ADD(json_add_u64(u, "memory_peak", info->usage.memory_peak));
                ADD(json_add_u64(u, "io_read_bytes", info->usage.io_read_bytes));
                ADD(json_add_u64(u, "io_write_bytes", info->usage.io_write_bytes));
                ADD(json_add_u64(u, "tasks_peak", info->usage.tasks_peak));
                ADD(json_add(o, "usage", TAKE_PTR(u)));
        }
#undef ADD
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

#define JSON_U64_MAX ((uint64_t) INT64_MAX - 1)

static int job_info_field_from_json(const char *key, json_object *v, JobInfo *info) {
        uint64_t u = 0;
        int64_t i = 0;
        int r;

        if (streq(key, "id"))
                r = json_get_u64(v, 1, CORRAL_JOB_ID_MAX, &info->id);
        else if (streq(key, "name"))
                r = json_dup_string(v, 0, CORRAL_NAME_LENGTH_MAX, &info->name);
        else if (streq(key, "user"))
                r = json_dup_string(v, 0, CORRAL_IDENT_LENGTH_MAX, &info->user);
        else if (streq(key, "uid")) {
                r = json_get_u64(v, 0, UINT32_MAX, &u);
                info->uid = (uid_t) u;
        } else if (streq(key, "project"))
                r = json_dup_string(v, 0, CORRAL_IDENT_LENGTH_MAX, &info->project);
        else if (streq(key, "queue"))
                r = json_dup_string(v, 0, CORRAL_IDENT_LENGTH_MAX, &info->queue);
        else if (streq(key, "state"))
                r = json_dup_string(v, 1, 64, &info->state);
        else if (streq(key, "reason"))
                r = json_dup_string(v, 0, 1024, &info->reason);
        else if (streq(key, "cpus")) {
                r = json_get_u64(v, 0, CORRAL_CPUS_MAX, &u);
                info->cpus = (unsigned) u;
        } else if (streq(key, "memory"))
                r = json_get_u64(v, 0, CORRAL_SIZE_MAX, &info->memory);
        else if (streq(key, "walltime_sec")) {
                if (json_object_is_type(v, json_type_string)) {
                        r = streq(json_object_get_string(v), "infinity") ? 0 : -EINVAL;
                        info->walltime_sec = CORRAL_WALLTIME_INFINITY;
                } else
                        r = json_get_u64(v, 0, CORRAL_WALLTIME_MAX, &info->walltime_sec);
        } else if (streq(key, "nice")) {
                r = json_get_i64(v, CORRAL_NICE_MIN, CORRAL_NICE_MAX, &i);
                info->nice = (int) i;
        } else if (streq(key, "submit_time"))
                r = json_get_u64(v, 0, CORRAL_TIME_MAX, &info->submit_time);
        else if (streq(key, "start_time"))
                r = json_get_u64(v, 0, CORRAL_TIME_MAX, &info->start_time);
        else if (streq(key, "end_time"))
                r = json_get_u64(v, 0, CORRAL_TIME_MAX, &info->end_time);
        else if (streq(key, "exit_code")) {
                r = json_get_i64(v, 0, 255, &i);
                info->exit_code = (int) i;
        } else if (streq(key, "exit_signal")) {
                r = json_get_i64(v, 0, 127, &i);
                info->exit_signal = (int) i;
        } else if (streq(key, "node"))
                r = json_dup_string(v, 0, 255, &info->node);
        else if (streq(key, "cpus_allocated"))
                r = json_dup_string(v, 0, 4096, &info->cpus_allocated);
        else if (streq(key, "array_job_id"))
                r = json_get_u64(v, 0, CORRAL_JOB_ID_MAX, &info->array_job_id);
        else if (streq(key, "array_task_id")) {
                r = json_get_u64(v, 0, CORRAL_ARRAY_INDEX_MAX, &u);
                info->array_task_id = (uint32_t) u;
        } else if (streq(key, "argv")) {
                r = json_get_strv(v, CORRAL_ARGV_MAX, CORRAL_ARG_LENGTH_MAX, &info->argv);
                info->has_details = true;
        } else if (streq(key, "has_script")) {
                r = json_get_bool(v, &info->has_script);
                info->has_details = true;
        } else if (streq(key, "env")) {
                r = json_get_strv(v, CORRAL_ENV_MAX, CORRAL_ARG_LENGTH_MAX, &info->env);
                info->has_details = true;
        } else if (streq(key, "workdir"))
                r = json_dup_string(v, 0, CORRAL_PATH_LENGTH_MAX, &info->workdir);
        else if (streq(key, "stdin_path"))
                r = json_dup_string(v, 0, CORRAL_PATH_LENGTH_MAX, &info->stdin_path);
        else if (streq(key, "stdout_path"))
                r = json_dup_string(v, 0, CORRAL_PATH_LENGTH_MAX, &info->stdout_path);
        else if (streq(key, "stderr_path"))
                r = json_dup_string(v, 0, CORRAL_PATH_LENGTH_MAX, &info->stderr_path);
        else if (streq(key, "usage")) {
                if (!json_object_is_type(v, json_type_object))
                        return -EINVAL;
                info->has_details = true;
                r = 0;
                json_object_object_foreach(v, k, x) {
                        uint64_t *p = streq(k, "cpu_usec") ? &info->usage.cpu_usec :
                                      streq(k, "memory_peak") ? &info->usage.memory_peak :
                                      streq(k, "io_read_bytes") ? &info->usage.io_read_bytes :
                                      streq(k, "io_write_bytes") ? &info->usage.io_write_bytes :
                                      streq(k, "tasks_peak") ? &info->usage.tasks_peak : NULL;
                        if (p && json_get_u64(x, 0, JSON_U64_MAX, p) < 0)
                                return -EINVAL;
                }
        } else
                r = 0; /* a newer daemon's field */
        return r;
}

int job_info_from_json(json_object *o, JobInfo *ret, const char **ret_bad_field) {
        _cleanup_(job_info_done) JobInfo info = JOB_INFO_INIT;
        int r;

        assert(ret);

        *ret = (JobInfo) JOB_INFO_INIT;

        if (!json_object_is_type(o, json_type_object)) {
                if (ret_bad_field)
                        *ret_bad_field = "job";
                return -EINVAL;
        }
        json_object_object_foreach(o, key, v) {
                r = job_info_field_from_json(key, v, &info);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        if (ret_bad_field)
                                *ret_bad_field = key;
                        return -EINVAL;
                }
        }
        if (info.id == 0 || !info.state) {
                if (ret_bad_field)
                        *ret_bad_field = info.id == 0 ? "id" : "state";
                return -EINVAL;
        }

        *ret = info;
        info = (JobInfo) JOB_INFO_INIT;
        return 0;
}

/* A real deep copy, for array tasks: a JSON round trip costs a full serialize and parse of
 * a request that may carry 1.5 MiB of script and environment, per task. */
static int dup_str(const char *s, char **ret) {
        *ret = NULL;
        if (!s)
                return 0;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

static int dup_io(const IoDeviceLimits *src, IoDeviceLimits *dst) {
        *dst = (IoDeviceLimits) {};
        for (size_t i = 0; i < src->n; i++)
                if (io_device_limits_add(dst, src->items[i].device, src->items[i].limit) < 0)
                        return -ENOMEM;
        return 0;
}

int submit_request_copy(const SubmitRequest *src, SubmitRequest *ret) {
        _cleanup_(submit_request_done) SubmitRequest c = SUBMIT_REQUEST_INIT;
        int r = 0;

        /* Scalars by assignment; every pointer is replaced below before anything can
         * free it twice. A new pointer field must be added here. */
        c = *src;
        c.name = c.script = c.workdir = c.stdin_path = c.stdout_path = c.stderr_path = NULL;
        c.queue = c.project = NULL;
        c.argv = c.env = NULL;
        c.io_read_bw = c.io_write_bw = c.io_read_iops = c.io_write_iops = (IoDeviceLimits) {};
        c.dependencies = NULL;
        c.n_dependencies = 0;

        r |= dup_str(src->name, &c.name);
        r |= dup_str(src->script, &c.script);
        r |= dup_str(src->workdir, &c.workdir);
        r |= dup_str(src->stdin_path, &c.stdin_path);
        r |= dup_str(src->stdout_path, &c.stdout_path);
        r |= dup_str(src->stderr_path, &c.stderr_path);
        r |= dup_str(src->queue, &c.queue);
        r |= dup_str(src->project, &c.project);
        r |= dup_io(&src->io_read_bw, &c.io_read_bw);
        r |= dup_io(&src->io_write_bw, &c.io_write_bw);
        r |= dup_io(&src->io_read_iops, &c.io_read_iops);
        r |= dup_io(&src->io_write_iops, &c.io_write_iops);
        if (r < 0)
                return -ENOMEM;
        if ((src->argv && !(c.argv = strv_copy(src->argv))) || (src->env && !(c.env = strv_copy(src->env))))
                return -ENOMEM;
        if (src->n_dependencies > 0) {
                c.dependencies = new(JobDependency, src->n_dependencies);
                if (!c.dependencies)
                        return -ENOMEM;
                memcpy(c.dependencies, src->dependencies, src->n_dependencies * sizeof(JobDependency));
                c.n_dependencies = src->n_dependencies;
        }
        *ret = c;
        c = (SubmitRequest) SUBMIT_REQUEST_INIT;
        return 0;
}
