/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Suspend, resume and cancel. Freezing goes through systemd (FreezeUnit/ThawUnit) so that
 * `systemctl status` tells the truth, and is confirmed in the scope's cgroup.events; where
 * systemd lacks the methods we write cgroup.freeze ourselves. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup-freezer.h"
#include "cgroup-util.h"
#include "errno-util.h"
#include "executor-internal.h"
#include "fd-util.h"
#include "log.h"
#include "unit-name.h"

#define FREEZE_CONFIRM_USEC (15 * UINT64_C(1000000))

typedef struct Control {
        Executor *executor;
        uint64_t job_id;
        char *unit;
        char *cgroup; /* relative to the cgroup root */
        bool freeze;
        bool cancel;
        executor_done_t done;
        void *userdata;
        sd_bus_slot *slot;
        sd_event_source *watch, *timeout;
        int inotify_fd;
        Control *next; /* in Executor.force_kills */
} Control;

static Control *control_free(Control *c) {
        if (!c)
                return NULL;
        sd_bus_slot_unref(c->slot);
        sd_event_source_disable_unref(c->watch);
        sd_event_source_disable_unref(c->timeout);
        safe_close(c->inotify_fd);
        free(c->unit);
        free(c->cgroup);
        free(c);
        return NULL;
}

static void control_finish(Control *c, int error, const char *message) {
        if (c->done)
                c->done(c->executor, c->job_id, error, message, c->userdata);
        control_free(c);
}

static int on_frozen_check(Control *c) {
        int r = cg_is_frozen(c->executor->cgroup_root_fd, c->cgroup);
        if (r == -ENOENT) {
                control_finish(c, -ESRCH, "the job's scope is gone");
                return 1;
        }
        if (r >= 0 && (r > 0) == c->freeze) {
                control_finish(c, 0, NULL);
                return 1;
        }
        return 0;
}

static int on_events_changed(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        char buf[4096];
        (void) read(fd, buf, sizeof buf);
        (void) on_frozen_check(userdata);
        return 0;
}

static int on_confirm_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Control *c = userdata;
        if (!on_frozen_check(c))
                control_finish(c, -ETIMEDOUT,
                               c->freeze ? "the job's cgroup did not report frozen in time"
                                         : "the job's cgroup did not report thawed in time");
        return 0;
}

/* The state change was requested; wait until cgroup.events shows it. */
static void control_confirm(Control *c) {
        int r;

        if (on_frozen_check(c))
                return;
        c->inotify_fd = cg_events_watch_fd(c->executor->cgroup_root_fd, c->cgroup);
        if (c->inotify_fd < 0) {
                control_finish(c, c->inotify_fd, "cannot watch the job's cgroup.events");
                return;
        }
        r = sd_event_add_io(c->executor->event, &c->watch, c->inotify_fd, EPOLLIN, on_events_changed, c);
        if (r >= 0)
                r = sd_event_add_time_relative(c->executor->event, &c->timeout, CLOCK_MONOTONIC,
                                               FREEZE_CONFIRM_USEC, 0, on_confirm_timeout, c);
        if (r < 0)
                control_finish(c, r, "cannot wait for the freezer");
        else
                (void) on_frozen_check(c); /* it may have flipped before the watch existed */
}

static int on_freeze_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Control *c = userdata;
        const sd_bus_error *err = sd_bus_message_get_error(m);
        int r;

        c->slot = sd_bus_slot_unref(c->slot);
        if (err) {
                if (sd_bus_error_has_name(err, SD_BUS_ERROR_UNKNOWN_METHOD)) {
                        /* systemd < 246: freeze the cgroup directly. */
                        r = cg_freeze(c->executor->cgroup_root_fd, c->cgroup, c->freeze);
                        if (r < 0) {
                                control_finish(c, r, "cannot write cgroup.freeze");
                                return 0;
                        }
                } else if (sd_bus_error_has_name(err, "org.freedesktop.systemd1.NoSuchUnit")) {
                        control_finish(c, -ESRCH, "the job's scope does not exist");
                        return 0;
                } else {
                        char msg[512];
                        snprintf(msg, sizeof msg, "systemd could not %s %s: %s", c->freeze ? "freeze" : "thaw",
                                 c->unit, err->message ?: err->name);
                        control_finish(c, -sd_bus_message_get_errno(m) ?: -EIO, msg);
                        return 0;
                }
        }
        control_confirm(c);
        return 0;
}

static int control_new(Executor *e, uint64_t job_id, executor_done_t done, void *userdata, Control **ret) {
        Control *c;
        int r;

        if (!e->bus)
                return -ENOTCONN;
        c = new0(Control, 1);
        if (!c)
                return -ENOMEM;
        c->executor = e;
        c->job_id = job_id;
        c->done = done;
        c->userdata = userdata;
        c->inotify_fd = -EBADF;
        r = unit_name_job_scope(job_id, &c->unit);
        if (r < 0)
                return control_free(c), r;
        *ret = c;
        return 0;
}

int executor_freeze(Executor *e, uint64_t job_id, const char *project, bool freeze, executor_done_t done,
                    void *userdata) {
        Control *c;
        int r;

        r = control_new(e, job_id, done, userdata, &c);
        if (r < 0)
                return r;
        c->freeze = freeze;
        r = executor_job_cgroup(job_id, project, &c->cgroup);
        if (r < 0)
                return control_free(c), r;
        r = sd_bus_call_method_async(e->bus, &c->slot, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                     "org.freedesktop.systemd1.Manager", freeze ? "FreezeUnit" : "ThawUnit",
                                     on_freeze_reply, c, "s", c->unit);
        if (r < 0)
                return control_free(c), r;
        return 0;
}

static int on_kill_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Control *c = userdata;
        const sd_bus_error *err = sd_bus_message_get_error(m);

        c->slot = sd_bus_slot_unref(c->slot);
        if (err && !sd_bus_error_has_name(err, "org.freedesktop.systemd1.NoSuchUnit")) {
                char msg[512];
                snprintf(msg, sizeof msg, "systemd could not signal %s: %s", c->unit, err->message ?: err->name);
                control_finish(c, -sd_bus_message_get_errno(m) ?: -EIO, msg);
                return 0;
        }
        control_finish(c, 0, NULL);
        return 0;
}

static int send_kill(Control *c, int sig) {
        return sd_bus_call_method_async(c->executor->bus, &c->slot, "org.freedesktop.systemd1",
                                        "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                                        "KillUnit", on_kill_reply, c, "ssi", c->unit, "all", sig);
}

static int on_thaw_for_cancel(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Control *c = userdata;
        int r;

        /* Thawed or not (a thaw error is no reason to leave the job running), signal it:
         * SIGTERM cannot be handled by a frozen task. */
        c->slot = sd_bus_slot_unref(c->slot);
        r = send_kill(c, SIGTERM);
        if (r < 0)
                control_finish(c, r, "cannot ask systemd to signal the job");
        return 0;
}

static void force_kill_unlink(Control *c) {
        for (Control **p = &c->executor->force_kills; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        return;
                }
}

void executor_outcome_seen(Executor *e, uint64_t job_id) {
        /* The job has ended: its pending forced kill must not hit a later run of it. */
        for (Control *c = e->force_kills, *next; c; c = next) {
                next = c->next;
                if (c->job_id == job_id) {
                        force_kill_unlink(c);
                        control_free(c);
                }
        }
}

void executor_drop_force_kills(Executor *e) {
        while (e->force_kills) {
                Control *c = e->force_kills;
                force_kill_unlink(c);
                control_free(c);
        }
}

static int on_force_kill(sd_event_source *s, uint64_t usec, void *userdata) {
        Control *c = userdata;
        force_kill_unlink(c);
        /* Past the grace period and then some, and the scope is still there: the
         * supervisor is stuck or gone. SIGKILL the whole scope. */
        c->timeout = sd_event_source_disable_unref(c->timeout);
        c->done = NULL;
        if (send_kill(c, SIGKILL) < 0)
                control_free(c);
        return 0;
}

int executor_cancel(Executor *e, uint64_t job_id, executor_done_t done, void *userdata) {
        Control *c, *force;
        int r;

        r = control_new(e, job_id, done, userdata, &c);
        if (r < 0)
                return r;
        c->cancel = true;
        r = sd_bus_call_method_async(e->bus, &c->slot, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                     "org.freedesktop.systemd1.Manager", "ThawUnit", on_thaw_for_cancel, c,
                                     "s", c->unit);
        if (r < 0)
                return control_free(c), r;

        /* A second control that SIGKILLs the scope if it is still around well after the
         * grace period; KillUnit on a unit that is gone is harmless. */
        if (control_new(e, job_id, NULL, NULL, &force) >= 0) {
                if (sd_event_add_time_relative(e->event, &force->timeout, CLOCK_MONOTONIC,
                                               (e->config.kill_wait_sec + 15) * UINT64_C(1000000), 0,
                                               on_force_kill, force) < 0)
                        control_free(force);
                else {
                        force->next = e->force_kills;
                        e->force_kills = force;
                }
        }
        return 0;
}

/* Preemption. */

static int append_mask(sd_bus_message *m, const char *name, const CpuSet *set) {
        uint8_t buf[CPU_SET_MAX / 8];
        size_t n = cpu_set_to_mask(set, buf, sizeof buf);
        int r;

        r = sd_bus_message_open_container(m, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", name);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', "ay");
        if (r >= 0)
                r = sd_bus_message_append_array(m, 'y', buf, n);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

static int on_props_then_thaw(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Control *c = userdata;
        const sd_bus_error *err = sd_bus_message_get_error(m);
        int r;

        c->slot = sd_bus_slot_unref(c->slot);
        if (err) {
                char msg[512];
                snprintf(msg, sizeof msg, "systemd could not move %s to its new CPUs: %s", c->unit,
                         err->message ?: err->name);
                control_finish(c, -sd_bus_message_get_errno(m) ?: -EIO, msg);
                return 0;
        }
        r = sd_bus_call_method_async(c->executor->bus, &c->slot, "org.freedesktop.systemd1",
                                     "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager", "ThawUnit",
                                     on_freeze_reply, c, "s", c->unit);
        if (r < 0)
                control_finish(c, r, "cannot ask systemd to thaw the job");
        return 0;
}

/* The supervisor bound the job's leaf to its nodes (bind_leaf_mems()), the scope has
 * them all. The leaf takes the scope's (a leaf cannot be emptied while it has processes),
 * so that it follows the scope to its new ones below: a leaf bound to the old nodes would
 * keep only what both share. Widening moves no page; the move to the new nodes is
 * systemd's, as the scope's own. Nothing to do where the leaf has no cpuset of its own. */
static int widen_leaf_mems(Executor *e, const char *scope) {
        _cleanup_free_ char *all = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        fd = cg_open(e->cgroup_root_fd, scope);
        if (fd < 0)
                return fd == -ENOENT ? 0 : fd;
        r = cg_read_attr(fd, "cpuset.mems.effective", &all);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        r = write_string_file_at(fd, "job/cpuset.mems", all);
        return r == -ENOENT ? 0 : r;
}

int executor_thaw_onto(Executor *e, uint64_t job_id, const char *project, const CpuSet *cpus, const CpuSet *mems,
                       bool swap_off, executor_done_t done, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        Control *c;
        int r;

        if (!cpus && !mems && !swap_off)
                return executor_freeze(e, job_id, project, false, done, userdata);
        r = control_new(e, job_id, done, userdata, &c);
        if (r < 0)
                return r;
        c->freeze = false;
        r = executor_job_cgroup(job_id, project, &c->cgroup);
        if (r < 0)
                return control_free(c), r;
        if (mems && !cpu_set_is_empty(mems)) {
                /* Not fatal: the job must thaw, on the nodes both share at worst. */
                r = widen_leaf_mems(e, c->cgroup);
                if (r < 0)
                        log_debug_errno(r, "Cannot widen the memory nodes of %s/job: %m", c->cgroup);
        }
        /* Runtime only: what a later preemption moves it to again is another decision. */
        r = sd_bus_message_new_method_call(e->bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                           "org.freedesktop.systemd1.Manager", "SetUnitProperties");
        if (r >= 0)
                r = sd_bus_message_append(m, "sb", c->unit, true);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r >= 0 && cpus)
                r = append_mask(m, "AllowedCPUs", cpus);
        /* On cgroup v2 the kernel migrates the pages to the new nodes (cpuset.mems). */
        if (r >= 0 && mems && !cpu_set_is_empty(mems))
                r = append_mask(m, "AllowedMemoryNodes", mems);
        if (r >= 0 && swap_off)
                r = sd_bus_message_append(m, "(sv)", "MemorySwapMax", "t", UINT64_C(0));
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_call_async(e->bus, &c->slot, m, on_props_then_thaw, c, 0);
        if (r < 0)
                return control_free(c), r;
        return 0;
}

/* Reclaim: a child writes the frozen scope's memory.current to its memory.reclaim, which
 * takes as long as the kernel needs to push that much out; the daemon must not wait. */
static int on_reclaim_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        Control *c = userdata;

        c->timeout = sd_event_source_disable_unref(c->timeout); /* the child source, see below */
        if (si->si_code == CLD_EXITED && si->si_status == 0)
                control_finish(c, 0, NULL);
        else if (si->si_code == CLD_EXITED && si->si_status == 2)
                control_finish(c, -EOPNOTSUPP, "the scope has no memory.reclaim (a kernel before 5.19)");
        else
                control_finish(c, -EIO, "writing memory.reclaim failed (no swap, or nothing reclaimable)");
        return 0;
}

_noreturn_ static void reclaim_child(int root_fd, const char *cgroup) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *cur = NULL;
        char line[64];
        int r, n;

        fd = cg_open(root_fd, cgroup);
        if (fd < 0)
                _exit(1);
        r = cg_read_attr(fd, "memory.current", &cur);
        if (r < 0)
                _exit(1);
        cur[strcspn(cur, " \n")] = 0;
        n = snprintf(line, sizeof line, "%s", cur);
        {
                _cleanup_close_ int w = openat(fd, "memory.reclaim", O_WRONLY | O_CLOEXEC);
                if (w < 0)
                        _exit(errno == ENOENT ? 2 : 1);
                /* EAGAIN: the kernel reclaimed what it could, less than asked (no swap for
                 * anonymous pages, say): still as much as there was to gain. */
                if (write(w, line, (size_t) n) < 0 && errno != EAGAIN)
                        _exit(1);
        }
        _exit(0);
}

static int on_swap_allowed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Control *c = userdata;
        const sd_bus_error *err = sd_bus_message_get_error(m);
        pid_t pid;
        int r;

        c->slot = sd_bus_slot_unref(c->slot);
        if (err) {
                control_finish(c, -sd_bus_message_get_errno(m) ?: -EIO, "systemd could not allow the scope swap");
                return 0;
        }
        pid = fork();
        if (pid < 0) {
                control_finish(c, -errno, "cannot fork");
                return 0;
        }
        if (pid == 0)
                reclaim_child(c->executor->cgroup_root_fd, c->cgroup);
        /* Control has no child slot: its timeout slot holds the child source. */
        r = sd_event_add_child(c->executor->event, &c->timeout, pid, WEXITED, on_reclaim_exit, c);
        if (r < 0) {
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                control_finish(c, r, "cannot watch the reclaim");
        }
        return 0;
}

int executor_reclaim(Executor *e, uint64_t job_id, const char *project, executor_done_t done, void *userdata) {
        Control *c;
        int r;

        r = control_new(e, job_id, done, userdata, &c);
        if (r < 0)
                return r;
        r = executor_job_cgroup(job_id, project, &c->cgroup);
        if (r < 0)
                return control_free(c), r;
        {
                _cleanup_close_ int fd = cg_open(e->cgroup_root_fd, c->cgroup);
                if (fd < 0)
                        return control_free(c), fd;
                if (faccessat(fd, "memory.reclaim", W_OK, 0) < 0) {
                        r = -errno;
                        control_free(c);
                        return r == -ENOENT ? -EOPNOTSUPP : r;
                }
        }
        /* A job with a memory limit runs with MemorySwapMax=0 (corral's launch): frozen,
         * it may go to swap; thawed, it goes back to 0 (executor_thaw_onto). */
        r = sd_bus_call_method_async(e->bus, &c->slot, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                     "org.freedesktop.systemd1.Manager", "SetUnitProperties", on_swap_allowed, c,
                                     "sba(sv)", c->unit, true, 1, "MemorySwapMax", "t", UINT64_MAX);
        if (r < 0)
                return control_free(c), r;
        return 0;
}
