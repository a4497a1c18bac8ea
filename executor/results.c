/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Outcomes: each supervisor renames <run>/results/<id>.json into place when its job has
 * ended. The file is the hand-over: it is there whether or not the daemon was running at
 * that moment, and it is removed only once the daemon has recorded it. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "errno-util.h"
#include "executor-internal.h"
#include "fd-util.h"
#include "log.h"
#include "parse-util.h"
#include "unit-name.h"

#define OUTCOME_MAX (64 * 1024)

/* "<id>.json" → id; anything else (the supervisor's ".<id>.json.tmp") is not an outcome. */
static bool outcome_name(const char *name, uint64_t *ret) {
        char digits[32];
        size_t n = strlen(name);

        if (n < 6 || n - 5 >= sizeof digits || !streq(name + n - 5, ".json"))
                return false;
        memcpy(digits, name, n - 5);
        digits[n - 5] = 0;
        return safe_atou64(digits, ret) >= 0 && *ret > 0;
}

static void deliver(Executor *e, const char *name) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        JobOutcome o = {};
        uint64_t id;
        int r;

        if (!outcome_name(name, &id))
                return;
        if (asprintf(&path, "%s/results/%s", e->run_dir, name) < 0)
                return;
        r = read_file_at(AT_FDCWD, path, OUTCOME_MAX, &text, NULL);
        if (r == -ENOMEM)
                goto unread;
        if (r < 0) {
                log_debug_errno(r, "Cannot read outcome %s: %m", path);
                return;
        }
        r = job_outcome_from_json(text, &o);
        if (r == -ENOMEM) {
                job_outcome_done(&o);
                goto unread;
        }
        if (r < 0 || o.id != id) {
                /* A damaged file must not wedge the job: report it as a lost outcome. */
                log_debug("Outcome file %s is malformed.", path);
                job_outcome_done(&o);
                o = (JobOutcome) { .id = id, .launch_errno = EBADMSG };
                o.launch_error = strdup("the supervisor's outcome record was unreadable");
        }
        executor_outcome_seen(e, id);
        if (e->config.on_finished)
                e->config.on_finished(e, &o, e->config.userdata);
        job_outcome_done(&o);
        return;

unread:
        /* Short of memory is no damage: the file stays, and is read again by the next
         * executor_scan_outcomes() (executor_outcomes_unread() says one is due). */
        log_debug("Cannot read outcome %s now: out of memory.", path);
        e->outcomes_unread = true;
}

static int on_results_event(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Executor *e = userdata;
        union {
                struct inotify_event ev;
                char buf[16 * 1024];
        } u;
        ssize_t k;

        for (;;) {
                k = read(fd, &u, sizeof u);
                if (k <= 0)
                        break;
                for (char *p = u.buf; p < u.buf + k;) {
                        struct inotify_event *ev = (struct inotify_event *) p;
                        if (ev->mask & IN_Q_OVERFLOW)
                                (void) executor_scan_outcomes(e);
                        else if (ev->len > 0)
                                deliver(e, ev->name);
                        p += sizeof *ev + ev->len;
                }
        }
        return 0;
}

bool executor_outcomes_unread(Executor *e) {
        bool r = e->outcomes_unread;

        e->outcomes_unread = false;
        return r;
}

int executor_scan_outcomes(Executor *e) {
        _cleanup_free_ char *dir = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int r;

        if (asprintf(&dir, "%s/results", e->run_dir) < 0)
                return -ENOMEM;
        if (e->results_inotify_fd < 0) {
                e->results_inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
                if (e->results_inotify_fd < 0)
                        return negative_errno();
                if (inotify_add_watch(e->results_inotify_fd, dir, IN_MOVED_TO) < 0)
                        return negative_errno();
                r = sd_event_add_io(e->event, &e->results_source, e->results_inotify_fd, EPOLLIN,
                                    on_results_event, e);
                if (r < 0)
                        return r;
        }
        /* Watch first, then scan: an outcome arriving in between is seen at least once, and
         * the daemon treats a second sighting of a recorded job as a no-op. */
        d = opendir(dir);
        if (!d)
                return negative_errno();
        while ((de = readdir(d)))
                deliver(e, de->d_name);
        return 0;
}

int executor_outcome_consumed(Executor *e, uint64_t job_id, bool remove_spec) {
        char path[PATH_MAX];

        if (remove_spec) {
                snprintf(path, sizeof path, "%s/jobs/%" PRIu64 ".json", e->run_dir, job_id);
                (void) unlink(path);
        }
        snprintf(path, sizeof path, "%s/results/%" PRIu64 ".json", e->run_dir, job_id);
        if (unlink(path) < 0 && errno != ENOENT)
                return negative_errno();
        return 0;
}

int executor_list_running(Executor *e, uint64_t **ret_ids, size_t *ret_n) {
        _cleanup_(sd_bus_error_free) sd_bus_error err = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ uint64_t *ids = NULL;
        size_t n = 0, allocated = 0;
        const char *name, *active;
        int r;

        if (!e->bus)
                return -ENOTCONN;
        r = sd_bus_call_method(e->bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                               "org.freedesktop.systemd1.Manager", "ListUnitsByPatterns", &err, &reply, "asas",
                               0, 1, "corral-job-*.scope");
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "(ssssssouso)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, "(ssssssouso)", &name, NULL, NULL, &active, NULL, NULL, NULL,
                                        NULL, NULL, NULL)) > 0) {
                uint64_t id;
                if (unit_name_job_id(name, &id) < 0)
                        continue;
                if (!streq(active, "active") && !streq(active, "activating") && !streq(active, "deactivating"))
                        continue;
                if (!GREEDY_REALLOC(ids, allocated, n + 1))
                        return -ENOMEM;
                ids[n++] = id;
        }
        if (r < 0)
                return r;
        *ret_ids = TAKE_PTR(ids);
        *ret_n = n;
        return 0;
}
