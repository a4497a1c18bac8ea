/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The server on a socket in a tmpdir, with a test ops table: framing across writes,
 * several messages in one write, an oversized message answered and survived, the
 * per-user connection cap (from an unprivileged child: root is exempt), and a kept
 * call's client going away. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/server.h"
#include "json-util.h"
#include "message.h"
#include "tmp-tree.h"

typedef struct Test {
        unsigned dispatched, gone;
        Call *kept;
} Test;

/* GetInfo answers at once with the caller's uid; Wait is kept for later. */
static int test_dispatch(void *userdata, Call *call, const Peer *peer, CorralMethod method, json_object *params,
                         json_object **ret_reply) {
        Test *t = userdata;
        json_object *p;

        t->dispatched++;
        if (method == CORRAL_METHOD_WAIT) {
                t->kept = call;
                *ret_reply = NULL;
                return 0;
        }
        p = json_object_new_object();
        json_add_u64(p, "uid", peer->uid);
        *ret_reply = reply_new(p, false);
        return 0;
}

static void test_call_gone(void *userdata, Call *call) {
        Test *t = userdata;
        t->gone++;
        if (t->kept == call)
                t->kept = NULL;
}

static const ServerOps ops = { .dispatch = test_dispatch, .call_gone = test_call_gone };

static int client(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        assert_true(strlen(path) < sizeof sa.sun_path);
        memcpy(sa.sun_path, path, strlen(path) + 1);
        assert_int_equal(connect(fd, (struct sockaddr *) &sa, sizeof sa), 0);
        return fd;
}

/* Runs the loop (and the post-iteration flush) until fd has a whole reply, or 5 s. */
static char *reply_on(sd_event *e, Server *s, int fd) {
        static char buf[1 << 16];
        size_t n = 0;

        for (int i = 0; i < 500; i++) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                (void) sd_event_run(e, 10 * 1000);
                server_flush(s);
                while (poll(&p, 1, 0) > 0 && (p.revents & POLLIN)) {
                        ssize_t k = recv(fd, buf + n, sizeof buf - 1 - n, MSG_DONTWAIT);
                        if (k <= 0)
                                break;
                        n += (size_t) k;
                        if (memchr(buf, 0, n))
                                return buf;
                }
        }
        buf[n] = 0;
        return n ? buf : NULL;
}

#define GET_INFO "{\"method\":\"io.corral.Manager.GetInfo\",\"parameters\":{}}"

static void test_framing(void **state) {
        Tree *tree = *state;
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        Server *s = NULL;
        Test t = {};
        char path[128], *r;
        int fd;

        snprintf(path, sizeof path, "%s/sock", tree->dir);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(server_new(e, path, &ops, &t, &s), 0);

        fd = client(path);
        /* One message in two writes. */
        assert_int_equal(send(fd, GET_INFO, 20, 0), 20);
        (void) sd_event_run(e, 10 * 1000);
        assert_int_equal(t.dispatched, 0);
        assert_int_equal(send(fd, &GET_INFO[20], sizeof GET_INFO - 20, 0), (ssize_t) (sizeof GET_INFO - 20));
        r = reply_on(e, s, fd);
        assert_non_null(r);
        assert_non_null(strstr(r, "\"uid\""));
        assert_int_equal(t.dispatched, 1);

        /* Too big: a named error, and the connection still serves. */
        {
                size_t big = CORRAL_MESSAGE_SIZE_MAX + 100;
                char *b = malloc(big + 1);
                size_t off = 0;
                assert_non_null(b);
                memset(b, 'x', big);
                b[big] = 0;
                while (off <= big) {
                        ssize_t k = send(fd, b + off, big + 1 - off, MSG_DONTWAIT);
                        if (k > 0)
                                off += (size_t) k;
                        (void) sd_event_run(e, 1000);
                        server_flush(s);
                }
                free(b);
        }
        r = reply_on(e, s, fd);
        assert_non_null(r);
        assert_non_null(strstr(r, "MessageTooLarge"));
        assert_int_equal(send(fd, GET_INFO, sizeof GET_INFO, 0), (ssize_t) sizeof GET_INFO);
        r = reply_on(e, s, fd);
        assert_non_null(r);
        assert_non_null(strstr(r, "\"uid\""));
        assert_null(strstr(r, "\"warning\""));

        /* A notice rides on every reply while set (the configuration on disk is broken). */
        assert_int_equal(server_set_notice(s, "corral.conf:3: broken"), 0);
        assert_int_equal(send(fd, GET_INFO, sizeof GET_INFO, 0), (ssize_t) sizeof GET_INFO);
        r = reply_on(e, s, fd);
        assert_non_null(r);
        assert_non_null(strstr(r, "\"warning\":\"corral.conf:3: broken\""));
        assert_int_equal(server_set_notice(s, NULL), 0);
        assert_int_equal(send(fd, GET_INFO, sizeof GET_INFO, 0), (ssize_t) sizeof GET_INFO);
        r = reply_on(e, s, fd);
        assert_non_null(r);
        assert_null(strstr(r, "\"warning\""));

        /* A kept call whose client leaves is reported gone. */
        assert_int_equal(send(fd, "{\"method\":\"io.corral.Manager.Wait\",\"parameters\":{}}", 52, 0), 52);
        for (int i = 0; i < 100 && !t.kept; i++)
                (void) sd_event_run(e, 10 * 1000);
        assert_non_null(t.kept);
        close(fd);
        for (int i = 0; i < 100 && t.gone == 0; i++)
                (void) sd_event_run(e, 10 * 1000);
        assert_int_equal(t.gone, 1);
        assert_int_equal(server_n_connections(s), 0);
        server_free(s);
}

/* One user gets connections_per_user; the next is refused by name. Root is exempt, so
 * the client side is a child that drops to nobody when the test runs as root. */
static void test_connection_cap(void **state) {
        Tree *tree = *state;
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        Server *s = NULL;
        Test t = {};
        char path[128], result[256] = "";
        int pipefd[2], status;
        pid_t pid;
        ssize_t n;

        snprintf(path, sizeof path, "%s/sock", tree->dir);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(server_new(e, path, &ops, &t, &s), 0);
        server_set_limits(s, &(ServerLimits) { .connections_per_user = 2, .connection_output = 1U << 20 });
        assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);

        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                int fds[3];
                char buf[4096], out[256];
                size_t o = 0;

                if (getuid() == 0 && (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
                                      setresuid(65534, 65534, 65534) < 0))
                        _exit(2);
                for (int i = 0; i < 3; i++)
                        fds[i] = client(path);
                for (int i = 0; i < 3; i++) {
                        ssize_t k;
                        (void) send(fds[i], GET_INFO, sizeof GET_INFO, MSG_NOSIGNAL);
                        k = recv(fds[i], buf, sizeof buf - 1, 0);
                        buf[k > 0 ? k : 0] = 0;
                        o += (size_t) snprintf(out + o, sizeof out - o, "%s;",
                                               strstr(buf, "TooManyConnections") ? "refused"
                                               : strstr(buf, "\"uid\"")          ? "served"
                                                                                 : "nothing");
                }
                (void) write(pipefd[1], out, strlen(out));
                _exit(0);
        }
        close(pipefd[1]);
        for (int i = 0; i < 1000; i++) {
                struct pollfd p = { .fd = pipefd[0], .events = POLLIN };
                (void) sd_event_run(e, 5 * 1000);
                server_flush(s);
                if (poll(&p, 1, 0) > 0)
                        break;
        }
        n = read(pipefd[0], result, sizeof result - 1);
        assert_true(n > 0);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_string_equal(result, "served;served;refused;");
        close(pipefd[0]);
        server_free(s);
}

static int setup(void **state) {
        int r = tree_setup_prefix(state, "corral-server");
        /* nobody must reach the socket in the child */
        (void) chmod(((Tree *) *state)->dir, 0755);
        return r;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_framing, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_connection_cap, setup, tree_teardown),
        };
        signal(SIGPIPE, SIG_IGN);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
