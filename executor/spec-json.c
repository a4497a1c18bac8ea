/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <json-c/json.h>
#include <string.h>

#include "json-util.h"
#include "spec-json.h"

static int add_cpuset(json_object *o, const char *k, const CpuSet *s) {
        _cleanup_free_ char *f = cpu_set_format(s);
        if (!f)
                return -ENOMEM;
        return json_add_string(o, k, f);
}

static int to_string(json_object *o, char **ret) {
        const char *t = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        char *d = t ? strdup(t) : NULL;
        if (!d)
                return -ENOMEM;
        *ret = d;
        return 0;
}

int job_spec_to_json(const JobSpec *s, char **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *gids, *io;
        int r = 0;

        if (!o)
                return -ENOMEM;
        r |= json_add_u64(o, "id", s->id);
        r |= json_add_string(o, "name", s->name);
        r |= json_add_string(o, "user", s->user);
        r |= json_add_u64(o, "uid", s->uid);
        r |= json_add_u64(o, "gid", s->gid);
        r |= json_add_string(o, "home", s->home);
        r |= json_add_string(o, "shell", s->shell);
        r |= json_add_string(o, "project", s->project);
        r |= json_add_string(o, "queue", s->queue);
        r |= json_add_strv(o, "argv", s->argv);
        r |= json_add_string(o, "script", s->script);
        r |= json_add_strv(o, "environment", s->environment);
        r |= json_add_string(o, "working_directory", s->working_directory);
        r |= json_add_string(o, "stdin", s->stdin_path);
        r |= json_add_string(o, "stdout", s->stdout_path);
        r |= json_add_string(o, "stderr", s->stderr_path);
        if (s->has_umask)
                r |= json_add_u64(o, "umask", s->umask);
        r |= add_cpuset(o, "cpus", &s->cpus);
        r |= add_cpuset(o, "mem_nodes", &s->mem_nodes);
        r |= json_add_u64(o, "memory_max", s->memory_max);
        r |= json_add_u64(o, "io_weight", s->io_weight);
        r |= json_add_u64(o, "tasks_max", s->tasks_max);
        r |= json_add_u64(o, "walltime_sec", s->walltime_sec);
        if (s->warn_signal > 0) {
                r |= json_add_u64(o, "warn_signal", (uint64_t) s->warn_signal);
                r |= json_add_u64(o, "warn_sec", s->warn_sec);
                r |= json_add_bool(o, "warn_batch_only", s->warn_batch_only);
        }
        if (s->output_append)
                r |= json_add_bool(o, "output_append", true);
        r |= json_add_u64(o, "array_job_id", s->array_job_id);
        r |= json_add_u64(o, "array_task_id", s->array_task_id);
        if (s->array_task_count > 0) {
                r |= json_add_u64(o, "array_task_min", s->array_task_min);
                r |= json_add_u64(o, "array_task_max", s->array_task_max);
                r |= json_add_u64(o, "array_task_count", s->array_task_count);
                r |= json_add_u64(o, "array_task_step", s->array_task_step);
        }
        if (s->device_fence) {
                r |= json_add_bool(o, "device_fence", true);
                r |= json_add_strv(o, "device_allow", s->device_allow);
                r |= json_add_strv(o, "device_environment", s->device_environment);
        }
        if (r < 0)
                return -ENOMEM;

        gids = json_object_new_array();
        if (!gids || json_object_object_add(o, "supplementary_gids", gids) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_supplementary_gids; i++)
                json_object_array_add(gids, json_object_new_uint64(s->supplementary_gids[i]));

        io = json_object_new_array();
        if (!io || json_object_object_add(o, "io_limits", io) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_io_limits; i++) {
                json_object *l = json_object_new_object();
                if (!l)
                        return -ENOMEM;
                json_object_array_add(io, l);
                r |= json_add_string(l, "device", s->io_limits[i].device);
                r |= json_add_u64(l, "read_bps", s->io_limits[i].read_bps);
                r |= json_add_u64(l, "write_bps", s->io_limits[i].write_bps);
                r |= json_add_u64(l, "read_iops", s->io_limits[i].read_iops);
                r |= json_add_u64(l, "write_iops", s->io_limits[i].write_iops);
        }
        if (r < 0)
                return -ENOMEM;
        return to_string(o, ret);
}

static int get_str(json_object *o, const char *k, char **ret) {
        json_object *v;

        if (!json_object_object_get_ex(o, k, &v) || json_object_is_type(v, json_type_null))
                return 0;
        if (!json_object_is_type(v, json_type_string))
                return -EINVAL;
        *ret = strdup(json_object_get_string(v));
        return *ret ? 0 : -ENOMEM;
}

static int get_u64(json_object *o, const char *k, uint64_t *ret) {
        json_object *v;

        if (!json_object_object_get_ex(o, k, &v))
                return 0;
        if (!json_object_is_type(v, json_type_int))
                return -EINVAL;
        *ret = json_object_get_uint64(v);
        return 0;
}

static int get_bool(json_object *o, const char *k, bool *ret) {
        json_object *v;

        if (!json_object_object_get_ex(o, k, &v))
                return 0;
        if (!json_object_is_type(v, json_type_boolean))
                return -EINVAL;
        *ret = json_object_get_boolean(v);
        return 0;
}

static int get_strv(json_object *o, const char *k, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        json_object *v;
        size_t n;

        if (!json_object_object_get_ex(o, k, &v) || json_object_is_type(v, json_type_null))
                return 0;
        if (!json_object_is_type(v, json_type_array))
                return -EINVAL;
        n = json_object_array_length(v);
        l = new0(char *, n + 1);
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(v, i);
                if (!json_object_is_type(e, json_type_string))
                        return -EINVAL;
                l[i] = strdup(json_object_get_string(e));
                if (!l[i])
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static int get_cpuset(json_object *o, const char *k, CpuSet *ret) {
        _cleanup_free_ char *s = NULL;
        int r = get_str(o, k, &s);
        if (r < 0)
                return r;
        if (!s) {
                cpu_set_zero(ret);
                return 0;
        }
        return cpu_set_parse(s, ret);
}

int job_spec_from_json(const char *text, JobSpec **ret) {
        _cleanup_json_ json_object *o = json_tokener_parse(text);
        _cleanup_job_spec_free_ JobSpec *s = new0(JobSpec, 1);
        json_object *a;
        uint64_t u = 0;
        int r;

        if (!s)
                return -ENOMEM;
        if (!o || !json_object_is_type(o, json_type_object))
                return -EBADMSG;

        if ((r = get_u64(o, "id", &s->id)) < 0 || (r = get_str(o, "name", &s->name)) < 0 ||
            (r = get_str(o, "user", &s->user)) < 0 || (r = get_str(o, "project", &s->project)) < 0 ||
            (r = get_str(o, "home", &s->home)) < 0 || (r = get_str(o, "shell", &s->shell)) < 0 ||
            (r = get_str(o, "queue", &s->queue)) < 0 || (r = get_strv(o, "argv", &s->argv)) < 0 ||
            (r = get_str(o, "script", &s->script)) < 0 ||
            (r = get_strv(o, "environment", &s->environment)) < 0 ||
            (r = get_str(o, "working_directory", &s->working_directory)) < 0 ||
            (r = get_str(o, "stdin", &s->stdin_path)) < 0 || (r = get_str(o, "stdout", &s->stdout_path)) < 0 ||
            (r = get_str(o, "stderr", &s->stderr_path)) < 0 || (r = get_cpuset(o, "cpus", &s->cpus)) < 0 ||
            (r = get_cpuset(o, "mem_nodes", &s->mem_nodes)) < 0 ||
            (r = get_u64(o, "memory_max", &s->memory_max)) < 0 ||
            (r = get_u64(o, "io_weight", &s->io_weight)) < 0 || (r = get_u64(o, "tasks_max", &s->tasks_max)) < 0 ||
            (r = get_u64(o, "walltime_sec", &s->walltime_sec)) < 0 ||
            (r = get_u64(o, "array_job_id", &s->array_job_id)) < 0)
                return r;
        u = 0;
        if ((r = get_u64(o, "array_task_id", &u)) < 0)
                return r;
        s->array_task_id = (uint32_t) u;
        {
                static const char *const keys[] = { "array_task_min", "array_task_max", "array_task_count",
                                                    "array_task_step" };
                uint32_t *fields[] = { &s->array_task_min, &s->array_task_max, &s->array_task_count,
                                       &s->array_task_step };
                for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
                        u = 0;
                        if ((r = get_u64(o, keys[k], &u)) < 0)
                                return r;
                        if (u > UINT32_MAX)
                                return -ERANGE;
                        *fields[k] = (uint32_t) u;
                }
        }
        u = 0;
        if ((r = get_u64(o, "warn_signal", &u)) < 0 || (r = get_u64(o, "warn_sec", &s->warn_sec)) < 0 ||
            (r = get_bool(o, "warn_batch_only", &s->warn_batch_only)) < 0 ||
            (r = get_bool(o, "output_append", &s->output_append)) < 0)
                return r;
        if (u > 64)
                return -ERANGE;
        s->warn_signal = (int) u;
        if ((r = get_bool(o, "device_fence", &s->device_fence)) < 0 ||
            (r = get_strv(o, "device_allow", &s->device_allow)) < 0 ||
            (r = get_strv(o, "device_environment", &s->device_environment)) < 0)
                return r;
        u = 0;
        if ((r = get_u64(o, "uid", &u)) < 0)
                return r;
        s->uid = (uid_t) u;
        u = 0;
        if ((r = get_u64(o, "gid", &u)) < 0)
                return r;
        s->gid = (gid_t) u;
        if (json_object_object_get_ex(o, "umask", &a)) {
                u = 0;
                if ((r = get_u64(o, "umask", &u)) < 0)
                        return r;
                if (u > 0777)
                        return -ERANGE;
                s->umask = (mode_t) u;
                s->has_umask = true;
        }
        if (!s->argv == !s->script)
                return -EBADMSG; /* exactly one of them */

        if (json_object_object_get_ex(o, "supplementary_gids", &a) && json_object_is_type(a, json_type_array)) {
                size_t n = json_object_array_length(a);
                s->supplementary_gids = new0(gid_t, n);
                if (!s->supplementary_gids)
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++)
                        s->supplementary_gids[i] = (gid_t) json_object_get_uint64(json_object_array_get_idx(a, i));
                s->n_supplementary_gids = n;
        }
        if (json_object_object_get_ex(o, "io_limits", &a) && json_object_is_type(a, json_type_array)) {
                size_t n = json_object_array_length(a);
                s->io_limits = new0(JobIoLimit, n);
                if (!s->io_limits)
                        return -ENOMEM;
                s->n_io_limits = n;
                for (size_t i = 0; i < n; i++) {
                        json_object *l = json_object_array_get_idx(a, i);
                        JobIoLimit *d = &s->io_limits[i];
                        if ((r = get_str(l, "device", &d->device)) < 0 ||
                            (r = get_u64(l, "read_bps", &d->read_bps)) < 0 ||
                            (r = get_u64(l, "write_bps", &d->write_bps)) < 0 ||
                            (r = get_u64(l, "read_iops", &d->read_iops)) < 0 ||
                            (r = get_u64(l, "write_iops", &d->write_iops)) < 0)
                                return r;
                        if (!d->device)
                                return -EBADMSG;
                }
        }
        *ret = TAKE_PTR(s);
        return 0;
}

int job_outcome_to_json(const JobOutcome *x, char **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        int r = 0;

        if (!o)
                return -ENOMEM;
        r |= json_add_u64(o, "id", x->id);
        r |= json_object_object_add(o, "exit_code", json_object_new_int(x->exit_code));
        r |= json_object_object_add(o, "signal", json_object_new_int(x->signal));
        r |= json_object_object_add(o, "oom_killed", json_object_new_boolean(x->oom_killed));
        r |= json_object_object_add(o, "timed_out", json_object_new_boolean(x->timed_out));
        r |= json_object_object_add(o, "cancelled", json_object_new_boolean(x->cancelled));
        r |= json_object_object_add(o, "launch_errno", json_object_new_int(x->launch_errno));
        r |= json_add_string(o, "launch_error", x->launch_error);
        r |= json_add_string(o, "launch_detail", x->launch_detail);
        r |= json_add_u64(o, "start_usec", x->start_usec);
        r |= json_add_u64(o, "end_usec", x->end_usec);
        r |= json_add_u64(o, "suspended_usec", x->suspended_usec);
        r |= json_add_u64(o, "cpu_usage_usec", x->cpu_usage_usec);
        r |= json_add_u64(o, "cpu_user_usec", x->cpu_user_usec);
        r |= json_add_u64(o, "cpu_system_usec", x->cpu_system_usec);
        r |= json_add_u64(o, "memory_peak", x->memory_peak);
        r |= json_add_u64(o, "io_read_bytes", x->io_read_bytes);
        r |= json_add_u64(o, "io_write_bytes", x->io_write_bytes);
        r |= json_add_u64(o, "io_read_ios", x->io_read_ios);
        r |= json_add_u64(o, "io_write_ios", x->io_write_ios);
        r |= json_add_u64(o, "pids_peak", x->pids_peak);
        r |= json_add_u64(o, "oom_kills", x->oom_kills);
        if (x->has_pressure) {
                r |= json_add_u64(o, "cpu_some_usec", x->cpu_some_usec);
                r |= json_add_u64(o, "cpu_full_usec", x->cpu_full_usec);
                r |= json_add_u64(o, "memory_some_usec", x->memory_some_usec);
                r |= json_add_u64(o, "memory_full_usec", x->memory_full_usec);
                r |= json_add_u64(o, "io_some_usec", x->io_some_usec);
                r |= json_add_u64(o, "io_full_usec", x->io_full_usec);
        }
        if (r < 0)
                return -ENOMEM;
        return to_string(o, ret);
}

int job_outcome_from_json(const char *text, JobOutcome *ret) {
        _cleanup_json_ json_object *o = json_tokener_parse(text);
        JobOutcome x = {};
        uint64_t ec = 0, sig = 0, le = 0;
        json_object *v;
        int r;

        if (!o || !json_object_is_type(o, json_type_object))
                return -EBADMSG;
        if (json_object_object_get_ex(o, "exit_code", &v))
                ec = (uint64_t) json_object_get_int(v);
        if (json_object_object_get_ex(o, "signal", &v))
                sig = (uint64_t) json_object_get_int(v);
        if (json_object_object_get_ex(o, "launch_errno", &v))
                le = (uint64_t) json_object_get_int(v);
        x.exit_code = (int) ec;
        x.signal = (int) sig;
        x.launch_errno = (int) le;
        if ((r = get_u64(o, "id", &x.id)) < 0 || (r = get_bool(o, "oom_killed", &x.oom_killed)) < 0 ||
            (r = get_bool(o, "timed_out", &x.timed_out)) < 0 || (r = get_bool(o, "cancelled", &x.cancelled)) < 0 ||
            (r = get_u64(o, "start_usec", &x.start_usec)) < 0 || (r = get_u64(o, "end_usec", &x.end_usec)) < 0 ||
            (r = get_u64(o, "suspended_usec", &x.suspended_usec)) < 0 ||
            (r = get_u64(o, "cpu_usage_usec", &x.cpu_usage_usec)) < 0 ||
            (r = get_u64(o, "cpu_user_usec", &x.cpu_user_usec)) < 0 ||
            (r = get_u64(o, "cpu_system_usec", &x.cpu_system_usec)) < 0 ||
            (r = get_u64(o, "memory_peak", &x.memory_peak)) < 0 ||
            (r = get_u64(o, "io_read_bytes", &x.io_read_bytes)) < 0 ||
            (r = get_u64(o, "io_write_bytes", &x.io_write_bytes)) < 0 ||
            (r = get_u64(o, "io_read_ios", &x.io_read_ios)) < 0 ||
            (r = get_u64(o, "io_write_ios", &x.io_write_ios)) < 0 ||
            (r = get_u64(o, "pids_peak", &x.pids_peak)) < 0 || (r = get_u64(o, "oom_kills", &x.oom_kills)) < 0 ||
            (r = get_str(o, "launch_error", &x.launch_error)) < 0 ||
            (r = get_str(o, "launch_detail", &x.launch_detail)) < 0) {
                job_outcome_done(&x);
                return r;
        }
        /* Written by supervisors that read the pressure files; older ones leave them out. */
        x.has_pressure = json_object_object_get_ex(o, "memory_some_usec", NULL);
        if (x.has_pressure &&
            ((r = get_u64(o, "cpu_some_usec", &x.cpu_some_usec)) < 0 ||
             (r = get_u64(o, "cpu_full_usec", &x.cpu_full_usec)) < 0 ||
             (r = get_u64(o, "memory_some_usec", &x.memory_some_usec)) < 0 ||
             (r = get_u64(o, "memory_full_usec", &x.memory_full_usec)) < 0 ||
             (r = get_u64(o, "io_some_usec", &x.io_some_usec)) < 0 ||
             (r = get_u64(o, "io_full_usec", &x.io_full_usec)) < 0)) {
                job_outcome_done(&x);
                return r;
        }
        *ret = x;
        return 0;
}
