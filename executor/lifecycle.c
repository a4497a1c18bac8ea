/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The Executor's life cycle: executor_new() prepares the run directory, opens the cgroup
 * root, learns systemd's version (the properties a scope may carry depend on it) and has
 * launch.c match JobRemoved before anything can be launched; executor_free() drops what
 * is still in flight. The work itself is launch.c's, control.c's and results.c's. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup-util.h"
#include "errno-util.h"
#include "executor-internal.h"
#include "fd-util.h"
#include "strv.h"

static int read_systemd_version(sd_bus *bus, unsigned *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error err = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *v = NULL;
        int r;

        r = sd_bus_get_property_string(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                       "org.freedesktop.systemd1.Manager", "Version", &err, &v);
        if (r < 0)
                return r;
        /* "252.39-1~deb12u2" or "253" */
        *ret = (unsigned) strtoul(v, NULL, 10);
        return 0;
}

static int mkdir_p_private(const char *path) {
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}

int executor_new(sd_event *event, sd_bus *bus, const ExecutorConfig *config, Executor **ret) {
        _cleanup_(executor_freep) Executor *e = NULL;
        _cleanup_free_ char *jobs = NULL, *results = NULL;
        int r;

        e = new0(Executor, 1);
        if (!e)
                return -ENOMEM;
        e->cgroup_root_fd = -EBADF;
        e->results_inotify_fd = -EBADF;
        e->fork_fd = -EBADF;
        e->event = sd_event_ref(event);
        e->bus = sd_bus_ref(bus);
        e->config = *config;
        e->supervisor_path = strdup(config->supervisor_path);
        e->run_dir = strdup(config->run_dir);
        e->cgroup_root = strdup(config->cgroup_root ?: CGROUP_ROOT);
        if (!e->supervisor_path || !e->run_dir || !e->cgroup_root)
                return -ENOMEM;
        if (config->before_unit && !(e->before_unit = strdup(config->before_unit)))
                return -ENOMEM;
        e->config.before_unit = e->before_unit;
        e->config.supervisor_path = e->supervisor_path;
        e->config.run_dir = e->run_dir;
        e->config.cgroup_root = e->cgroup_root;

        if (asprintf(&jobs, "%s/jobs", e->run_dir) < 0 || asprintf(&results, "%s/results", e->run_dir) < 0)
                return -ENOMEM;
        if ((r = mkdir_p_private(e->run_dir)) < 0 || (r = mkdir_p_private(jobs)) < 0 ||
            (r = mkdir_p_private(results)) < 0)
                return r;
        e->cgroup_root_fd = open(e->cgroup_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (e->cgroup_root_fd < 0)
                return negative_errno();

        /* Without a bus (the daemon's unit tests) nothing can be started, frozen or stopped,
         * but the jobs' cgroups and outcome files are read as ever. */
        if (bus) {
                r = read_systemd_version(bus, &e->systemd_version);
                if (r < 0)
                        return r;
                r = executor_watch_job_removed(e);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(e);
        return 0;
}

Executor *executor_free(Executor *e) {
        if (!e)
                return NULL;
        executor_drop_launches(e);
        executor_fork_server_stop(e);
        executor_drop_force_kills(e);
        sd_bus_slot_unref(e->job_removed_slot);
        sd_event_source_disable_unref(e->results_source);
        safe_close(e->results_inotify_fd);
        safe_close(e->cgroup_root_fd);
        sd_bus_unref(e->bus);
        sd_event_unref(e->event);
        free(e->supervisor_path);
        free(e->run_dir);
        free(e->cgroup_root);
        free(e->before_unit);
        strv_free(e->held_slices);
        free(e);
        return NULL;
}
