/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The supervisor's fork server (corral-supervisor --server-fd), the real binary, without
 * systemd: each request is answered in order with a child's pid and a pidfd that becomes
 * readable when the child is gone (the server reaps it: no zombie left to us); a child
 * whose sync pipe closes before the go exits by itself; EOF on the socket ends the server
 * with 0, a malformed request ends it with 1. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "fork-server.h"

typedef struct Server {
        pid_t pid;
        int fd;
        char dir[64];
} Server;

static void server_start(Server *s) {
        const char *bin = getenv("CORRAL_SUPERVISOR");
        char specs[128], results[128];
        posix_spawn_file_actions_t fa;
        int pair[2];

        assert_non_null(bin);
        strcpy(s->dir, "/tmp/test-fork-server-XXXXXX");
        assert_non_null(mkdtemp(s->dir));
        snprintf(specs, sizeof specs, "%s/jobs", s->dir);
        snprintf(results, sizeof results, "%s/results", s->dir);
        assert_int_equal(mkdir(specs, 0700), 0);
        assert_int_equal(mkdir(results, 0700), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
        char *argv[] = { (char *) bin, (char *) "--server-fd", (char *) "3", (char *) "--spec-dir", specs,
                         (char *) "--result-dir", results, NULL };
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, pair[1], 3);
        assert_int_equal(posix_spawn(&s->pid, bin, &fa, NULL, argv, NULL), 0);
        posix_spawn_file_actions_destroy(&fa);
        close(pair[1]);
        s->fd = pair[0];
}

static int server_wait(Server *s) {
        int status;
        char cmd[128];

        assert_int_equal(waitpid(s->pid, &status, 0), s->pid);
        snprintf(cmd, sizeof cmd, "rm -rf %s", s->dir);
        assert_int_equal(system(cmd), 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Asks for job id's supervisor; returns the write end of its sync pipe. */
static int request(Server *s, uint64_t id) {
        ForkRequest req = { .job_id = id, .kill_wait_usec = 1000000 };
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = {};
        struct iovec iov = { .iov_base = &req, .iov_len = sizeof req };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                             .msg_controllen = sizeof control };
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        int sync[2];

        assert_int_equal(pipe2(sync, O_CLOEXEC), 0);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &sync[0], sizeof(int));
        assert_int_equal(sendmsg(s->fd, &mh, MSG_NOSIGNAL), (ssize_t) sizeof req);
        close(sync[0]);
        return sync[1];
}

static void reply(Server *s, ForkReply *r, int *pidfd) {
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = {};
        struct iovec iov = { .iov_base = r, .iov_len = sizeof *r };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                             .msg_controllen = sizeof control };

        *pidfd = -1;
        assert_int_equal(recvmsg(s->fd, &mh, MSG_CMSG_CLOEXEC), (ssize_t) sizeof *r);
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_type == SCM_RIGHTS)
                        memcpy(pidfd, CMSG_DATA(c), sizeof(int));
}

static void test_in_order_and_gone(void **state) {
        Server s;
        ForkReply r1, r2;
        int sync1, sync2, pidfd1, pidfd2;
        struct pollfd p;

        server_start(&s);
        sync1 = request(&s, 7);
        sync2 = request(&s, 9);
        reply(&s, &r1, &pidfd1);
        reply(&s, &r2, &pidfd2);
        assert_int_equal(r1.job_id, 7);
        assert_int_equal(r2.job_id, 9);
        assert_int_equal(r1.error, 0);
        assert_true(r1.pid > 0 && r2.pid > 0 && r1.pid != r2.pid);
        assert_true(pidfd1 >= 0 && pidfd2 >= 0);
        /* Not ours to reap: they are the server's children. */
        assert_int_equal(waitpid(r1.pid, NULL, WNOHANG), -1);
        assert_int_equal(errno, ECHILD);

        /* Job 7 has no spec: it says so and exits; its pidfd then reads as gone. */
        p = (struct pollfd) { .fd = pidfd1, .events = POLLIN };
        assert_int_equal(poll(&p, 1, 20000), 1);
        /* Job 9 is abandoned before its go (it has no spec either: gone as well). */
        close(sync2);
        p = (struct pollfd) { .fd = pidfd2, .events = POLLIN };
        assert_int_equal(poll(&p, 1, 20000), 1);
        /* Reaped by the server (SIGCHLD ignored there): no zombie of it remains. */
        for (int i = 0; i < 500 && kill(r1.pid, 0) == 0; i++)
                usleep(10000);
        assert_int_equal(kill(r1.pid, 0), -1);
        assert_int_equal(errno, ESRCH);

        close(sync1);
        close(pidfd1);
        close(pidfd2);
        close(s.fd); /* EOF ends the server */
        assert_int_equal(server_wait(&s), 0);
}

static void test_malformed(void **state) {
        Server s;
        char junk[3] = "xyz";

        server_start(&s);
        assert_int_equal(send(s.fd, junk, sizeof junk, MSG_NOSIGNAL), (ssize_t) sizeof junk);
        assert_int_equal(server_wait(&s), 1);
        close(s.fd);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_in_order_and_gone),
                cmocka_unit_test(test_malformed),
        };
        signal(SIGPIPE, SIG_IGN);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
