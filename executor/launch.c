/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Starting a job: write its spec for the supervisor, spawn the supervisor (held on a sync
 * pipe), ask systemd to create corral-job-<id>.scope around it, and let it go once the
 * start job has completed. JobRemoved is matched (by unit name) from executor_new() on,
 * before any StartTransientUnit call, so the completion can never be missed. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "errno-util.h"
#include "executor-internal.h"
#include "fd-util.h"
#include "log.h"
#include "properties.h"
#include "unit-name.h"

struct Launch {
        Executor *executor;
        uint64_t job_id;
        char *unit;
        pid_t pid;
        int sync_fd; /* write end: 'G' lets the supervisor go */
        bool retried;
        bool stopping; /* a stale scope of the same name is being stopped: its JobRemoved is not ours */
        bool forking;  /* asked of the fork server, its answer not yet in */
        bool pidfd;    /* child_source watches a pidfd (the fork server reaps), not our child */
        struct ExecProperties *props;
        sd_bus_slot *call_slot;
        sd_event_source *child_source, *retry_timer;
        Launch *next;
};

static Launch *launch_free(Launch *l) {
        if (!l)
                return NULL;
        sd_bus_slot_unref(l->call_slot);
        sd_event_source_disable_unref(l->child_source);
        sd_event_source_disable_unref(l->retry_timer);
        safe_close(l->sync_fd);
        exec_properties_free(l->props);
        free(l->unit);
        free(l);
        return NULL;
}

static void launch_unlink(Launch *l) {
        for (Launch **p = &l->executor->launches; *p; p = &(*p)->next)
                if (*p == l) {
                        *p = l->next;
                        break;
                }
}

static Launch *launch_find_unit(Executor *e, const char *unit) {
        for (Launch *l = e->launches; l; l = l->next)
                if (streq(l->unit, unit))
                        return l;
        return NULL;
}

bool executor_is_launching(Executor *e, uint64_t job_id) {
        for (Launch *l = e->launches; l; l = l->next)
                if (l->job_id == job_id)
                        return true;
        return false;
}

/* Ends a launch and reports it. On failure the held supervisor sees EOF on its sync pipe
 * and exits without starting anything. */
static void launch_finish(Launch *l, int error, const char *message) {
        Executor *e = l->executor;
        uint64_t id = l->job_id;

        if (error >= 0) {
                if (loop_write(l->sync_fd, "G", 1) < 0)
                        error = -EPIPE, message = "the supervisor went away before the job could start";
        } else if (l->pid > 0) {
                if (l->pidfd)
                        (void) syscall(SYS_pidfd_send_signal, sd_event_source_get_io_fd(l->child_source), SIGKILL,
                                       NULL, 0);
                else
                        (void) kill(l->pid, SIGKILL);
        }
        l->sync_fd = safe_close(l->sync_fd);
        launch_unlink(l);
        if (l->pidfd)
                l->child_source = sd_event_source_disable_unref(l->child_source);
        /* The supervisor's exit is reaped by its own child source, which outlives us if
         * needed: hand it over to the event loop with a floating reference. */
        if (l->child_source) {
                (void) sd_event_source_set_userdata(l->child_source, NULL);
                (void) sd_event_source_set_floating(l->child_source, true);
                l->child_source = sd_event_source_unref(l->child_source);
        }
        launch_free(l);
        if (e->config.on_started)
                e->config.on_started(e, id, error, message, e->config.userdata);
}

static int on_supervisor_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        /* Reaping is all there is to do: the outcome arrives as a file. A supervisor that
         * dies while still held means the launch failed. */
        Launch *l = userdata;
        if (!l) {
                /* A floating reaper: dropping the loop's reference frees it (sd-event defers
                 * that until this dispatch is over). */
                (void) sd_event_source_set_floating(s, false);
                return 0;
        }
        {
                l->child_source = sd_event_source_disable_unref(l->child_source);
                l->pid = 0;
                launch_finish(l, -ECHILD, "the job's supervisor exited before the scope was started");
        }
        return 0;
}

/* A supervisor from the fork server, which reaps it: its pidfd is readable once it is gone. */
static int on_supervisor_pidfd(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Launch *l = userdata;

        l->child_source = sd_event_source_disable_unref(l->child_source);
        l->pidfd = false;
        l->pid = 0;
        launch_finish(l, -ECHILD, "the job's supervisor exited before the scope was started");
        return 0;
}

static int on_reset_failed_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);
static int on_stop_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);
static int start_transient_unit(Launch *l);

static int on_start_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Launch *l = userdata;
        const sd_bus_error *err = sd_bus_message_get_error(m);

        l->call_slot = sd_bus_slot_unref(l->call_slot);
        if (!err)
                return 0; /* Now wait for JobRemoved. */

        if (sd_bus_error_has_name(err, "org.freedesktop.systemd1.UnitExists") && !l->retried) {
                /* A scope of the same name left from an earlier run of this job: a failed one
                 * not yet collected, or an empty one that systemd keeps active (corrald was
                 * killed while systemd created it, and its supervisor never got in). Nothing of
                 * ours runs there (the job is being launched, so no run of it is live): stop
                 * it, reset it, and try once more. */
                int r;
                l->retried = true;
                l->stopping = true;
                r = sd_bus_call_method_async(l->executor->bus, &l->call_slot, "org.freedesktop.systemd1",
                                             "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                                             "StopUnit", on_stop_reply, l, "ss", l->unit, "replace");
                if (r >= 0)
                        return 0;
                l->stopping = false;
        }

        char msg[512];
        snprintf(msg, sizeof msg, "systemd refused to start %s: %s", l->unit, err->message ?: err->name);
        launch_finish(l, -sd_bus_message_get_errno(m) ?: -EIO, msg);
        return 0;
}

static int on_retry_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Launch *l = userdata;
        int r;

        l->retry_timer = sd_event_source_disable_unref(l->retry_timer);
        l->stopping = false;
        r = sd_bus_call_method_async(l->executor->bus, &l->call_slot, "org.freedesktop.systemd1",
                                     "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                                     "ResetFailedUnit", on_reset_failed_reply, l, "s", l->unit);
        if (r < 0)
                launch_finish(l, r, "cannot ask systemd to reset the scope");
        return 0;
}

static int on_stop_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Launch *l = userdata;
        int r;

        /* Whether the stop was queued or the unit had already gone, give systemd a moment
         * to finish it (an empty scope stops at once), then reset and start again. */
        l->call_slot = sd_bus_slot_unref(l->call_slot);
        r = sd_event_add_time_relative(l->executor->event, &l->retry_timer, CLOCK_MONOTONIC, 1000 * 1000, 0,
                                       on_retry_timer, l);
        if (r < 0) {
                l->stopping = false;
                launch_finish(l, r, "cannot wait for the stale scope to stop");
        }
        return 0;
}

static int on_reset_failed_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Launch *l = userdata;
        const sd_bus_error *err = sd_bus_message_get_error(m);
        int r;

        l->call_slot = sd_bus_slot_unref(l->call_slot);
        /* Gone already (the stop collected it): nothing to reset. */
        if (err && sd_bus_error_has_name(err, "org.freedesktop.systemd1.NoSuchUnit"))
                err = NULL;
        if (err) {
                char msg[512];
                /* Not failed but active: a live unit of that name is a real conflict. */
                snprintf(msg, sizeof msg, "%s already exists and is not a failed unit: %s", l->unit,
                         err->message ?: err->name);
                launch_finish(l, -EEXIST, msg);
                return 0;
        }
        r = start_transient_unit(l);
        if (r < 0)
                launch_finish(l, r, "cannot ask systemd to start the scope");
        return 0;
}

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Executor *e = userdata;
        const char *path, *unit, *result;
        uint32_t id;
        Launch *l;
        char msg[256];

        if (sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0)
                return 0;
        l = launch_find_unit(e, unit);
        if (!l || l->forking || l->call_slot || l->stopping || l->retry_timer)
                return 0; /* not ours, or a stale job of a previous attempt (or its stop) */
        if (streq(result, "done")) {
                launch_finish(l, 0, NULL);
                return 0;
        }
        snprintf(msg, sizeof msg, "systemd could not start %s (job result: %s)", unit, result);
        launch_finish(l, -EIO, msg);
        return 0;
}

static int start_transient_unit(Launch *l) {
        Executor *e = l->executor;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = exec_transient_unit_begin(e->bus, l->unit, &m);
        if (r < 0)
                return r;
        r = exec_properties_append(l->props, m);
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "(sv)", "PIDs", "au", 1, (uint32_t) l->pid);
        if (r < 0)
                return r;
        if (e->before_unit) {
                r = sd_bus_message_append(m, "(sv)", "Before", "as", 1, e->before_unit);
                if (r < 0)
                        return r;
        }
        return exec_transient_unit_send(e->bus, m, &l->call_slot, on_start_reply, l);
}

int executor_watch_job_removed(Executor *e) {
        return sd_bus_match_signal_async(e->bus, &e->job_removed_slot, "org.freedesktop.systemd1",
                                         "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                                         "JobRemoved", on_job_removed, NULL, e);
}

void executor_drop_launches(Executor *e) {
        while (e->launches) {
                Launch *l = e->launches;
                e->launches = l->next;
                launch_free(l);
        }
}

static int write_spec_file(Executor *e, const JobSpec *spec, char **ret_path) {
        _cleanup_free_ char *json = NULL, *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        r = job_spec_to_json(spec, &json);
        if (r < 0)
                return r;
        if (asprintf(&path, "%s/jobs/%" PRIu64 ".json", e->run_dir, spec->id) < 0)
                return -ENOMEM;
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return negative_errno();
        r = loop_write(fd, json, strlen(json));
        if (r < 0)
                return r;
        *ret_path = TAKE_PTR(path);
        return 0;
}

/* The descriptors the supervisor inherits: the sync pipe's end as 3, an interactive job's
 * stdin, stdout and stderr as 4, 5 and 6. */
#define SUPERVISOR_STDIO_FD 4

/* The supervisor spawned and exec'ed by us (an interactive job's, which inherits its
 * terminal's descriptors, or where the fork server is not to be had), held on a new sync
 * pipe. */
static int launch_spawn(Launch *l, const int *fds, size_t n_fds) {
        Executor *e = l->executor;
        int high[3] = { -EBADF, -EBADF, -EBADF };
        _cleanup_free_ char *spec_path = NULL, *result_dir = NULL, *id = NULL, *kill_wait = NULL;
        posix_spawn_file_actions_t fa;
        int sync[2], r;

        if (asprintf(&spec_path, "%s/jobs/%" PRIu64 ".json", e->run_dir, l->job_id) < 0 ||
            asprintf(&result_dir, "%s/results", e->run_dir) < 0 || asprintf(&id, "%" PRIu64, l->job_id) < 0 ||
            asprintf(&kill_wait, "%" PRIu64, e->config.kill_wait_sec) < 0)
                return -ENOMEM;
        /* Above the numbers they are dup'ed to, so that no dup2 overwrites another's source. */
        for (size_t i = 0; i < n_fds; i++) {
                high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 10);
                if (high[i] < 0) {
                        r = negative_errno();
                        for (size_t k = 0; k < i; k++)
                                safe_close(high[k]);
                        return r;
                }
        }
        if (pipe2(sync, O_CLOEXEC) < 0) {
                r = negative_errno();
                for (size_t i = 0; i < n_fds; i++)
                        safe_close(high[i]);
                return r;
        }
        /* posix_spawn (vfork underneath): no copy of a daemon holding 100,000 jobs. */
        char *argv[] = { e->supervisor_path, (char *) "--job-id", id, (char *) "--spec", spec_path,
                         (char *) "--result-dir", result_dir, (char *) "--sync-fd", (char *) "3",
                         (char *) "--kill-wait", kill_wait, n_fds > 0 ? (char *) "--stdio-fds" : NULL, NULL };
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, sync[0], 3);
        for (size_t i = 0; i < n_fds; i++)
                posix_spawn_file_actions_adddup2(&fa, high[i], SUPERVISOR_STDIO_FD + (int) i);
        r = posix_spawn(&l->pid, e->supervisor_path, &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        for (size_t i = 0; i < n_fds; i++)
                safe_close(high[i]);
        safe_close(sync[0]);
        safe_close(l->sync_fd);
        l->sync_fd = sync[1];
        if (r != 0)
                return -r;

        r = sd_event_add_child(e->event, &l->child_source, l->pid, WEXITED, on_supervisor_exit, l);
        if (r < 0) {
                (void) kill(l->pid, SIGKILL);
                return r;
        }
        return 0;
}

/* Starts the scope around a supervisor we hold; on failure it is killed (and reaped). */
static void launch_begin(Launch *l) {
        int r = start_transient_unit(l);
        if (r < 0)
                launch_finish(l, r, "cannot ask systemd to start the scope");
}

void executor_forked(Executor *e, uint64_t job_id, pid_t pid, int pidfd, int error) {
        Launch *l;
        int r;

        for (l = e->launches; l; l = l->next)
                if (l->job_id == job_id && l->forking)
                        break;
        if (!l) {
                /* Abandoned meanwhile: its sync pipe is closed, so it exits by itself. */
                safe_close(pidfd);
                return;
        }
        l->forking = false;
        if (error != 0 || pid <= 0) {
                safe_close(pidfd);
                log_debug_errno(error, "Job %" PRIu64 ": the fork server could not fork its supervisor: %m", job_id);
                r = launch_spawn(l, NULL, 0);
                if (r < 0) {
                        launch_finish(l, r, "cannot start the job's supervisor");
                        return;
                }
                launch_begin(l);
                return;
        }
        l->pid = pid;
        if (pidfd >= 0) {
                r = sd_event_add_io(e->event, &l->child_source, pidfd, EPOLLIN, on_supervisor_pidfd, l);
                if (r >= 0) {
                        (void) sd_event_source_set_io_fd_own(l->child_source, true);
                        l->pidfd = true;
                } else
                        safe_close(pidfd);
        }
        launch_begin(l);
}

void executor_fork_server_lost(Executor *e) {
        for (;;) {
                Launch *l;
                int r;

                for (l = e->launches; l && !l->forking; l = l->next)
                        ;
                if (!l)
                        return;
                l->forking = false;
                r = launch_spawn(l, NULL, 0);
                if (r < 0)
                        launch_finish(l, r, "cannot start the job's supervisor");
                else
                        launch_begin(l);
        }
}

int executor_start(Executor *e, const JobSpec *spec) {
        return executor_start_fds(e, spec, NULL, 0);
}


int executor_start_fds(Executor *e, const JobSpec *spec, const int *fds, size_t n_fds) {
        _cleanup_free_ char *spec_path = NULL;
        _cleanup_(exec_properties_freep) ExecProperties *props = NULL;
        const ExecProperty *slice;
        Launch *l;
        int r;

        if (!e->bus)
                return -ENOTCONN;
        if (executor_is_launching(e, spec->id))
                return -EEXIST;
        if (n_fds != 0 && n_fds != 3)
                return -EINVAL;

        /* Validate the limits before anything is spawned: a bad spec is the caller's error. */
        r = exec_properties_build(spec, e->systemd_version, &props);
        if (r < 0)
                return r;
        slice = exec_properties_get(props, "Slice");
        if (slice) {
                r = executor_hold_slice(e, slice->string);
                if (r < 0)
                        log_debug_errno(r, "Cannot hold the cgroup controllers of %s: %m", slice->string);
        }
        r = write_spec_file(e, spec, &spec_path);
        if (r < 0)
                return r;

        l = new0(Launch, 1);
        if (!l)
                return -ENOMEM;
        l->executor = e;
        l->job_id = spec->id;
        l->sync_fd = -EBADF;
        l->props = TAKE_PTR(props);
        r = unit_name_job_scope(spec->id, &l->unit);
        if (r < 0)
                return launch_free(l), r;

        if (n_fds == 0) {
                /* The usual way: forked by the fork server (fork-server.c). */
                int sync[2];
                if (pipe2(sync, O_CLOEXEC) < 0)
                        return launch_free(l), negative_errno();
                r = executor_fork_request(e, l->job_id, sync[0]);
                safe_close(sync[0]);
                if (r >= 0) {
                        l->sync_fd = sync[1];
                        l->forking = true;
                        l->next = e->launches;
                        e->launches = l;
                        return 0;
                }
                safe_close(sync[1]);
                log_debug_errno(r, "Job %" PRIu64 ": no fork server, spawning its supervisor: %m", l->job_id);
        }
        r = launch_spawn(l, fds, n_fds);
        if (r < 0)
                return launch_free(l), r;
        l->next = e->launches;
        e->launches = l;

        r = start_transient_unit(l);
        if (r < 0) {
                launch_unlink(l);
                (void) kill(l->pid, SIGKILL);
                /* keep the child source so the supervisor is reaped */
                (void) sd_event_source_set_userdata(l->child_source, NULL);
                (void) sd_event_source_set_floating(l->child_source, true);
                l->child_source = sd_event_source_unref(l->child_source);
                launch_free(l);
                return r;
        }
        return 0;
}
