/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The check corrald makes of the descriptors a client passes for an interactive job:
 * the caller's own terminal, pipe, socket or file, /dev/null, nothing else. The tests
 * run as whatever user builds; "another user" is a uid that owns nothing they make. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/interactive-fd.h"

static uid_t me, other;

/* "other" is a uid that owns nothing the test makes, whoever runs it. */
static int setup(void **state) {
        me = geteuid();
        other = me == 0 ? 4242 : me + 1;
        return 0;
}

static void expect(int fd, unsigned index, uid_t uid, int want) {
        const char *why = "unset";
        int r = interactive_fd_check(fd, index, uid, &why);

        if (r != want)
                fail_msg("fd %d index %u uid %u: got %d (%s), want %d", fd, index, (unsigned) uid, r,
                         why ?: "ok", want);
        if (want == 0)
                assert_null(why);
        else
                assert_non_null(why);
}

static void test_pipe(void **state) {
        int p[2];

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        /* Ours: the read end as input, the write end as output, not the other way. */
        expect(p[0], 0, me, 0);
        expect(p[1], 1, me, 0);
        expect(p[1], 2, me, 0);
        expect(p[1], 0, me, -EBADF);
        expect(p[0], 1, me, -EBADF);
        /* Another user's pipe (created by us: owned by our uid, not theirs). */
        expect(p[0], 0, other, -EPERM);
        expect(p[1], 1, other, -EPERM);
        close(p[0]);
        close(p[1]);
}

static void test_socket(void **state) {
        int s[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s), 0);
        expect(s[0], 0, me, 0);
        expect(s[0], 1, me, 0);
        expect(s[1], 2, other, -EPERM);
        close(s[0]);
        close(s[1]);
}

static void test_terminal(void **state) {
        int master, slave;
        char *name;

        master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master < 0) {
                skip(); /* no devpts in this build environment */
                return;
        }
        assert_int_equal(grantpt(master), 0);
        assert_int_equal(unlockpt(master), 0);
        name = ptsname(master);
        assert_non_null(name);
        slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
        assert_true(slave >= 0);
        /* A terminal we opened is ours... */
        expect(slave, 0, me, 0);
        expect(slave, 1, me, 0);
        /* ...and not the next user's: bob cannot hand over alice's terminal. */
        expect(slave, 0, other, -EPERM);
        close(slave);
        close(master);
}

static void test_files(void **state) {
        char path[] = "/tmp/test-interactive-fd-XXXXXX";
        int fd = mkstemp(path), rd, null_in, null_out, ev, dir, opath;

        assert_true(fd >= 0);
        rd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(rd >= 0);
        expect(fd, 1, me, 0);
        expect(rd, 0, me, 0);
        expect(rd, 1, me, -EBADF); /* read-only as an output */
        expect(fd, 1, other, -EPERM);
        /* Root's callers are not checked: root may open any of these anyway. */
        if (me != 0)
                expect(fd, 1, 0, 0);
        unlink(path);

        /* /dev/null is everybody's, though root owns it. */
        null_in = open("/dev/null", O_RDONLY | O_CLOEXEC);
        null_out = open("/dev/null", O_WRONLY | O_CLOEXEC);
        expect(null_in, 0, other, 0);
        expect(null_out, 2, other, 0);

        /* Other devices, directories, anonymous inodes and O_PATH are refused outright,
         * also for their owner. */
        {
                int zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
                if (zero >= 0) {
                        expect(zero, 0, 0 == me ? 1 : me, -EMEDIUMTYPE);
                        close(zero);
                }
        }
        ev = eventfd(0, EFD_CLOEXEC);
        assert_true(ev >= 0);
        expect(ev, 0, me == 0 ? 1 : me, -EMEDIUMTYPE);
        dir = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        expect(dir, 0, me, -EMEDIUMTYPE);
        opath = open("/tmp", O_PATH | O_CLOEXEC);
        expect(opath, 0, me, -EBADF);
        /* Not a descriptor at all. */
        expect(9999, 0, me, -EBADF);

        close(fd);
        close(rd);
        close(null_in);
        close(null_out);
        close(ev);
        close(dir);
        close(opath);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pipe),
                cmocka_unit_test(test_socket),
                cmocka_unit_test(test_terminal),
                cmocka_unit_test(test_files),
        };
        return cmocka_run_group_tests(tests, setup, NULL);
}
