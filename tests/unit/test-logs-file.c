/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cli/logs-file.c: which files corral logs opens for whom, the cap and the escaping. The
 * identities are real: run as root, the test takes other uids in children. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/logs-file.h"
#include "fd-util.h"
#include "tmp-tree.h"

static char path_buf[6][160];
enum { P_FILE, P_SECRET, P_FIFO, P_LINK, P_ZERO, P_DIR };

static int setup(void **state) {
        static const char *const names[] = { "file", "secret", "fifo", "link", "zero", "dir" };
        Tree *t;
        int fd;

        tree_setup_prefix(state, "test-logs-file");
        t = *state;
        assert_int_equal(chmod(t->dir, 0711), 0);
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                snprintf(path_buf[i], sizeof(path_buf[i]), "%s/%s", t->dir, names[i]);
        fd = open(path_buf[P_FILE], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, "0123456789\n", 11), 0);
        close(fd);
        fd = open(path_buf[P_SECRET], O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(mkfifo(path_buf[P_FIFO], 0666), 0);
        assert_int_equal(symlink(path_buf[P_FILE], path_buf[P_LINK]), 0);
        assert_int_equal(symlink("/dev/zero", path_buf[P_ZERO]), 0);
        assert_int_equal(mkdir(path_buf[P_DIR], 0755), 0);
        return 0;
}

/* logs_open() for each path, in a child running as caller (-1: as this test), for a job
 * of owner: the results, 0 or -errno, into r[]. */
static void open_all(uid_t caller, uid_t owner, int r[6]) {
        int p[2], status;
        pid_t pid;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                int res[6];

                if (caller != (uid_t) -1 && (setgroups(0, NULL) < 0 || setresgid(caller, caller, caller) < 0 ||
                                             setresuid(caller, caller, caller) < 0))
                        _exit(1);
                for (int i = 0; i < 6; i++) {
                        int fd = -EBADF;
                        res[i] = logs_open(path_buf[i], owner, owner, &fd);
                        safe_close(fd);
                }
                _exit(loop_write(p[1], res, sizeof(res)) < 0 ? 2 : 0);
        }
        close(p[1]);
        assert_int_equal(read(p[0], r, sizeof(int) * 6), (ssize_t) (sizeof(int) * 6));
        close(p[0]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_open(void **state) {
        int r[6];

        if (geteuid() != 0)
                skip();
        /* The owner, root's own job: links followed, as the job did; only regular files. */
        open_all((uid_t) -1, 0, r);
        assert_int_equal(r[P_FILE], 0);
        assert_int_equal(r[P_SECRET], 0);
        assert_int_equal(r[P_FIFO], -EBADFD);
        assert_int_equal(r[P_LINK], 0);
        assert_int_equal(r[P_ZERO], -EBADFD);
        assert_int_equal(r[P_DIR], -EBADFD);

        /* Root for nobody's job: as nobody, who cannot read root's file; no links. */
        open_all((uid_t) -1, 65534, r);
        assert_int_equal(r[P_FILE], 0);
        assert_int_equal(r[P_SECRET], -EACCES);
        assert_int_equal(r[P_FIFO], -EBADFD);
        assert_int_equal(r[P_LINK], -ELOOP);
        assert_int_equal(r[P_ZERO], -ELOOP);
        assert_int_equal(r[P_DIR], -EBADFD);

        /* An operator (uid 65533 here) for nobody's job: their own rights, no links. */
        open_all(65533, 65534, r);
        assert_int_equal(r[P_FILE], 0);
        assert_int_equal(r[P_SECRET], -EACCES);
        assert_int_equal(r[P_FIFO], -EBADFD);
        assert_int_equal(r[P_LINK], -ELOOP);
        assert_int_equal(r[P_DIR], -EBADFD);

        /* nobody for their own job: their links followed, /dev/zero still not a file. */
        open_all(65534, 65534, r);
        assert_int_equal(r[P_FILE], 0);
        assert_int_equal(r[P_SECRET], -EACCES);
        assert_int_equal(r[P_LINK], 0);
        assert_int_equal(r[P_ZERO], -EBADFD);
}

static void test_copy(void **state) {
        Tree *t = *state;
        _cleanup_close_ int fd = -EBADF, out = -EBADF;
        char path[160], buf[64];
        uint64_t skipped;
        ssize_t n;

        snprintf(path, sizeof(path), "%s/out", t->dir);
        assert_int_equal(logs_open(path_buf[P_FILE], getuid(), getgid(), &fd), 0);
        assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        out = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(out >= 0);

        /* The last 4 bytes of 11. */
        assert_int_equal(logs_copy(fd, out, 4, false, &skipped), 0);
        assert_int_equal(skipped, 7);
        /* All of it, with 0. */
        assert_int_equal(logs_copy(fd, out, 0, false, &skipped), 0);
        assert_int_equal(skipped, 0);
        assert_int_equal(lseek(out, 0, SEEK_SET), 0);
        n = read(out, buf, sizeof(buf));
        assert_int_equal(n, 15);
        assert_memory_equal(buf, "789\n0123456789\n", 15);
}

/* A pump over a pipe: escaped, with a sequence cut between two writes kept whole. */
static void test_pump(void **state) {
        _cleanup_free_ LogsPump *p = NULL;
        int in[2], out[2];
        char buf[64];
        ssize_t n;

        assert_int_equal(pipe2(in, O_CLOEXEC), 0);
        assert_int_equal(pipe2(out, O_CLOEXEC), 0);
        p = logs_pump_new(in[0], out[1], true, UINT64_MAX);
        assert_non_null(p);
        assert_int_equal(write(in[1], "\x1b[1m\xe2\x9c", 6), 6);
        assert_int_equal(logs_pump_step(p), 1);
        assert_int_equal(write(in[1], "\x93\t\n", 3), 3);
        assert_int_equal(logs_pump_step(p), 1);
        assert_int_equal(write(in[1], "\xc3", 1), 1);
        close(in[1]);
        assert_int_equal(logs_pump_step(p), 1);
        assert_int_equal(logs_pump_step(p), 0); /* EOF: the cut byte shown as it is */
        close(out[1]);
        n = read(out[0], buf, sizeof(buf) - 1);
        assert_true(n > 0);
        buf[n] = 0;
        assert_string_equal(buf, "\\x1b[1m\xe2\x9c\x93\t\n\\xc3");
        close(in[0]);
        close(out[0]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_open),
                cmocka_unit_test(test_copy),
                cmocka_unit_test(test_pump),
        };
        return cmocka_run_group_tests(tests, setup, tree_teardown);
}
