/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "constraint.h"
#include "job-request.h"
#include "json-codec.h"
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

/* One "START[-END[:STEP]]". */
static int parse_range(const char **p, ArrayRange *ret) {
        ArrayRange g = { .step = 1 };
        int r;

        r = eat_u32(p, CORRAL_ARRAY_INDEX_MAX, &g.start);
        if (r < 0)
                return r;
        g.end = g.start;
        if (**p == '-') {
                (*p)++;
                r = eat_u32(p, CORRAL_ARRAY_INDEX_MAX, &g.end);
                if (r < 0)
                        return r;
                if (**p == ':') {
                        (*p)++;
                        r = eat_u32(p, CORRAL_ARRAY_INDEX_MAX, &g.step);
                        if (r < 0)
                                return r;
                        if (g.step == 0)
                                return -EINVAL;
                }
        }
        if (g.start > g.end)
                return -EINVAL;
        *ret = g;
        return 0;
}

static uint32_t range_count(const ArrayRange *g) {
        return (g->end - g->start) / g->step + 1;
}

static int cmp_range(const void *a, const void *b) {
        const ArrayRange *x = a, *y = b;
        return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        return x < y ? -1 : x > y;
}

int array_spec_parse(const char *s, ArraySpec *ret) {
        _cleanup_free_ ArrayRange *g = NULL;
        _cleanup_free_ uint32_t *idx = NULL;
        ArraySpec a = { .set = true, .step = 1 };
        const char *p = s;
        size_t n = 0, n_idx = 0, tasks = 0;
        int r;

        if (isempty(s))
                return -EINVAL;
        if (strlen(s) > CORRAL_ARRAY_SPEC_LENGTH_MAX)
                return -ERANGE;
        g = new(ArrayRange, CORRAL_ARRAY_RANGES_MAX);
        if (!g)
                return -ENOMEM;
        for (;;) {
                if (n == CORRAL_ARRAY_RANGES_MAX)
                        return -ERANGE;
                r = parse_range(&p, &g[n]);
                if (r < 0)
                        return r;
                tasks += range_count(&g[n]);
                if (tasks > CORRAL_ARRAY_TASKS_MAX)
                        return -ERANGE;
                n++;
                if (*p != ',')
                        break;
                p++;
        }
        if (*p == '%') {
                p++;
                r = eat_u32(&p, CORRAL_ARRAY_TASKS_MAX, &a.max_concurrent);
                if (r < 0)
                        return r;
                if (a.max_concurrent == 0)
                        return -EINVAL;
        }
        if (*p != '\0')
                return -EINVAL;

        if (n == 1) {
                a.start = g[0].start, a.end = g[0].end, a.step = g[0].step;
                *ret = a;
                return 0;
        }
        /* A list: every index once; one range with one step when evenly spaced. */
        idx = new(uint32_t, tasks);
        if (!idx)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                for (uint64_t v = g[i].start; v <= g[i].end; v += g[i].step)
                        idx[n_idx++] = (uint32_t) v;
        qsort(idx, n_idx, sizeof(uint32_t), cmp_u32);
        for (size_t i = 1; i < n_idx; i++)
                if (idx[i] == idx[i - 1])
                        return -EINVAL;
        a.start = idx[0];
        a.end = idx[n_idx - 1];
        a.step = n_idx > 1 ? idx[1] - idx[0] : 1;
        for (size_t i = 2; i < n_idx; i++)
                if (idx[i] - idx[i - 1] != a.step) {
                        a.step = 1;
                        qsort(g, n, sizeof(ArrayRange), cmp_range);
                        a.ranges = TAKE_PTR(g);
                        a.n_ranges = (uint32_t) n;
                        break;
                }
        *ret = a;
        return 0;
}

uint32_t array_spec_count(const ArraySpec *a) {
        uint32_t n = 0;

        if (!a->set)
                return 0;
        if (a->ranges) {
                for (uint32_t i = 0; i < a->n_ranges; i++)
                        if (a->ranges[i].step > 0 && a->ranges[i].start <= a->ranges[i].end)
                                n += range_count(&a->ranges[i]);
                return n;
        }
        if (a->step == 0 || a->start > a->end)
                return 0;
        return (a->end - a->start) / a->step + 1;
}

uint32_t array_spec_index(const ArraySpec *a, uint32_t t) {
        if (!a->ranges)
                return a->start + t * (a->step ?: 1);
        for (uint32_t i = 0; i < a->n_ranges; i++) {
                uint32_t c = range_count(&a->ranges[i]);
                if (t < c)
                        return a->ranges[i].start + t * a->ranges[i].step;
                t -= c;
        }
        return a->end;
}

static int format_range(char *buf, size_t size, uint32_t start, uint32_t end, uint32_t step) {
        if (start == end)
                return snprintf(buf, size, "%" PRIu32, start);
        if (step == 1)
                return snprintf(buf, size, "%" PRIu32 "-%" PRIu32, start, end);
        return snprintf(buf, size, "%" PRIu32 "-%" PRIu32 ":%" PRIu32, start, end, step);
}

char *array_spec_format(const ArraySpec *a, char *buf, size_t size) {
        size_t used = 0;
        int n;

        if (size == 0)
                return buf;
        buf[0] = 0;
        if (!a->ranges) {
                n = format_range(buf, size, a->start, a->end, a->step);
                used = n < 0 ? 0 : MIN((size_t) n, size - 1);
        } else
                for (uint32_t i = 0; i < a->n_ranges && used + 1 < size; i++) {
                        n = format_range(buf + used, size - used, a->ranges[i].start, a->ranges[i].end,
                                         a->ranges[i].step);
                        used = n < 0 ? used : MIN(used + (size_t) n, size - 1);
                        if (i + 1 < a->n_ranges && used + 1 < size) {
                                buf[used++] = ',';
                                buf[used] = 0;
                        }
                }
        if (a->max_concurrent > 0 && used + 1 < size)
                snprintf(buf + used, size - used, "%%%" PRIu32, a->max_concurrent);
        return buf;
}

int array_spec_copy(const ArraySpec *src, ArraySpec *ret) {
        ArraySpec a = *src;

        if (src->ranges) {
                a.ranges = new(ArrayRange, src->n_ranges);
                if (!a.ranges)
                        return -ENOMEM;
                memcpy(a.ranges, src->ranges, sizeof(ArrayRange) * src->n_ranges);
        }
        *ret = a;
        return 0;
}

void array_spec_done(ArraySpec *a) {
        a->ranges = mfree(a->ranges);
        *a = (ArraySpec) {};
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

bool mail_user_is_valid(const char *s) {
        size_t n;

        /* Handed to sendmail -t in a To: header: no option (leading '-'), no second
         * recipient, no header of its own. */
        if (isempty(s) || s[0] == '-')
                return false;
        n = strlen(s);
        if (n > CORRAL_MAIL_USER_LENGTH_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) s[i]) && !strchr("_.+-@%=", s[i]))
                        return false;
        return true;
}

/* The row's rule; the characters are submit_request_check_text()'s, which says where the
 * bad one is. */
static bool job_name_row_valid(const char *s) {
        return !isempty(s) && strlen(s) <= CORRAL_NAME_LENGTH_MAX;
}

bool job_name_is_valid(const char *s) {
        /* Printed in every listing, to every user's terminal. */
        return job_name_row_valid(s) && text_check(s, strlen(s), 0, NULL) == TEXT_OK;
}

/* A comment is printed in listings as a name is: one line, no control characters. */
bool job_comment_is_valid(const char *s) {
        return !isempty(s) && strlen(s) <= CORRAL_COMMENT_LENGTH_MAX &&
               text_check(s, strlen(s), 0, NULL) == TEXT_OK;
}

static bool path_is_valid(const char *s, bool absolute) {
        size_t n;

        if (isempty(s))
                return false;
        n = strlen(s);
        if (n > CORRAL_PATH_LENGTH_MAX)
                return false;
        /* A newline or any other control character: submit_request_check_text(). */
        return !absolute || s[0] == '/';
}

static bool path_is_valid_absolute(const char *s) {
        return path_is_valid(s, true);
}

static bool path_is_valid_relative(const char *s) {
        return path_is_valid(s, false);
}

/* ---- IO limits, dependencies ---- */

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

/* The wire form of the two list fields: an array of at most max objects with exactly the
 * keys k1 (a string) and k2 (an integer), in the order given; an empty list is not sent. */
static int pair_list_decode(json_object *a, size_t max, const char *k1, const char *k2,
                            int (*add)(json_object *v1, json_object *v2, void *userdata), void *userdata) {
        size_t n;
        int r;

        if (!json_object_is_type(a, json_type_array))
                return -EINVAL;
        n = json_object_array_length(a);
        if (n > max)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(a, i), *v1, *v2;

                if (!json_object_is_type(e, json_type_object) || json_object_object_length(e) != 2 ||
                    !json_object_object_get_ex(e, k1, &v1) || !json_object_object_get_ex(e, k2, &v2))
                        return -EINVAL;
                r = add(v1, v2, userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int pair_list_append(json_object **a, const char *k1, const char *s, const char *k2, uint64_t u) {
        _cleanup_json_ json_object *e = NULL;

        if (!*a && !(*a = json_object_new_array()))
                return -ENOMEM;
        e = json_object_new_object();
        if (!e || json_add_string(e, k1, s) < 0 || json_add_u64(e, k2, u) < 0 || json_object_array_add(*a, e) < 0)
                return -ENOMEM;
        TAKE_PTR(e);
        return 0;
}

/* Wire: [{"device": absolute path, "limit": 1..CORRAL_SIZE_MAX}], at most
 * CORRAL_IO_DEVICES_MAX entries. */
#define IO_LIMITS(obj, f) ((IoDeviceLimits *) ((uint8_t *) (obj) + (f)->offset))
#define IO_LIMITS_CONST(obj, f) ((const IoDeviceLimits *) ((const uint8_t *) (obj) + (f)->offset))

static int io_limit_add(json_object *dev, json_object *lim, void *userdata) {
        const char *device;
        uint64_t limit;

        if (json_get_string(dev, 1, CORRAL_PATH_LENGTH_MAX, &device) < 0 || device[0] != '/' ||
            json_get_u64(lim, 1, CORRAL_SIZE_MAX, &limit) < 0)
                return -EINVAL;
        return io_device_limits_add(userdata, device, limit);
}

static int io_limits_decode(const JsonField *f, json_object *a, void *obj) {
        io_device_limits_done(IO_LIMITS(obj, f));
        return pair_list_decode(a, CORRAL_IO_DEVICES_MAX, "device", "limit", io_limit_add, IO_LIMITS(obj, f));
}

static int io_limits_encode(const JsonField *f, const void *obj, json_object **ret) {
        const IoDeviceLimits *l = IO_LIMITS_CONST(obj, f);
        _cleanup_json_ json_object *a = NULL;

        for (size_t i = 0; i < l->n; i++)
                if (pair_list_append(&a, "device", l->items[i].device, "limit", l->items[i].limit) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(a);
        return 0;
}

static bool io_limits_valid(const JsonField *f, const void *obj) {
        const IoDeviceLimits *l = IO_LIMITS_CONST(obj, f);

        if (l->n > CORRAL_IO_DEVICES_MAX)
                return false;
        for (size_t i = 0; i < l->n; i++)
                if (!path_is_valid(l->items[i].device, true) || l->items[i].limit == 0 ||
                    l->items[i].limit > CORRAL_SIZE_MAX)
                        return false;
        return true;
}

static void io_limits_forget(const JsonField *f, void *obj) {
        *IO_LIMITS(obj, f) = (IoDeviceLimits) {};
}

static int io_limits_copy(const JsonField *f, const void *src, void *dst) {
        const IoDeviceLimits *s = IO_LIMITS_CONST(src, f);

        for (size_t i = 0; i < s->n; i++)
                if (io_device_limits_add(IO_LIMITS(dst, f), s->items[i].device, s->items[i].limit) < 0)
                        return -ENOMEM;
        return 0;
}

static void io_limits_done(const JsonField *f, void *obj) {
        io_device_limits_done(IO_LIMITS(obj, f));
}

static const JsonFieldOps io_limits_ops = {
        .decode = io_limits_decode,
        .encode = io_limits_encode,
        .valid = io_limits_valid,
        .forget = io_limits_forget,
        .copy = io_limits_copy,
        .done = io_limits_done,
};

/* Wire: [{"type": "after" | "afterany" | "afterok" | "afternotok", "job_id"}], at most
 * CORRAL_DEPENDENCIES_MAX entries. */
static int dependency_add(json_object *t, json_object *id, void *userdata) {
        const char *type;
        DependencyType dt;
        uint64_t job_id;

        if (json_get_string(t, 1, 32, &type) < 0 || (dt = dependency_type_from_string(type)) < 0 ||
            json_get_u64(id, 1, CORRAL_JOB_ID_MAX, &job_id) < 0)
                return -EINVAL;
        return submit_request_add_dependency(userdata, dt, job_id);
}

static int dependencies_decode(const JsonField *f, json_object *a, void *obj) {
        SubmitRequest *req = obj;

        req->dependencies = mfree(req->dependencies);
        req->n_dependencies = 0;
        return pair_list_decode(a, CORRAL_DEPENDENCIES_MAX, "type", "job_id", dependency_add, req);
}

static int dependencies_encode(const JsonField *f, const void *obj, json_object **ret) {
        const SubmitRequest *req = obj;
        _cleanup_json_ json_object *a = NULL;

        for (size_t i = 0; i < req->n_dependencies; i++)
                if (pair_list_append(&a, "type", dependency_type_to_string(req->dependencies[i].type), "job_id",
                                     req->dependencies[i].job_id) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(a);
        return 0;
}

static bool dependencies_valid(const JsonField *f, const void *obj) {
        const SubmitRequest *req = obj;

        if (req->n_dependencies > CORRAL_DEPENDENCIES_MAX)
                return false;
        for (size_t i = 0; i < req->n_dependencies; i++)
                if (!dependency_type_to_string(req->dependencies[i].type) || req->dependencies[i].job_id < 1 ||
                    req->dependencies[i].job_id > CORRAL_JOB_ID_MAX)
                        return false;
        return true;
}

static void dependencies_forget(const JsonField *f, void *obj) {
        SubmitRequest *req = obj;

        req->dependencies = NULL;
        req->n_dependencies = 0;
}

static int dependencies_copy(const JsonField *f, const void *src, void *dst) {
        const SubmitRequest *s = src;
        SubmitRequest *d = dst;

        if (s->n_dependencies == 0)
                return 0;
        d->dependencies = new(JobDependency, s->n_dependencies);
        if (!d->dependencies)
                return -ENOMEM;
        memcpy(d->dependencies, s->dependencies, s->n_dependencies * sizeof(JobDependency));
        d->n_dependencies = s->n_dependencies;
        return 0;
}

static void dependencies_done(const JsonField *f, void *obj) {
        SubmitRequest *req = obj;

        req->dependencies = mfree(req->dependencies);
        req->n_dependencies = 0;
}

static const JsonFieldOps dependencies_ops = {
        .decode = dependencies_decode,
        .encode = dependencies_encode,
        .valid = dependencies_valid,
        .forget = dependencies_forget,
        .copy = dependencies_copy,
        .done = dependencies_done,
};

/* Wire: an ArraySpec string ("1-100:2%10"), canonical when we send it; not sent unless set. */
static int array_decode(const JsonField *f, json_object *v, void *obj) {
        SubmitRequest *req = obj;
        const char *s;
        int r;

        if (json_get_string(v, 1, CORRAL_ARRAY_SPEC_LENGTH_MAX, &s) < 0)
                return -EINVAL;
        array_spec_done(&req->array);
        r = array_spec_parse(s, &req->array);
        return r == -ENOMEM ? r : r < 0 ? -EINVAL : 0;
}

static int array_encode(const JsonField *f, const void *obj, json_object **ret) {
        const SubmitRequest *req = obj;
        char buf[CORRAL_ARRAY_SPEC_LENGTH_MAX + 1];

        *ret = NULL;
        if (!req->array.set)
                return 0;
        *ret = json_object_new_string(array_spec_format(&req->array, buf, sizeof(buf)));
        return *ret ? 0 : -ENOMEM;
}

static bool array_valid(const JsonField *f, const void *obj) {
        const ArraySpec *a = &((const SubmitRequest *) obj)->array;

        if (!a->set)
                return true;
        if (a->ranges) {
                if (a->n_ranges < 2 || a->n_ranges > CORRAL_ARRAY_RANGES_MAX)
                        return false;
                for (uint32_t i = 0; i < a->n_ranges; i++) {
                        const ArrayRange *g = &a->ranges[i];
                        if (g->step < 1 || g->start > g->end || g->end > CORRAL_ARRAY_INDEX_MAX ||
                            (i > 0 && g->start < a->ranges[i - 1].start))
                                return false;
                }
        }
        return a->step >= 1 && a->start <= a->end && a->end <= CORRAL_ARRAY_INDEX_MAX &&
               array_spec_count(a) <= CORRAL_ARRAY_TASKS_MAX && a->max_concurrent <= CORRAL_ARRAY_TASKS_MAX;
}

static void array_forget(const JsonField *f, void *obj) {
        SubmitRequest *req = obj;
        req->array.ranges = NULL;
        req->array.n_ranges = 0;
}

static int array_copy(const JsonField *f, const void *src, void *dst) {
        return array_spec_copy(&((const SubmitRequest *) src)->array, &((SubmitRequest *) dst)->array);
}

static void array_done(const JsonField *f, void *obj) {
        array_spec_done(&((SubmitRequest *) obj)->array);
}

static const JsonFieldOps array_ops = {
        .decode = array_decode,
        .encode = array_encode,
        .valid = array_valid,
        .forget = array_forget,
        .copy = array_copy,
        .done = array_done,
};

/* ---- SubmitRequest ---- */

#define OMIT JSON_FIELD_OMIT_UNSET

/* The order is the order on the wire and of validation. */
static const JsonField submit_request_fields[] = {
        JSON_STRING(SubmitRequest, "name", name, 1, CORRAL_NAME_LENGTH_MAX, 0, job_name_row_valid),
        JSON_STRV(SubmitRequest, "argv", argv, CORRAL_ARGV_MAX, CORRAL_ARG_LENGTH_MAX, JSON_FIELD_COMMAND, NULL),
        JSON_STRING(SubmitRequest, "script", script, 1, CORRAL_SCRIPT_SIZE_MAX, 0, NULL),
        JSON_STRV(SubmitRequest, "env", env, CORRAL_ENV_MAX, CORRAL_ARG_LENGTH_MAX, 0, env_assignment_is_valid),
        JSON_STRING(SubmitRequest, "workdir", workdir, 1, CORRAL_PATH_LENGTH_MAX, 0, path_is_valid_absolute),
        JSON_STRING(SubmitRequest, "stdin_path", stdin_path, 1, CORRAL_PATH_LENGTH_MAX, 0, path_is_valid_relative),
        JSON_STRING(SubmitRequest, "stdout_path", stdout_path, 1, CORRAL_PATH_LENGTH_MAX, 0, path_is_valid_relative),
        JSON_STRING(SubmitRequest, "stderr_path", stderr_path, 1, CORRAL_PATH_LENGTH_MAX, 0, path_is_valid_relative),
        JSON_U32(SubmitRequest, "cpus", cpus, 1, CORRAL_CPUS_MAX, OMIT, 0),
        JSON_U64(SubmitRequest, "memory", memory, 1, CORRAL_SIZE_MAX, OMIT, 0),
        JSON_U32(SubmitRequest, "gpus", gpus, 1, CORRAL_GPUS_MAX, OMIT, 0),
        JSON_STRING(SubmitRequest, "gpu_type", gpu_type, 1, CORRAL_GPU_TYPE_LENGTH_MAX, 0, ident_is_valid),
        JSON_STRING(SubmitRequest, "constraint", constraint, 1, CORRAL_CONSTRAINT_LENGTH_MAX, 0, constraint_is_valid),
        JSON_BOOL(SubmitRequest, "gpu_binding", gpu_binding, OMIT),
        JSON_U32(SubmitRequest, "shards", shards, 1, CORRAL_SHARDS_MAX, OMIT, 0),
        JSON_U64(SubmitRequest, "walltime_sec", walltime_sec, 1, CORRAL_WALLTIME_MAX, OMIT | JSON_FIELD_INFINITY, 0),
        JSON_CUSTOM(SubmitRequest, "io_read_bw", io_read_bw, &io_limits_ops, 0),
        JSON_CUSTOM(SubmitRequest, "io_write_bw", io_write_bw, &io_limits_ops, 0),
        JSON_CUSTOM(SubmitRequest, "io_read_iops", io_read_iops, &io_limits_ops, 0),
        JSON_CUSTOM(SubmitRequest, "io_write_iops", io_write_iops, &io_limits_ops, 0),
        JSON_U32(SubmitRequest, "io_weight", io_weight, CORRAL_IO_WEIGHT_MIN, CORRAL_IO_WEIGHT_MAX, OMIT, 0),
        JSON_U64(SubmitRequest, "tasks_max", tasks_max, 1, CORRAL_TASKS_MAX_MAX, OMIT, 0),
        /* A number, as umask(2) has it; 0 is a valid umask, the default is not sent. */
        JSON_U32(SubmitRequest, "umask", umask, 0, CORRAL_UMASK_MAX, OMIT, CORRAL_UMASK_DEFAULT),
        JSON_STRING(SubmitRequest, "queue", queue, 1, CORRAL_IDENT_LENGTH_MAX, 0, ident_is_valid),
        JSON_STRING(SubmitRequest, "project", project, 1, CORRAL_IDENT_LENGTH_MAX, 0, ident_is_valid),
        JSON_BOOL(SubmitRequest, "exclusive", exclusive, OMIT),
        JSON_TRISTATE(SubmitRequest, "rerunnable", rerunnable, OMIT),
        JSON_BOOL(SubmitRequest, "hold", hold, OMIT),
        JSON_INT(SubmitRequest, "nice", nice, CORRAL_NICE_MIN, CORRAL_NICE_MAX, OMIT, 0),
        JSON_CUSTOM(SubmitRequest, "dependencies", dependencies, &dependencies_ops, 0),
        JSON_CUSTOM(SubmitRequest, "array", array, &array_ops, 0),
        JSON_U64(SubmitRequest, "begin_time", begin_time, 1, CORRAL_TIME_MAX, OMIT, 0),
        JSON_U32(SubmitRequest, "warn_signal", warn_signal, 1, CORRAL_WARN_SIGNAL_MAX, OMIT, 0),
        JSON_U32(SubmitRequest, "warn_sec", warn_sec, 1, CORRAL_WARN_SEC_MAX, OMIT, 0),
        JSON_BOOL(SubmitRequest, "warn_batch_only", warn_batch_only, OMIT),
        JSON_U32(SubmitRequest, "mail_events", mail_events, 1, MAIL_ALL | MAIL_ARRAY_TASKS | MAIL_TIME_LIMITS, OMIT, 0),
        JSON_STRING(SubmitRequest, "comment", comment, 1, CORRAL_COMMENT_LENGTH_MAX, 0, job_comment_is_valid),
        JSON_BOOL(SubmitRequest, "output_append", output_append, OMIT),
        JSON_STRING(SubmitRequest, "mail_user", mail_user, 1, CORRAL_MAIL_USER_LENGTH_MAX, 0, mail_user_is_valid),
        JSON_BOOL(SubmitRequest, "interactive", interactive, OMIT),
        JSON_END,
};

/* The text rules, one row per field whose value other users see printed (in the queue,
 * squeue, sacct, show, scontrol): names and paths are single lines of UTF-8 without
 * control characters, since a C1 control such as U+009B (CSI, two bytes C2 9B) or an
 * escape byte in a job name would be a command to another user's terminal. Not here:
 * argv, env and script are handed to the job as they are (a newline in an argument, a
 * tab or a Latin-1 byte in a variable are the user's own business) and only escaped
 * when shown; queue, project and mail_user have stricter ASCII rules of their own;
 * dependencies are numbers. */
typedef enum TextFieldKind {
        TEXT_FIELD_STRING,
        TEXT_FIELD_IO_LIMITS,   /* each device's path */
} TextFieldKind;

typedef struct TextField {
        const char *name;
        TextFieldKind kind;
        size_t offset;
        unsigned allow;         /* TextAllow */
} TextField;

static const TextField submit_request_text_fields[] = {
        { "name", TEXT_FIELD_STRING, offsetof(SubmitRequest, name), 0 },
        { "workdir", TEXT_FIELD_STRING, offsetof(SubmitRequest, workdir), 0 },
        { "stdin_path", TEXT_FIELD_STRING, offsetof(SubmitRequest, stdin_path), 0 },
        { "stdout_path", TEXT_FIELD_STRING, offsetof(SubmitRequest, stdout_path), 0 },
        { "stderr_path", TEXT_FIELD_STRING, offsetof(SubmitRequest, stderr_path), 0 },
        { "io_read_bw", TEXT_FIELD_IO_LIMITS, offsetof(SubmitRequest, io_read_bw), 0 },
        { "io_write_bw", TEXT_FIELD_IO_LIMITS, offsetof(SubmitRequest, io_write_bw), 0 },
        { "io_read_iops", TEXT_FIELD_IO_LIMITS, offsetof(SubmitRequest, io_read_iops), 0 },
        { "io_write_iops", TEXT_FIELD_IO_LIMITS, offsetof(SubmitRequest, io_write_iops), 0 },
};

static bool text_field_check(const TextField *f, const char *s, SubmitRequestError *ret_error) {
        TextProblem p;
        size_t off = 0;

        if (!s)
                return true;
        p = text_check(s, strlen(s), f->allow, &off);
        if (p == TEXT_OK)
                return true;
        if (ret_error)
                *ret_error = (SubmitRequestError) { .field = f->name, .problem = p, .offset = off };
        return false;
}

int submit_request_check_text(const SubmitRequest *req, SubmitRequestError *ret_error) {
        assert(req);

        for (size_t i = 0; i < ELEMENTSOF(submit_request_text_fields); i++) {
                const TextField *f = &submit_request_text_fields[i];
                const void *m = (const uint8_t *) req + f->offset;

                switch (f->kind) {
                case TEXT_FIELD_STRING:
                        if (!text_field_check(f, *(char *const *) m, ret_error))
                                return -EINVAL;
                        break;
                case TEXT_FIELD_IO_LIMITS: {
                        const IoDeviceLimits *l = m;
                        for (size_t k = 0; k < l->n; k++)
                                if (!text_field_check(f, l->items[k].device, ret_error))
                                        return -EINVAL;
                        break;
                }
                }
        }
        return 0;
}

void submit_request_done(SubmitRequest *req) {
        if (!req)
                return;
        json_codec_done(submit_request_fields, req);
        *req = (SubmitRequest) SUBMIT_REQUEST_INIT;
}

/* The table's rules and the ones across fields; the text rules unless stored. */
static int validate(const SubmitRequest *req, unsigned flags, SubmitRequestError *ret_error) {
        const char *bad = NULL;
        int r;

        assert(req);

        r = json_codec_validate(submit_request_fields, req, &bad);
        if (r >= 0) {
                /* Exactly one of argv and script. */
                if (req->argv && req->script)
                        bad = "script";
                else if (!req->argv && !req->script)
                        bad = "argv";
                /* A time or "B:" without a signal to send. */
                else if (!req->warn_signal && (req->warn_sec || req->warn_batch_only))
                        bad = "warn_signal";
        }
        if (bad) {
                if (ret_error)
                        *ret_error = (SubmitRequestError) { .field = bad };
                return -EINVAL;
        }
        if (!(flags & SUBMIT_REQUEST_STORED))
                return submit_request_check_text(req, ret_error);
        return 0;
}

int submit_request_validate(const SubmitRequest *req, const char **ret_bad_field) {
        SubmitRequestError e = {};
        int r;

        r = validate(req, 0, &e);
        if (r < 0 && ret_bad_field)
                *ret_bad_field = e.field;
        return r;
}

int submit_request_to_json(const SubmitRequest *req, json_object **ret) {
        assert(req);
        assert(ret);

        return json_codec_encode(submit_request_fields, req, 0, ret);
}

int submit_request_decode(json_object *o, unsigned flags, SubmitRequest *ret, SubmitRequestError *ret_error) {
        _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
        const char *bad = NULL;
        int r;

        assert(ret);

        *ret = (SubmitRequest) SUBMIT_REQUEST_INIT;
        if (ret_error)
                *ret_error = (SubmitRequestError) {};

        if (!json_object_is_type(o, json_type_object)) {
                if (ret_error)
                        ret_error->field = "parameters";
                return -EINVAL;
        }
        r = json_codec_decode(submit_request_fields, o, JSON_UNKNOWN_REFUSE, &req, &bad, NULL);
        if (r < 0) {
                if (ret_error)
                        ret_error->field = bad;
                return r;
        }
        r = validate(&req, flags, ret_error);
        if (r < 0)
                return r;

        *ret = req;
        req = (SubmitRequest) SUBMIT_REQUEST_INIT;
        return 0;
}

int submit_request_from_json(json_object *o, SubmitRequest *ret, const char **ret_bad_field) {
        SubmitRequestError e = {};
        int r;

        r = submit_request_decode(o, 0, ret, &e);
        if (r < 0 && ret_bad_field && e.field)
                *ret_bad_field = e.field;
        return r;
}

/* A real deep copy, for array tasks: a JSON round trip costs a full serialize and parse of
 * a request that may carry 1.5 MiB of script and environment, per task. The table knows
 * every member that owns memory. */
int submit_request_copy(const SubmitRequest *src, SubmitRequest *ret) {
        _cleanup_(submit_request_done) SubmitRequest c = SUBMIT_REQUEST_INIT;
        int r;

        assert(src);
        assert(ret);

        c = *src;
        r = json_codec_copy(submit_request_fields, src, &c);
        if (r < 0)
                return r;
        *ret = c;
        c = (SubmitRequest) SUBMIT_REQUEST_INIT;
        return 0;
}

/* ---- JobInfo ---- */

#define JSON_U64_MAX ((uint64_t) INT64_MAX - 1)

static const JsonField job_usage_fields[] = {
        JSON_U64(JobUsage, "cpu_usec", cpu_usec, 0, JSON_U64_MAX, 0, 0),
        JSON_U64(JobUsage, "memory_peak", memory_peak, 0, JSON_U64_MAX, 0, 0),
        JSON_U64(JobUsage, "io_read_bytes", io_read_bytes, 0, JSON_U64_MAX, 0, 0),
        JSON_U64(JobUsage, "io_write_bytes", io_write_bytes, 0, JSON_U64_MAX, 0, 0),
        JSON_U64(JobUsage, "tasks_peak", tasks_peak, 0, JSON_U64_MAX, 0, 0),
        JSON_END,
};

/* The task index is sent with the array's id, and 0 is a valid index. */
static int array_task_id_decode(const JsonField *f, json_object *v, void *obj) {
        uint64_t u;

        if (json_get_u64(v, 0, CORRAL_ARRAY_INDEX_MAX, &u) < 0)
                return -EINVAL;
        ((JobInfo *) obj)->array_task_id = (uint32_t) u;
        return 0;
}

static int array_task_id_encode(const JsonField *f, const void *obj, json_object **ret) {
        const JobInfo *info = obj;

        *ret = NULL;
        if (info->array_job_id == 0)
                return 0;
        *ret = json_object_new_uint64(info->array_task_id);
        return *ret ? 0 : -ENOMEM;
}

static bool array_task_id_valid(const JsonField *f, const void *obj) {
        return ((const JobInfo *) obj)->array_task_id <= CORRAL_ARRAY_INDEX_MAX;
}

static const JsonFieldOps array_task_id_ops = {
        .decode = array_task_id_decode,
        .encode = array_task_id_encode,
        .valid = array_task_id_valid,
};

#define DETAILS JSON_FIELD_DETAILS

static const JsonField job_info_fields[] = {
        JSON_U64(JobInfo, "id", id, 1, CORRAL_JOB_ID_MAX, JSON_FIELD_REQUIRED, 0),
        JSON_STRING(JobInfo, "name", name, 0, CORRAL_NAME_LENGTH_MAX, 0, NULL),
        JSON_STRING(JobInfo, "user", user, 0, CORRAL_IDENT_LENGTH_MAX, 0, NULL),
        JSON_U32(JobInfo, "uid", uid, 0, UINT32_MAX, 0, 0),
        JSON_STRING(JobInfo, "project", project, 0, CORRAL_IDENT_LENGTH_MAX, 0, NULL),
        JSON_STRING(JobInfo, "queue", queue, 0, CORRAL_IDENT_LENGTH_MAX, 0, NULL),
        JSON_STRING(JobInfo, "state", state, 1, 64, JSON_FIELD_REQUIRED, NULL),
        JSON_STRING(JobInfo, "reason", reason, 0, 1024, 0, NULL),
        JSON_U32(JobInfo, "cpus", cpus, 0, CORRAL_CPUS_MAX, 0, 0),
        JSON_U64(JobInfo, "memory", memory, 0, CORRAL_SIZE_MAX, 0, 0),
        JSON_U32(JobInfo, "gpus", gpus, 0, CORRAL_GPUS_MAX, OMIT, 0),
        JSON_STRING(JobInfo, "gpu_type", gpu_type, 0, CORRAL_GPU_TYPE_LENGTH_MAX, 0, NULL),
        JSON_STRING(JobInfo, "gpus_allocated", gpus_allocated, 0, 256, 0, NULL),
        JSON_U32(JobInfo, "shards", shards, 0, CORRAL_SHARDS_MAX, OMIT, 0),
        JSON_STRING(JobInfo, "constraint", constraint, 0, CORRAL_CONSTRAINT_LENGTH_MAX, 0, NULL),
        JSON_U64(JobInfo, "walltime_sec", walltime_sec, 0, CORRAL_WALLTIME_MAX, JSON_FIELD_INFINITY, 0),
        JSON_INT(JobInfo, "nice", nice, CORRAL_NICE_MIN, CORRAL_NICE_MAX, 0, 0),
        JSON_U64(JobInfo, "submit_time", submit_time, 0, CORRAL_TIME_MAX, OMIT, 0),
        JSON_U64(JobInfo, "start_time", start_time, 0, CORRAL_TIME_MAX, OMIT, 0),
        JSON_U64(JobInfo, "end_time", end_time, 0, CORRAL_TIME_MAX, OMIT, 0),
        JSON_INT(JobInfo, "exit_code", exit_code, 0, 255, OMIT, -1),
        JSON_INT(JobInfo, "exit_signal", exit_signal, 0, 127, OMIT, 0),
        JSON_STRING(JobInfo, "node", node, 0, 255, 0, NULL),
        JSON_STRING(JobInfo, "cpus_allocated", cpus_allocated, 0, 4096, 0, NULL),
        JSON_U64(JobInfo, "array_job_id", array_job_id, 0, CORRAL_JOB_ID_MAX, OMIT, 0),
        JSON_CUSTOM(JobInfo, "array_task_id", array_task_id, &array_task_id_ops, 0),
        JSON_BOOL(JobInfo, "interactive", interactive, OMIT),
        JSON_U64(JobInfo, "gpu_idle_sec", gpu_idle_sec, 0, CORRAL_TIME_MAX, OMIT, 0),
        JSON_INT(JobInfo, "gpu_util", gpu_util, 0, 100, OMIT, -1),
        JSON_STRV(JobInfo, "argv", argv, CORRAL_ARGV_MAX, CORRAL_ARG_LENGTH_MAX, DETAILS, NULL),
        JSON_BOOL(JobInfo, "has_script", has_script, DETAILS),
        JSON_STRV(JobInfo, "env", env, CORRAL_ENV_MAX, CORRAL_ARG_LENGTH_MAX, DETAILS, NULL),
        JSON_STRING(JobInfo, "workdir", workdir, 0, CORRAL_PATH_LENGTH_MAX, DETAILS, NULL),
        JSON_STRING(JobInfo, "stdin_path", stdin_path, 0, CORRAL_PATH_LENGTH_MAX, DETAILS, NULL),
        JSON_STRING(JobInfo, "stdout_path", stdout_path, 0, CORRAL_PATH_LENGTH_MAX, DETAILS, NULL),
        JSON_STRING(JobInfo, "stderr_path", stderr_path, 0, CORRAL_PATH_LENGTH_MAX, DETAILS, NULL),
        JSON_STRING(JobInfo, "comment", comment, 0, CORRAL_COMMENT_LENGTH_MAX, DETAILS, NULL),
        JSON_OBJECT(JobInfo, "usage", usage, job_usage_fields, DETAILS),
        /* Display only: a bad value is dropped rather than failing a whole listing. */
        JSON_U64(JobInfo, "est_start", est_start, 0, CORRAL_TIME_MAX, OMIT | JSON_FIELD_LENIENT, 0),
        JSON_DOUBLE(JobInfo, "priority", priority, JSON_FIELD_LENIENT, has_priority),
        JSON_END,
};

void job_info_done(JobInfo *info) {
        if (!info)
                return;
        json_codec_done(job_info_fields, info);
        *info = (JobInfo) JOB_INFO_INIT;
}

int job_info_to_json(const JobInfo *info, bool details, json_object **ret) {
        assert(info);
        assert(ret);

        return json_codec_encode(job_info_fields, info, details && info->has_details ? 0 : DETAILS, ret);
}

int job_info_from_json(json_object *o, JobInfo *ret, const char **ret_bad_field) {
        _cleanup_(job_info_done) JobInfo info = JOB_INFO_INIT;
        unsigned seen = 0;
        int r;

        assert(ret);

        *ret = (JobInfo) JOB_INFO_INIT;

        if (!json_object_is_type(o, json_type_object)) {
                if (ret_bad_field)
                        *ret_bad_field = "job";
                return -EINVAL;
        }
        /* Unknown keys: a newer daemon's fields. */
        r = json_codec_decode(job_info_fields, o, JSON_UNKNOWN_IGNORE, &info, ret_bad_field, &seen);
        if (r < 0)
                return r;
        info.has_details = seen & DETAILS;

        *ret = info;
        info = (JobInfo) JOB_INFO_INIT;
        return 0;
}
