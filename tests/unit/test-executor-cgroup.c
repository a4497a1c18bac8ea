/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the daemon asks the executor of a job's scope, read below the cgroup root its
 * configuration names (a fake tree in a tmpdir): whether a process is left, the memory
 * now, the usage so far in the outcome's fields; and that an executor with no bus reads
 * all that but starts and stops nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "executor/executor.h"
#include "executor/spec-json.h"
#include "fd-util.h"
#include "tmp-tree.h"

#define GEO_JOB "cgroup/corral.slice/corral-geo.slice/corral-job-7.scope"

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

static void put(int root, const char *dir, const char *file, const char *content) {
        char path[512];
        int fd;

        (void) snprintf(path, sizeof path, "%s/%s", dir, file);
        fd = openat(root, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, content, strlen(content)), 0);
        safe_close(fd);
}

/* An executor over <tree>/cgroup, its run directory <tree>/run. */
static Executor *executor_for_test(Tree *t) {
        char root[128], run[128];
        Executor *e = NULL;

        (void) snprintf(root, sizeof root, "%s/cgroup", t->dir);
        (void) snprintf(run, sizeof run, "%s/run", t->dir);
        mkdirs(t->fd, "cgroup/corral.slice");
        assert_int_equal(executor_new(NULL, NULL,
                                      &(ExecutorConfig) { .supervisor_path = "/nonexistent", .run_dir = run,
                                                          .cgroup_root = root },
                                      &e),
                         0);
        return e;
}

static void test_populated(void **state) {
        Tree *t = *state;
        _cleanup_(executor_freep) Executor *e = executor_for_test(t);

        /* No scope yet (or any more). */
        assert_int_equal(executor_job_populated(e, 7, "geo"), -ENOENT);

        mkdirs(t->fd, GEO_JOB);
        put(t->fd, GEO_JOB, "cgroup.events", "populated 1\nfrozen 0\n");
        assert_int_equal(executor_job_populated(e, 7, "geo"), 1);
        /* The project names the slice: the same job id under no project is another cgroup. */
        assert_int_equal(executor_job_populated(e, 7, NULL), -ENOENT);

        put(t->fd, GEO_JOB, "cgroup.events", "populated 0\nfrozen 0\n");
        assert_int_equal(executor_job_populated(e, 7, "geo"), 0);

        mkdirs(t->fd, "cgroup/corral.slice/corral-job-8.scope");
        put(t->fd, "cgroup/corral.slice/corral-job-8.scope", "cgroup.events", "populated 0\n");
        assert_int_equal(executor_job_populated(e, 8, NULL), 0);
}

static void test_usage(void **state) {
        Tree *t = *state;
        _cleanup_(executor_freep) Executor *e = executor_for_test(t);
        JobOutcome o = { .id = 99, .exit_code = 3 };
        uint64_t mem;

        assert_int_equal(executor_job_usage(e, 7, "geo", &o), -ENOENT);
        assert_int_equal(o.id, 99); /* untouched */

        mkdirs(t->fd, GEO_JOB);
        put(t->fd, GEO_JOB, "cpu.stat", "usage_usec 7000000\nuser_usec 6000000\nsystem_usec 1000000\n");
        put(t->fd, GEO_JOB, "memory.peak", "123456\n");
        put(t->fd, GEO_JOB, "memory.current", "4096\n");
        put(t->fd, GEO_JOB, "memory.events", "low 0\nhigh 0\nmax 2\noom 1\noom_kill 1\n");
        put(t->fd, GEO_JOB, "pids.peak", "12\n");
        put(t->fd, GEO_JOB, "io.stat",
            "8:0 rbytes=100 wbytes=200 rios=3 wios=4 dbytes=0 dios=0\n"
            "8:16 rbytes=1 wbytes=2 rios=5 wios=6 dbytes=0 dios=0\n");
        put(t->fd, GEO_JOB, "memory.pressure",
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=5000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=2500\n");
        put(t->fd, GEO_JOB, "io.pressure",
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=70\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=30\n");

        assert_int_equal(executor_job_usage(e, 7, "geo", &o), 0);
        assert_int_equal(o.id, 7);
        assert_int_equal(o.exit_code, 0); /* only the accounting is read */
        assert_int_equal(o.cpu_usage_usec, 7000000);
        assert_int_equal(o.cpu_user_usec, 6000000);
        assert_int_equal(o.cpu_system_usec, 1000000);
        assert_int_equal(o.memory_peak, 123456);
        assert_int_equal(o.oom_kills, 1);
        assert_int_equal(o.pids_peak, 12);
        assert_int_equal(o.io_read_bytes, 101);
        assert_int_equal(o.io_write_bytes, 202);
        assert_int_equal(o.io_read_ios, 8);
        assert_int_equal(o.io_write_ios, 10);
        assert_true(o.has_pressure);
        assert_int_equal(o.memory_some_usec, 5000);
        assert_int_equal(o.memory_full_usec, 2500);
        assert_int_equal(o.io_some_usec, 70);
        assert_int_equal(o.io_full_usec, 30);
        assert_int_equal(o.cpu_some_usec, 0); /* no cpu.pressure */

        assert_int_equal(executor_job_memory_current(e, 7, "geo", &mem), 0);
        assert_int_equal(mem, 4096);

        /* A kernel without memory.peak (before 5.19): memory.current is the least the peak was. */
        assert_int_equal(unlinkat(t->fd, GEO_JOB "/memory.peak", 0), 0);
        assert_int_equal(executor_job_usage(e, 7, "geo", &o), 0);
        assert_int_equal(o.memory_peak, 4096);

        /* A file that is there and unreadable as its kind is an error, not a zero. */
        put(t->fd, GEO_JOB, "cpu.stat", "usage_usec lots\n");
        assert_int_equal(executor_job_usage(e, 7, "geo", &o), -EBADMSG);
}

/* The same reading as the supervisor's at the end: what an outcome already holds stays
 * where the kernel keeps no counter. */
static void test_read_into_outcome(void **state) {
        Tree *t = *state;
        char root[128];
        _cleanup_close_ int fd = -EBADF;
        JobOutcome o = { .id = 7, .exit_code = 1, .memory_peak = 10, .pids_peak = 5 };

        mkdirs(t->fd, "cgroup/x.scope");
        put(t->fd, "cgroup/x.scope", "cpu.stat", "usage_usec 9\nuser_usec 8\nsystem_usec 1\n");
        (void) snprintf(root, sizeof root, "%s/cgroup", t->dir);
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(job_outcome_read_usage(fd, "x.scope", &o), 0);
        assert_int_equal(o.cpu_usage_usec, 9);
        assert_int_equal(o.memory_peak, 10);
        assert_int_equal(o.pids_peak, 5);
        assert_int_equal(o.exit_code, 1);
        assert_false(o.has_pressure);
        assert_int_equal(job_outcome_read_usage(fd, "gone.scope", &o), -ENOENT);
}

static void test_no_bus(void **state) {
        Tree *t = *state;
        _cleanup_(executor_freep) Executor *e = executor_for_test(t);
        JobSpec spec = { .id = 7 };
        uint64_t *ids = NULL;
        size_t n = 0;

        assert_int_equal(executor_start(e, &spec), -ENOTCONN);
        assert_int_equal(executor_cancel(e, 7, NULL, NULL), -ENOTCONN);
        assert_int_equal(executor_freeze(e, 7, "geo", true, NULL, NULL), -ENOTCONN);
        assert_int_equal(executor_list_running(e, &ids, &n), -ENOTCONN);
}

/* A stand-in for the supervisor: takes JOB_SIGNAL_RELAY through a signalfd as the real one
 * does, and writes what it got (value, code, sender's uid) to out. */
static pid_t fake_supervisor(int out) {
        sigset_t mask;
        int ready[2];
        char c;
        pid_t pid;

        assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct signalfd_siginfo si;
                struct pollfd p;
                int fd;

                sigemptyset(&mask);
                sigaddset(&mask, JOB_SIGNAL_RELAY);
                (void) sigprocmask(SIG_BLOCK, &mask, NULL);
                fd = signalfd(-1, &mask, SFD_CLOEXEC);
                (void) !write(ready[1], "r", 1);
                for (int n = 0; n < 2; n++) {
                        int got[3];
                        p = (struct pollfd) { .fd = fd, .events = POLLIN };
                        if (fd < 0 || poll(&p, 1, 10000) != 1 || read(fd, &si, sizeof si) != sizeof si)
                                _exit(1);
                        got[0] = si.ssi_int;
                        got[1] = si.ssi_code;
                        got[2] = (int) si.ssi_uid;
                        (void) !write(out, got, sizeof got);
                }
                _exit(0);
        }
        safe_close(ready[1]);
        assert_int_equal(read(ready[0], &c, 1), 1);
        safe_close(ready[0]);
        return pid;
}

/* scancel --signal: the signal goes to the supervisor in the scope's own cgroup, as the
 * relay's value, never to a process that would not take it. */
static void test_signal(void **state) {
        Tree *t = *state;
        _cleanup_(executor_freep) Executor *e = executor_for_test(t);
        int out[2], got[3], status;
        pid_t sup, plain;
        char pids[32];

        assert_int_equal(executor_signal(NULL, 7, "geo", SIGUSR1, false), -ENOTCONN);
        assert_int_equal(executor_signal(e, 7, "geo", SIGUSR1, false), -ESRCH); /* no scope */
        mkdirs(t->fd, GEO_JOB);
        put(t->fd, GEO_JOB, "cgroup.procs", "");
        assert_int_equal(executor_signal(e, 7, "geo", SIGUSR1, false), -ESRCH); /* no supervisor */
        assert_int_equal(executor_signal(e, 7, "geo", 0, false), -EINVAL);
        assert_int_equal(executor_signal(e, 7, "geo", _NSIG, false), -EINVAL);

        assert_int_equal(pipe2(out, O_CLOEXEC), 0);
        sup = fake_supervisor(out[1]);
        snprintf(pids, sizeof pids, "%d\n", (int) sup);
        put(t->fd, GEO_JOB, "cgroup.procs", pids);
        assert_int_equal(executor_signal(e, 7, "geo", SIGUSR1, false), 0);
        assert_int_equal(read(out[0], got, sizeof got), (ssize_t) sizeof got);
        assert_int_equal(got[0], SIGUSR1);
        assert_int_equal(got[1], SI_QUEUE);
        assert_int_equal(got[2], (int) getuid());
        assert_int_equal(executor_signal(e, 7, "geo", SIGTERM, true), 0);
        assert_int_equal(read(out[0], got, sizeof got), (ssize_t) sizeof got);
        assert_int_equal(got[0], SIGTERM | JOB_SIGNAL_RELAY_BATCH);
        assert_int_equal(waitpid(sup, &status, 0), sup);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        safe_close(out[0]);
        safe_close(out[1]);

        /* A process that does not block the relay (a supervisor from before it): refused,
         * and it lives on. */
        plain = fork();
        assert_true(plain >= 0);
        if (plain == 0) {
                sigset_t none;
                sigemptyset(&none);
                (void) sigprocmask(SIG_SETMASK, &none, NULL);
                (void) signal(JOB_SIGNAL_RELAY, SIG_DFL);
                pause();
                _exit(0);
        }
        snprintf(pids, sizeof pids, "%d\n", (int) plain);
        put(t->fd, GEO_JOB, "cgroup.procs", pids);
        assert_int_equal(executor_signal(e, 7, "geo", SIGUSR1, false), -EOPNOTSUPP);
        assert_int_equal(waitpid(plain, &status, WNOHANG), 0);
        (void) kill(plain, SIGKILL);
        assert_int_equal(waitpid(plain, &status, 0), plain);
}

static int setup(void **state) {
        return tree_setup_prefix(state, "test-executor-cgroup");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_populated, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_usage, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_read_into_outcome, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_no_bus, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_signal, setup, tree_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
