/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The thread that closes users' descriptors, and the abort of a user's FUSE connections
 * when one of those closes is stuck, against a fusectl tree of the test's own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/fd-closer.h"
#include "daemon/interactive-job.h"

static char dir[] = "/tmp/test-fd-closer-XXXXXX";
static int dir_fd = -1;

/* As fusectl makes a connection's files: its directory (0500), waiting (0400) and abort
 * (0200) are its mounter's alone. */
static void make_conn(const char *name, uid_t owner, const char *waiting) {
        char path[64];
        int fd;

        assert_int_equal(mkdirat(dir_fd, name, 0700), 0);
        snprintf(path, sizeof path, "%s/waiting", name);
        fd = openat(dir_fd, path, O_WRONLY | O_CREAT | O_CLOEXEC, 0400);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, waiting, strlen(waiting)), (ssize_t) strlen(waiting));
        assert_int_equal(fchown(fd, owner, owner), 0);
        close(fd);
        /* As fusectl makes it: its mounter's, writable by its mounter only. */
        snprintf(path, sizeof path, "%s/abort", name);
        fd = openat(dir_fd, path, O_WRONLY | O_CREAT | O_CLOEXEC, 0200);
        assert_true(fd >= 0);
        assert_int_equal(fchown(fd, owner, owner), 0);
        close(fd);
        assert_int_equal(fchownat(dir_fd, name, owner, owner, 0), 0);
        assert_int_equal(fchmodat(dir_fd, name, 0500, 0), 0);
}

/* corrald's capabilities have no CAP_DAC_OVERRIDE nor CAP_DAC_READ_SEARCH: without them
 * in the test too, a look into her files as root instead of as her fails, as it does in
 * corrald. */
static void drop_dac(bool drop) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2];

        assert_int_equal(syscall(SYS_capget, &h, d), 0);
        if (drop)
                d[0].effective &= ~((1U << CAP_DAC_OVERRIDE) | (1U << CAP_DAC_READ_SEARCH));
        else
                d[0].effective |= d[0].permitted & ((1U << CAP_DAC_OVERRIDE) | (1U << CAP_DAC_READ_SEARCH));
        assert_int_equal(syscall(SYS_capset, &h, d), 0);
}

static off_t abort_size(const char *name) {
        char path[64];
        struct stat st;

        snprintf(path, sizeof path, "%s/abort", name);
        assert_int_equal(fstatat(dir_fd, path, &st, 0), 0);
        return st.st_size;
}

static void test_abort_user(void **state) {
        if (geteuid() != 0) {
                skip(); /* the abort files belong to other users */
                return;
        }
        assert_non_null(mkdtemp(dir));
        dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dir_fd >= 0);
        assert_int_equal(fchmod(dir_fd, 0755), 0); /* fusectl's root is everyone's to search */
        make_conn("40", 4242, "1\n");  /* hers, a request waiting: aborted */
        make_conn("41", 4242, "0\n");  /* hers, idle: left alone */
        make_conn("42", 4343, "3\n");  /* someone else's, busy: left alone */
        make_conn("43", 4242, "12\n"); /* hers again */

        drop_dac(true);
        assert_int_equal(fuse_abort_user_connections(dir_fd, 4242), 2);
        drop_dac(false);
        assert_int_equal(abort_size("40"), 1);
        assert_int_equal(abort_size("41"), 0);
        assert_int_equal(abort_size("42"), 0);
        assert_int_equal(abort_size("43"), 1);
        /* Written as her: corrald's own uid is no owner, and 0200 lets no one else in
         * (corrald has no CAP_DAC_OVERRIDE; the test, as root, may: so the check is that
         * nobody's abort file but hers was written at all). */
        assert_int_equal(fuse_abort_user_connections(dir_fd, 9999), 0);
        assert_int_equal(fuse_abort_user_connections(-EBADF, 4242), -ENOENT);

        for (const char *const *n = (const char *const[]) { "40", "41", "42", "43", NULL }; *n; n++) {
                char path[64];
                (void) fchmodat(dir_fd, *n, 0700, 0);
                snprintf(path, sizeof path, "%s/abort", *n);
                unlinkat(dir_fd, path, 0);
                snprintf(path, sizeof path, "%s/waiting", *n);
                unlinkat(dir_fd, path, 0);
                unlinkat(dir_fd, *n, AT_REMOVEDIR);
        }
        close(dir_fd);
        rmdir(dir);
}

/* Closed off the caller's thread, every one, and all of them by the time it is freed. */
static void test_closes(void **state) {
        FdCloser *c = NULL;
        int p[8][2];
        char b;

        assert_int_equal(fd_closer_new(NULL, -EBADF, &c), 0);
        for (size_t i = 0; i < 8; i++) {
                assert_int_equal(pipe2(p[i], O_CLOEXEC), 0);
                fd_closer_close(c, p[i][1], 1000);
        }
        /* The write ends go: each read end sees its end of file. */
        for (size_t i = 0; i < 8; i++) {
                struct pollfd pfd = { .fd = p[i][0], .events = POLLIN };
                assert_int_equal(poll(&pfd, 1, 5000), 1);
                assert_int_equal(read(p[i][0], &b, 1), 0);
                close(p[i][0]);
        }
        assert_int_equal(fd_closer_pending(c), 0);
        fd_closer_close(c, -EBADF, 0); /* nothing to close: nothing queued */
        assert_int_equal(fd_closer_pending(c), 0);
        c = fd_closer_free(c);
        assert_null(c);
        /* Without a closer, in place. */
        assert_int_equal(pipe2(p[0], O_CLOEXEC), 0);
        fd_closer_close(NULL, p[0][1], 0);
        assert_int_equal(read(p[0][0], &b, 1), 0);
        close(p[0][0]);
}

/* A TCP socket with SO_LINGER whose peer reads nothing (its window closed): its last
 * close would wait the linger out. Returns the peer's end; *ret_fd the lingering one. */
static int lingering_socket(int *ret_fd) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof a;
        struct linger lg = { .l_onoff = 1, .l_linger = 3600 };
        int l, fd, peer, small = 4096;
        char chunk[4096] = {};

        l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(l >= 0);
        assert_int_equal(bind(l, (struct sockaddr *) &a, sizeof a), 0);
        assert_int_equal(listen(l, 1), 0);
        assert_int_equal(getsockname(l, (struct sockaddr *) &a, &len), 0);
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        assert_true(fd >= 0);
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
        assert_true(connect(fd, (struct sockaddr *) &a, sizeof a) == 0 || errno == EINPROGRESS);
        peer = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        assert_true(peer >= 0);
        (void) setsockopt(peer, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        close(l);
        for (unsigned i = 0; i < 100000; i++)
                if (write(fd, chunk, sizeof chunk) < 0) {
                        assert_int_equal(errno, EAGAIN);
                        break;
                }
        assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
        *ret_fd = fd;
        return peer;
}

/* A socket's linger is the passer's to wait out, not corrald's: off before the close. */
static void test_linger(void **state) {
        FdCloser *c = NULL;
        uint64_t t0;
        int fd, peer;

        alarm(30); /* a close that lingers fails the test instead of hanging it */
        peer = lingering_socket(&fd);
        t0 = now_usec(CLOCK_MONOTONIC);
        fd_closer_close(NULL, fd, 1000);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 < 5 * USEC_PER_SEC);
        close(peer);

        assert_int_equal(fd_closer_new(NULL, -EBADF, &c), 0);
        peer = lingering_socket(&fd);
        fd_closer_close(c, fd, 1000);
        for (unsigned i = 0; i < 50 && fd_closer_pending(c) > 0; i++)
                usleep(100 * 1000);
        assert_int_equal(fd_closer_pending(c), 0);
        c = fd_closer_free(c);
        close(peer);
        alarm(0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_abort_user),
                cmocka_unit_test(test_closes),
                cmocka_unit_test(test_linger),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
