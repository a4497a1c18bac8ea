/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/cgroup-freezer.h"
#include "cgroup/cgroup-kill.h"
#include "cgroup/cgroup-pid.h"
#include "cgroup/cgroup-usage.h"
#include "fd-util.h"
#include "tmp-tree.h"

static int tree_setup(void **state) {
        return tree_setup_prefix(state, "test-cgroup-fs");
}

static void mkdirs(int root, const char *path) {
        char buf[256], *p;

        (void) snprintf(buf, sizeof buf, "%s", path);
        for (p = buf; (p = strchr(p, '/')); p++) {
                *p = 0;
                (void) mkdirat(root, buf, 0755);
                *p = '/';
        }
        (void) mkdirat(root, buf, 0755);
}

static void put(int root, const char *path, const char *content) {
        int fd = openat(root, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, content, strlen(content)), 0);
        safe_close(fd);
}

static char *get(int root, const char *path) {
        char *s = NULL;

        assert_int_equal(read_file_at(root, path, 4096, &s, NULL), 0);
        return s;
}

#define JOB "corral.slice/corral-job-1.scope"

static void test_read_usage_full(void **state) {
        Tree *t = *state;
        CgroupUsage u;
        CgroupIoDevice total;

        mkdirs(t->fd, JOB);
        put(t->fd, JOB "/cpu.stat", "usage_usec 300\nuser_usec 200\nsystem_usec 100\n"
                                    "nr_periods 0\nnr_throttled 2\nthrottled_usec 50\n");
        put(t->fd, JOB "/memory.current", "4096\n");
        put(t->fd, JOB "/memory.peak", "8192\n");
        put(t->fd, JOB "/memory.events", "low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\noom_group_kill 0\n");
        put(t->fd, JOB "/pids.current", "3\n");
        put(t->fd, JOB "/pids.peak", "12\n");
        put(t->fd, JOB "/io.stat", "8:0 rbytes=100 wbytes=200 rios=1 wios=2 dbytes=0 dios=0\n"
                                   "8:16 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0\n");
        put(t->fd, JOB "/cgroup.events", "populated 1\nfrozen 0\n");
        put(t->fd, JOB "/memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=700\n"
                                           "full avg10=0.00 avg60=0.00 avg300=0.00 total=300\n");
        put(t->fd, JOB "/io.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=40\n"
                                       "full avg10=0.00 avg60=0.00 avg300=0.00 total=4\n");

        /* The path as /proc/<pid>/cgroup gives it, with a leading slash. */
        assert_int_equal(cg_read_usage(t->fd, "/" JOB, &u), 0);
        assert_true(u.has_cpu);
        assert_int_equal(u.cpu.usage_usec, 300);
        assert_int_equal(u.cpu.nr_throttled, 2);
        assert_true(u.has_memory_current && u.has_memory_peak && u.has_memory_events);
        assert_int_equal(u.memory_current, 4096);
        assert_int_equal(u.memory_peak, 8192);
        assert_int_equal(u.memory_events.max, 7);
        assert_int_equal(u.memory_events.oom_kill, 1);
        assert_true(u.has_pids_current && u.has_pids_peak);
        assert_int_equal(u.pids_current, 3);
        assert_int_equal(u.pids_peak, 12);
        assert_true(u.has_io);
        assert_int_equal(u.io.n_devices, 2);
        cgroup_io_stat_total(&u.io, &total);
        assert_int_equal(total.rbytes, 101);
        assert_int_equal(total.wios, 6);
        assert_true(u.has_events);
        assert_true(u.events.populated);
        assert_false(u.has_cpu_pressure); /* no file: not an error */
        assert_true(u.has_memory_pressure && u.has_io_pressure);
        assert_int_equal(u.memory_pressure.some_usec, 700);
        assert_int_equal(u.memory_pressure.full_usec, 300);
        assert_int_equal(u.io_pressure.full_usec, 4);
        cgroup_usage_done(&u);
        assert_null(u.io.devices);
}

static void test_read_usage_optional_missing(void **state) {
        Tree *t = *state;
        CgroupUsage u;

        /* An older kernel: no memory.peak, no pids.peak, no io controller enabled. */
        mkdirs(t->fd, JOB);
        put(t->fd, JOB "/cpu.stat", "usage_usec 1\nuser_usec 1\nsystem_usec 0\n");
        put(t->fd, JOB "/memory.current", "0\n");
        put(t->fd, JOB "/pids.current", "0\n");
        put(t->fd, JOB "/cgroup.events", "populated 0\n");

        assert_int_equal(cg_read_usage(t->fd, JOB, &u), 0);
        assert_true(u.has_cpu);
        assert_true(u.has_memory_current);
        assert_false(u.has_memory_peak);
        assert_false(u.has_memory_events);
        assert_true(u.has_pids_current);
        assert_false(u.has_pids_peak);
        assert_false(u.has_io);
        assert_null(u.io.devices);
        assert_true(u.has_events);
        assert_false(u.events.populated);
        cgroup_usage_done(&u);
}

static void test_read_usage_errors(void **state) {
        Tree *t = *state;
        CgroupUsage u = { .pids_peak = 99 };

        assert_int_equal(cg_read_usage(t->fd, "corral.slice/gone.scope", &u), -ENOENT);
        assert_int_equal(cg_read_usage(t->fd, "../etc", &u), -EINVAL);
        assert_int_equal(cg_read_usage(t->fd, "a/../../etc", &u), -EINVAL);

        mkdirs(t->fd, JOB);
        put(t->fd, JOB "/cpu.stat", "usage_usec 1\n");
        put(t->fd, JOB "/pids.peak", "lots\n");
        assert_int_equal(cg_read_usage(t->fd, JOB, &u), -EBADMSG);
        put(t->fd, JOB "/pids.peak", "max\n");
        put(t->fd, JOB "/io.stat", "8:0 rbytes\n");
        assert_int_equal(cg_read_usage(t->fd, JOB, &u), -EBADMSG);
        /* Untouched on failure. */
        assert_int_equal(u.pids_peak, 99);

        put(t->fd, JOB "/io.stat", "");
        assert_int_equal(cg_read_usage(t->fd, JOB, &u), 0);
        assert_true(u.pids_peak == UINT64_MAX);
        assert_true(u.has_io);
        assert_int_equal(u.io.n_devices, 0);
        cgroup_usage_done(&u);

        /* The root itself. */
        put(t->fd, "cpu.stat", "usage_usec 77\n");
        assert_int_equal(cg_read_usage(t->fd, "/", &u), 0);
        assert_int_equal(u.cpu.usage_usec, 77);
        cgroup_usage_done(&u);
}

static void test_freeze(void **state) {
        Tree *t = *state;
        _cleanup_free_ char *a = NULL, *b = NULL;

        mkdirs(t->fd, JOB);
        assert_int_equal(cg_freeze(t->fd, JOB, true), -EOPNOTSUPP);
        assert_int_equal(cg_is_frozen(t->fd, JOB), -EOPNOTSUPP);
        assert_int_equal(cg_freeze(t->fd, "nope", true), -ENOENT);

        put(t->fd, JOB "/cgroup.freeze", "0\n");
        put(t->fd, JOB "/cgroup.events", "populated 1\nfrozen 0\n");
        assert_int_equal(cg_freeze(t->fd, JOB, true), 0);
        a = get(t->fd, JOB "/cgroup.freeze");
        assert_true(a[0] == '1');
        assert_int_equal(cg_is_frozen(t->fd, JOB), 0);
        put(t->fd, JOB "/cgroup.events", "populated 1\nfrozen 1\n");
        assert_int_equal(cg_is_frozen(t->fd, JOB), 1);

        assert_int_equal(cg_freeze(t->fd, JOB, false), 0);
        b = get(t->fd, JOB "/cgroup.freeze");
        assert_true(b[0] == '0');
}

static void test_events_watch(void **state) {
        Tree *t = *state;
        struct pollfd p;
        int fd;

        mkdirs(t->fd, JOB);
        put(t->fd, JOB "/cgroup.events", "populated 1\nfrozen 0\n");
        fd = cg_events_watch_fd(t->fd, JOB);
        assert_true(fd >= 0);
        p = (struct pollfd) { .fd = fd, .events = POLLIN };
        assert_int_equal(poll(&p, 1, 0), 0);
        put(t->fd, JOB "/cgroup.events", "populated 0\nfrozen 0\n");
        assert_int_equal(poll(&p, 1, 1000), 1);
        safe_close(fd);

        assert_int_equal(cg_events_watch_fd(t->fd, "nope"), -ENOENT);
}

static void test_kill(void **state) {
        Tree *t = *state;
        _cleanup_free_ char *s = NULL;

        mkdirs(t->fd, JOB);
        assert_int_equal(cg_kill(t->fd, JOB), -EOPNOTSUPP);
        assert_int_equal(cg_kill(t->fd, "nope"), -ENOENT);
        put(t->fd, JOB "/cgroup.kill", "");
        assert_int_equal(cg_kill(t->fd, JOB), 0);
        s = get(t->fd, JOB "/cgroup.kill");
        assert_string_equal(s, "1");
}

static pid_t spawn_sleeper(void) {
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
                for (;;)
                        pause();
        }
        return pid;
}

static void test_kill_fallback(void **state) {
        Tree *t = *state;
        pid_t a, b;
        char buf[64];
        int status;

        /* The job and a nested cgroup below it (a job may create its own). */
        mkdirs(t->fd, JOB "/sub");
        a = spawn_sleeper();
        b = spawn_sleeper();
        (void) snprintf(buf, sizeof buf, "%d\n", (int) a);
        put(t->fd, JOB "/cgroup.procs", buf);
        (void) snprintf(buf, sizeof buf, "%d\n", (int) b);
        put(t->fd, JOB "/sub/cgroup.procs", buf);

        assert_int_equal(cg_kill(t->fd, JOB), -EOPNOTSUPP);
        assert_int_equal(cg_kill_fallback(t->fd, JOB, SIGKILL), 2);
        assert_int_equal(waitpid(a, &status, 0), a);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        assert_int_equal(waitpid(b, &status, 0), b);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

        /* The processes are gone now (reaped): ESRCH is not an error. */
        assert_int_equal(cg_kill_fallback(t->fd, JOB, SIGKILL), 2);

        put(t->fd, JOB "/sub/cgroup.procs", "");
        put(t->fd, JOB "/cgroup.procs", "");
        assert_int_equal(cg_kill_fallback(t->fd, JOB, SIGTERM), 0);
        put(t->fd, JOB "/cgroup.procs", "abc\n");
        assert_int_equal(cg_kill_fallback(t->fd, JOB, SIGTERM), -EBADMSG);
        assert_int_equal(cg_kill_fallback(t->fd, "nope", SIGTERM), -ENOENT);
}

static void test_path_of_pid(void **state) {
        Tree *t = *state;
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *own = NULL;
        int r;

        mkdirs(t->fd, "1234");
        put(t->fd, "1234/cgroup", "0::/corral.slice/corral-job-7.scope\n");
        assert_int_equal(cg_path_of_pid_at(t->fd, 1234, &a), 0);
        assert_string_equal(a, "/corral.slice/corral-job-7.scope");

        /* Hybrid setups list v1 hierarchies first. */
        mkdirs(t->fd, "55");
        put(t->fd, "55/cgroup", "12:memory:/user.slice\n1:name=systemd:/user.slice\n0::/init.scope");
        assert_int_equal(cg_path_of_pid_at(t->fd, 55, &b), 0);
        assert_string_equal(b, "/init.scope");

        mkdirs(t->fd, "self");
        put(t->fd, "self/cgroup", "0::/\n");
        assert_int_equal(cg_path_of_pid_at(t->fd, 0, &c), 0);
        assert_string_equal(c, "/");

        mkdirs(t->fd, "66");
        put(t->fd, "66/cgroup", "4:cpu:/x\n");
        assert_int_equal(cg_path_of_pid_at(t->fd, 66, &own), -ENODATA);
        assert_int_equal(cg_path_of_pid_at(t->fd, 999, &own), -ESRCH);
        assert_int_equal(cg_path_of_pid_at(t->fd, -1, &own), -EINVAL);

        /* The real thing, where the host has the unified hierarchy. */
        r = cg_path_of_pid(0, &own);
        assert_true(r == 0 || r == -ENODATA);
        if (r == 0)
                assert_true(own[0] == '/');
}

#define T(f) cmocka_unit_test_setup_teardown(f, tree_setup, tree_teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_read_usage_full),
                T(test_read_usage_optional_missing),
                T(test_read_usage_errors),
                T(test_freeze),
                T(test_events_watch),
                T(test_kill),
                T(test_kill_fallback),
                T(test_path_of_pid),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
